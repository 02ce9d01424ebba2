"""Scoring a VisualToolBench run from its traces: the official figures, and our process figures beside them.

Official (``run_judge_single_turn.py`` / ``run_judge_multi_turn.py``): per task ARS and APR
(:mod:`.rubrics`), each turn judged on its own question, golden answer and the model's answer for
that turn; the summary's ``overall_accuracy`` (mean APR), ``overall_score`` (mean ARS),
``domain_results`` (``prompt_category``, STEM subjects merged) and ``eval_focus_results``.

Ours, from the executed-operation traces no official harness has: image-processing calls,
executed visual operations, and whether the model was shown an image it produced by cropping the
input before it answered (``cropped``; lineage gives the region of the input an artifact shows), and
how often a code call failed on a name an earlier call had defined (``lost_state``: the model expected
the interpreter to remember what the official tool forgets).

``scores.json`` has the shared layout (``summary``, ``episodes`` of ``{score, episode}``), so
``pixelbox report`` and ``pixelbox compare`` show VisualToolBench runs beside other suites'.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from pixelbox.harness.scoring.columns import Column
from pixelbox.harness.traces.store import find_traces, read_trace

from .rubrics import RubricJudge, Verdict, build_rubric_judge, task_scores
from .tasks import VtbTask
from .tools import CODE_TOOLS, IMAGE_TOOL

SCORES_FILE = "scores.json"
CACHE_DIR = "judge_cache"
VISUAL_OPS_SKIPPED = frozenset({"io"})
CROPPED_AREA = 0.9
"""An artifact showing less than this share of the input counts as a crop of it."""

COLUMNS = (
    Column("apr", "APR", "rate", "higher", "average pass rate: no rubric of weight >= 4 unmet (official)"),
    Column("ars", "ARS", "rate", "higher", "average rubric score: met weight / total weight (official)"),
    Column("cropped", "cropped", "rate", "higher", "answered after seeing a crop of the input it made (ours)"),
    Column("image_calls", "image calls", "number", None, "python_image_processing calls (ours)"),
    Column("ops", "visual ops", "number", None, "visual operations that executed (ours, from the trace)"),
    Column(
        "lost_state",
        "lost state",
        "number",
        "lower",
        "code calls that failed on a name an earlier call defined: the model expected state to persist (ours)",
    ),
)


class VtbScoringError(ValueError):
    """The run directory cannot be scored as VisualToolBench; the message says why and what to run."""


def score_vtb_run(
    run_dir: str | Path,
    judges: Sequence[str],
    *,
    progress: bool = True,
    options: Any = None,
    include_infrastructure: bool = False,
) -> dict[str, Any]:
    """Judge every episode's answers with the first judge spec; writes and returns ``scores.json``."""
    from pixelbox.harness.suites.shared import score_each, write_scores

    root = Path(run_dir)
    if not judges:
        raise VtbScoringError("VisualToolBench needs a rubric judge: --judge openai:MODEL[@BASE_URL] or recorded:FILE")
    judge = build_rubric_judge(judges[0], root / CACHE_DIR)
    traces = find_traces(root)
    if not traces:
        raise VtbScoringError(
            f"no episode traces under {root}; is this a `pixelbox run --suite visualtoolbench` output?"
        )
    records = score_each(traces, lambda path: score_episode(path, judge), progress)
    official = official_summary([r["score"] for r in records])
    return write_scores(root, "visualtoolbench", list(judges), records, include_infrastructure, official=official)


def score_episode(path: Path, judge: RubricJudge) -> dict[str, Any]:
    """One episode's score record and its report view."""
    from pixelbox.harness.scoring.from_trace import DAMAGED
    from pixelbox.harness.scoring.view import episode_to_dict

    trace = read_trace(path)
    start = trace.of_kind("episode_start")[0]
    ends = trace.of_kind("episode_end")
    task = VtbTask.from_dict(start["task"])
    view = _view_or_damaged(path)
    end = ends[-1] if ends else {}
    answers = list(end.get("turn_answers") or [])
    verdicts: list[Verdict] = []
    damaged = view.termination == DAMAGED
    if view.infrastructure is None and not damaged:
        for number, turn in enumerate(task.turns):
            answer = answers[number] if number < len(answers) else ""
            for rubric in turn.rubrics:
                verdicts.append(judge.verdict(task.task_id, number, rubric, turn.prompt, turn.golden_answer, answer))
    ars, apr = task_scores(verdicts) if verdicts else (None, None)
    if damaged:  # a failure of the episode, scored as such (never left out)
        answers, ars, apr = [], 0.0, 0.0
    process = {**process_figures(view), "lost_state": lost_state(trace.records)}
    unjudged = [v.error for v in verdicts if v.error]
    score = {
        "episode_id": view.episode_id,
        "task_id": task.task_id,
        "mode": view.mode,
        "model": view.model,
        "suite": "visualtoolbench",
        "category": task.domain,
        "eval_focus": task.eval_focus,
        "turncase": task.turncase,
        "level": None,
        "metrics": {"apr": apr, "ars": ars, **process},
        "infrastructure": view.infrastructure,
        "tamper": [{"interaction": i.index, "notices": list(i.notices)} for i in view.tampered_interactions],
        "failure": None,
        "judge": judge.judge_id,
        "unjudged": unjudged,
        "rubrics": [v.to_dict() for v in verdicts],
        "turn_answers": answers,
    }
    return {"score": score, "episode": episode_to_dict(view)}


def _view_or_damaged(path: Path) -> Any:
    """The episode's view; steps the reader cannot read (a kernel-made record of the wrong shape) make it
    a ``damaged_trace`` view, so the episode fails instead of stopping scoring of the whole run."""
    from pixelbox.harness.scoring.from_trace import damaged_episode, episode_from_trace
    from pixelbox.harness.scoring.view import EpisodeFormatError

    try:
        return episode_from_trace(path)
    except EpisodeFormatError as exc:
        damaged = damaged_episode(path, str(exc))
        if damaged is None:
            raise
        return damaged


def process_figures(view: Any) -> dict[str, Any]:
    """Image-processing calls, executed visual operations, and whether a crop of the input was seen."""
    image_calls = sum(1 for i in view.interactions if i.name == IMAGE_TOOL)
    ops = sum(1 for t in view.events if t.event.op not in VISUAL_OPS_SKIPPED and t.event.status == "ok")
    cropped = any(_is_crop(a.box_root) for a in view.artifacts)
    return {"image_calls": image_calls, "ops": ops, "cropped": 1.0 if cropped else 0.0}


_UNDEFINED = re.compile(r"name '([A-Za-z_][A-Za-z0-9_]*)' is not defined")


def lost_state(records: list[dict[str, Any]]) -> int:
    """Code calls that failed on a name an earlier call of the episode defined: the model expected the
    interpreter to remember it (each call starts fresh in VisualToolBench)."""
    codes: dict[str, str] = {}
    defined: set[str] = set()
    count = 0
    for record in records:
        if record.get("kind") == "action" and record.get("name") in CODE_TOOLS:
            codes[str(record.get("action_id"))] = str((record.get("arguments") or {}).get("code") or "")
        elif record.get("kind") == "observation" and str(record.get("action_id")) in codes:
            code = codes[str(record["action_id"])]
            error = (record.get("execution") or {}).get("error") or {}
            missing = _UNDEFINED.search(str(error.get("evalue") or "")) if error.get("ename") == "NameError" else None
            if missing and missing.group(1) in defined:
                count += 1
            defined |= _names_defined(code)
    return count


def _names_defined(code: str) -> set[str]:
    """Names a piece of code binds at its top level (assignments, imports, functions, classes, loops)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _is_crop(box: Any) -> bool:
    try:
        x1, y1, x2, y2 = (float(v) for v in box)
    except (TypeError, ValueError):
        return False
    return 0 < (x2 - x1) * (y2 - y1) < CROPPED_AREA * 1000 * 1000


def official_summary(scores: list[dict[str, Any]]) -> dict[str, Any]:
    """The official judge summary's figures over the scored tasks (infrastructure failures and unjudged
    tasks left out and counted)."""
    scored = [s for s in scores if s["metrics"].get("apr") is not None]

    def group(key: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for value in sorted({str(s.get(key) or "") for s in scored}):
            chosen = [s for s in scored if str(s.get(key) or "") == value]
            out[value] = {
                "accuracy": round(mean(s["metrics"]["apr"] for s in chosen), 4),
                "score": round(mean(s["metrics"]["ars"] for s in chosen), 4),
                "n": len(chosen),
            }
        return out

    return {
        "overall_accuracy": round(mean(s["metrics"]["apr"] for s in scored), 4) if scored else None,
        "overall_score": round(mean(s["metrics"]["ars"] for s in scored), 4) if scored else None,
        "total_examples": len(scored),
        "not_scored": len(scores) - len(scored),
        "domain_results": group("category"),
        "eval_focus_results": group("eval_focus"),
        "turncase_results": group("turncase"),
    }


def score_lines(scores: dict[str, Any], run_dir: str | Path) -> list[str]:
    """What ``pixelbox score`` prints: the official figures, then the shared tables."""
    from pixelbox.harness.scoring.report import to_markdown

    official = scores.get("official") or {}
    lines = [
        f"APR (overall_accuracy): {_pct(official.get('overall_accuracy'))}   "
        f"ARS (overall_score): {_pct(official.get('overall_score'))}   "
        f"tasks scored: {official.get('total_examples', 0)} (not scored: {official.get('not_scored', 0)})"
    ]
    for title, key in (
        ("by domain", "domain_results"),
        ("by eval focus", "eval_focus_results"),
        ("by turn case", "turncase_results"),
    ):
        rows = official.get(key) or {}
        if rows:
            lines.append(f"{title}:")
            lines += [
                f"  {name or '-'}: APR {_pct(r['accuracy'])}, ARS {_pct(r['score'])} (n={r['n']})"
                for name, r in rows.items()
            ]
    lines.append(to_markdown(scores["summary"]).removesuffix("\n"))
    lines.append(f"scores: {str(run_dir).rstrip('/')}/{SCORES_FILE}")
    return lines


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * float(value):.1f}%"


def add_official_figures(root: Path, paths: dict[str, str]) -> None:
    """Put the official summary (APR/ARS overall, per domain, eval focus and turn case) into report.json and
    report.md beside the shared tables."""
    official = json.loads((root / SCORES_FILE).read_text(encoding="utf-8")).get("official") or {}
    report_json = Path(paths["json"])
    report = json.loads(report_json.read_text(encoding="utf-8"))
    report_json.write_text(json.dumps({**report, "official": official}, indent=1), encoding="utf-8")
    lines = ["", "## VisualToolBench figures as the official judge script reports them", ""]
    lines.append(
        f"APR (overall_accuracy) {_pct(official.get('overall_accuracy'))}, ARS (overall_score) "
        f"{_pct(official.get('overall_score'))}, over {official.get('total_examples', 0)} tasks "
        f"({official.get('not_scored', 0)} not scored)."
    )
    for title, key in (
        ("domain", "domain_results"),
        ("eval focus", "eval_focus_results"),
        ("turn case", "turncase_results"),
    ):
        rows = official.get(key) or {}
        if rows:
            lines += ["", f"| {title} | n | APR | ARS |", "|---|---|---|---|"]
            lines += [
                f"| {name or '-'} | {r['n']} | {_pct(r['accuracy'])} | {_pct(r['score'])} |" for name, r in rows.items()
            ]
    markdown = Path(paths["markdown"])
    markdown.write_text(
        markdown.read_text(encoding="utf-8").rstrip("\n") + "\n" + "\n".join(lines) + "\n", encoding="utf-8"
    )
