"""Run-level entry points for the CLI: ``score_run`` (judges every episode) and ``write_report``.

``score_run`` writes ``RUN_DIR/scores.json``: the summary, and per episode its score and a
record of the episode itself, so ``write_report`` needs nothing else (no traces, no judges).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from .judges import JudgeCache, build_judges, parse_endpoint
from .judges.chat import ChatEndpoint
from .regions import expected_regions
from .report import summarize
from .score import ScoringOptions, score_episode
from .view import EpisodeFormatError, EpisodeView, episode_to_dict

SCORES_FILE = "scores.json"
CACHE_DIR = "judge_cache"
REPORT_DIR = "report"


class RunDirError(ValueError):
    """The run directory lacks what scoring or reporting needs; the message says what to run first."""


def score_run(
    run_dir: str | Path,
    judges: Sequence[str],
    episodes: Sequence[EpisodeView] | None = None,
    progress: bool = True,
    options: ScoringOptions | None = None,
    include_infrastructure: bool = False,
) -> dict[str, Any]:
    """Score every episode of a run with the given ``--judge`` specs; writes and returns ``scores.json``.

    ``episodes`` defaults to the harness traces found in ``run_dir``. The first ``openai:`` judge
    also judges search checkpoints. Judge answers are cached in ``run_dir/judge_cache``.
    Infrastructure episodes are scored but left out of the summary rows unless ``include_infrastructure``
    (the choice is stored, and ``write_report`` follows it).
    """
    options = options or ScoringOptions()
    root = Path(run_dir)
    views = list(episodes) if episodes is not None else load_episodes(root)
    cache = JudgeCache(root / CACHE_DIR)
    built = build_judges(list(judges), root / CACHE_DIR)
    search_endpoint = _search_endpoint(judges)
    records = []
    for view in tqdm(views, desc="judging episodes", unit="episode", disable=not progress):
        score = score_episode(view, built, search_endpoint, cache, options)
        shown = {**episode_to_dict(view), "expected_regions": expected_regions(view.task.checkpoints)}
        records.append({"score": score.to_dict(), "episode": shown})
    result = {
        "run_dir": str(root),
        "judges": list(judges),
        "options": {**asdict(options), "include_infrastructure": include_infrastructure},
        "summary": summarize([r["score"] for r in records], include_infrastructure),
        "episodes": records,
    }
    (root / SCORES_FILE).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return result


def write_report(run_dir: str | Path, include_infrastructure: bool | None = None) -> dict[str, str]:
    """Write ``report.json``, ``report.md`` and the HTML report from ``scores.json``; returns their paths.

    ``include_infrastructure`` None follows the choice stored by ``score_run``.
    """
    from .html import write_html
    from .markdown import report_markdown
    from .report_charts import run_charts
    from .runmeta import run_meta

    root = Path(run_dir)
    scores = read_scores(root)
    if include_infrastructure is None:
        include_infrastructure = bool((scores.get("options") or {}).get("include_infrastructure", False))
    summary = summarize([r["score"] for r in scores["episodes"]], include_infrastructure)
    meta = run_meta(scores["episodes"], scores["judges"])
    report_json = root / "report.json"
    report = {"judges": scores["judges"], "meta": meta, **summary}
    report_json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    try:
        index = write_html(root / REPORT_DIR, summary, scores["episodes"], scores["judges"])
        charts = run_charts(summary, scores["episodes"])
        report_md = root / "report.md"
        report_md.write_text(
            report_markdown(summary, scores["episodes"], charts, meta) + _semantics_section(root), encoding="utf-8"
        )
    except (KeyError, TypeError) as exc:
        raise RunDirError(
            f"{root / SCORES_FILE}: an episode record lacks {exc} or has the wrong type; "
            f"re-create it with `pixelbox score {root}`"
        ) from None
    return {"json": str(report_json), "markdown": str(report_md), "html": str(index)}


def _semantics_section(root: Path) -> str:
    """The verified-vs-official section of report.md, when ``pixelbox score`` wrote ``semantics.json``."""
    path = root / "semantics.json"
    if not path.is_file():
        return ""
    from pixelbox.harness.export.semantics import semantics_markdown

    data = json.loads(path.read_text(encoding="utf-8"))
    body = semantics_markdown(data.get("episodes") or [], data.get("disagreements") or [])
    return "\n## Verified and official semantics\n\n" + body


def read_scores(root: Path) -> dict[str, Any]:
    """``scores.json`` of a run, checked for what reports read; a RunDirError says what is wrong and what to do."""
    path = root / SCORES_FILE
    redo = f"re-create it with `pixelbox score {root}`"
    if not path.is_file():
        raise RunDirError(f"{path} does not exist; run `pixelbox score {root}` first")
    try:
        scores = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise RunDirError(f"{path} is not UTF-8 text ({exc}); {redo}") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise RunDirError(f"{path} is not valid JSON ({where}); {redo}") from None
    if not isinstance(scores, dict):
        raise RunDirError(f"{path} must hold a JSON object, found {type(scores).__name__}; {redo}")
    missing = [key for key in ("judges", "episodes") if key not in scores]
    if missing:
        raise RunDirError(f"{path} has no {' or '.join(repr(k) for k in missing)}; {redo}")
    episodes = scores["episodes"]
    if not isinstance(episodes, list):
        raise RunDirError(f"{path}: 'episodes' must be a list, found {type(episodes).__name__}; {redo}")
    for n, record in enumerate(episodes):
        problem = _record_problem(record)
        if problem:
            raise RunDirError(f"{path}: episodes[{n}] {problem}; {redo}")
    return scores


RECORD_KEYS = ("episode_id", "task_id", "mode", "model")
"""What every scored episode has, whatever its suite; a suite that declares ``metrics`` needs no more."""
SCORE_KEYS = (
    *RECORD_KEYS,
    "level",
    "acc",
    "acc_reason",
    "s",
    "v",
    "v_tool",
    "v_true",
    "calls",
    "overthink",
    "checkpoints",
)


def _record_problem(record: Any) -> str:
    if not isinstance(record, dict) or not isinstance(record.get("score"), dict):
        return "has no 'score' object"
    if not isinstance(record.get("episode"), dict):
        return "has no 'episode' object"
    score = record["score"]
    needed = RECORD_KEYS if isinstance(score.get("metrics"), dict) else SCORE_KEYS
    missing = [k for k in needed if k not in score]
    return f"'score' lacks {missing}" if missing else ""


def load_episodes(run_dir: Path) -> list[EpisodeView]:
    """Every episode traced under ``run_dir`` (through ``episode_from_trace``)."""
    from pixelbox.harness.traces.store import find_traces

    traces = find_traces(run_dir)
    if not traces:
        raise RunDirError(f"no episode traces under {run_dir}; is this a `pixelbox run` output directory?")
    return [_episode_or_failure(path) for path in traces]


def _episode_or_failure(path: Path) -> EpisodeView:
    """One episode's view; steps scoring cannot read are that episode's failure, never the run's.

    Everything in an episode's steps came through its kernel, so a step that breaks the reader
    (a forged record of the wrong shape, say) is scored as the episode's own failure
    (``damaged_trace``, no answer), neither left out nor allowed to stop scoring of the other
    episodes. A trace the host itself wrote badly (a damaged line, no start record) still stops
    with a message saying which file and what to do.
    """
    from .from_trace import damaged_episode, episode_from_trace

    try:
        return episode_from_trace(path)
    except EpisodeFormatError as exc:
        failure = damaged_episode(path, str(exc))
        if failure is None:
            raise
        return failure


def _search_endpoint(judges: Sequence[str]) -> ChatEndpoint | None:
    spec = next((j for j in judges if j.startswith("openai:")), None)
    return parse_endpoint(spec) if spec else None
