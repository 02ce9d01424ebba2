"""``pixelbox score --semantics official``: the official evaluator's verdicts and summary, from our export.

The run is exported (:mod:`.layout`) to ``RUN/official/runs/{general|atomic}/{model}/``; every run
folder there is scored with :func:`~pixelbox.harness.export.official_eval.evaluate_run`, reading the
files the official evaluator reads (``run_meta.json``, the task file it names, ``tool_use_list.json``,
``model_answer.txt``, ``tool_images/``), and each mode and model gets the summary file the official
``evaluation/eval_runs_search.py`` writes, ``RUN/official/runs/scores/{mode}_{model}_scored.json``:
the same keys and figures (final-answer accuracy, average S and V, penalties, tool usage, perfect
cases, checkpoint pass rates at 50 and 80 %, per level, the overthink analysis). Each run folder gets
``result_scored.json`` as the official evaluator writes it.

Judges: visual checks and search checkpoints are asked of an OpenAI-compatible endpoint (the
``--judge openai:MODEL[@URL]`` given); without one every judge call fails, as the official
evaluator's do when its API is unreachable (visual checks and search checkpoints fail).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pixelbox.harness.export.layout import export_run
from pixelbox.harness.export.official_eval import OfficialRun, evaluate_run
from pixelbox.harness.scoring.judges.chat import ChatEndpoint, JudgeEndpointError

OFFICIAL_DIR = "official"
VISUAL_SYSTEM = "Answer the question about the image briefly and precisely, from what the image shows."


class OfficialJudge:
    """The visual and search judge calls of the official semantics, through one chat endpoint (or none)."""

    def __init__(self, endpoint: ChatEndpoint | None) -> None:
        self.endpoint = endpoint
        self.errors = 0

    def visual(self, question: str, image: Path) -> str:
        """The judge's answer about one image; an error text when the call fails (the check then fails)."""
        if self.endpoint is None:
            self.errors += 1
            return "Error: no judge endpoint"
        suffix = image.suffix.lower()
        mime = "image/png" if suffix == ".png" else f"image/{suffix[1:]}"
        url = f"data:{mime};base64,{base64.b64encode(image.read_bytes()).decode()}"
        content = [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": question}]
        try:
            return self.endpoint.complete(
                [{"role": "system", "content": VISUAL_SYSTEM}, {"role": "user", "content": content}], 100
            )
        except JudgeEndpointError as error:
            self.errors += 1
            return f"Error: {error}"

    def search(self, description: str, queries: Sequence[str], contexts: Sequence[str]) -> bool:
        """Whether the searches found what the checkpoint describes (PASS on the reply's first line)."""
        if self.endpoint is None:
            self.errors += 1
            return False
        asked = "\n".join(f"{i}. {q}" for i, q in enumerate(queries, start=1))
        found = "\n".join(f"[{i}] {c[:500]}" for i, c in enumerate(contexts[:3], start=1))
        prompt = (
            "Decide whether a model's web searches found the information a checkpoint asks for.\n"
            f"Checkpoint: {description}\n\nQueries:\n{asked}\n\nSearch results:\n{found}\n"
            "Answer with PASS or FAIL on the first line, then one line of reasons."
        )
        try:
            reply = self.endpoint.complete([{"role": "user", "content": prompt}], 300)
        except JudgeEndpointError:
            self.errors += 1
            return False
        return "PASS" in (reply.upper().split("\n")[0] if reply else "")


def run_folders(mode_dir: Path) -> list[Path]:
    """The run folders the official evaluator scores in ``runs/{mode}/{model}``, in its order."""
    return sorted(
        p for p in mode_dir.iterdir() if p.is_dir() and ((p / "run_meta.json").exists() or (p / "orig.png").exists())
    )


def score_folder(folder: Path, judge: OfficialJudge) -> dict[str, Any]:
    """One run folder's result record as the official evaluator builds it (``eval`` keeps PQS and R)."""
    if not (folder / "run_meta.json").exists():
        return _incomplete(folder)
    meta = json.loads((folder / "run_meta.json").read_text(encoding="utf-8"))
    task = json.loads(Path(meta["task_file"]).read_text(encoding="utf-8"))
    entries_path = folder / "tool_use_list.json"
    entries = json.loads(entries_path.read_text(encoding="utf-8")) if entries_path.exists() else []
    answer_path = folder / "model_answer.txt"
    answer = answer_path.read_text(encoding="utf-8").strip() if answer_path.exists() else ""
    run = evaluate_run(task, folder, meta, answer, entries, judge.visual, judge.search)
    golden = (task.get("golden_answer") or {}).get("value", "")
    record = {"run_dir": str(folder), **meta, "model_answer": answer, "golden_answer": golden, "eval": _eval(run)}
    stored = {
        **record,
        "eval": {**record["eval"], "scores": {k: v for k, v in run.scores.items() if k not in ("PQS", "R")}},
    }
    (folder / "result_scored.json").write_text(json.dumps(stored, ensure_ascii=False, indent=2), encoding="utf-8")
    return record


def _eval(run: OfficialRun) -> dict[str, Any]:
    return {
        "checkpoint_results": run.checkpoint_results,
        "scores": dict(run.scores),
        "efficiency": dict(run.efficiency),
        "final_answer_accuracy": run.final_answer,
    }


def _incomplete(folder: Path) -> dict[str, Any]:
    scores = {"S": 0.0, "V": 0.0, "R": 0.0, "base": 0.0, "penalty": 0.0, "PQS": 0.0}
    failed = {
        "checkpoint_results": {},
        "ordering_results": [],
        "scores": scores,
        "efficiency": {"effective_tool_calls": 0, "reference_tool_calls": 0, "excess_calls": 0},
        "final_answer_accuracy": {"correct": False, "model_answer": "", "golden_answer": "", "match_type": "unknown"},
        "incomplete_run": True,
        "failure_reason": "Missing run_meta.json - incomplete execution",
    }
    record = {
        "run_dir": str(folder),
        "task_file": "unknown",
        "model_name": "unknown",
        "model_answer": "",
        "golden_answer": "",
        "eval": failed,
        "incomplete_run": True,
    }
    (folder / "result_scored.json").write_text(json.dumps(record, ensure_ascii=False, indent=2), encoding="utf-8")
    return record


def score_export(export_root: Path, judge: OfficialJudge) -> dict[str, dict[str, Any]]:
    """Score every ``runs/{general|atomic}/{model}`` under ``export_root``; write and return the summaries."""
    from pixelbox.harness.export.official_summary import summary_file

    written: dict[str, dict[str, Any]] = {}
    for mode in ("general", "atomic"):
        for model_dir in sorted(p for p in (export_root / "runs" / mode).glob("*") if p.is_dir()):
            results = [score_folder(folder, judge) for folder in run_folders(model_dir)]
            data = summary_file(mode, model_dir.name, results)
            out = export_root / "runs" / "scores" / f"{mode}_{model_dir.name}_scored.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(data, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
            written[str(out)] = data
    return written


def official_score_run(
    run_dir: str | Path, endpoint: ChatEndpoint | None
) -> tuple[Path, dict[str, dict[str, Any]], int]:
    """Export ``run_dir`` to ``run_dir/official`` and score it officially; (export root, summaries, judge errors)."""
    root = Path(run_dir) / OFFICIAL_DIR
    export_run(run_dir, root)
    judge = OfficialJudge(endpoint)
    return root, score_export(root, judge), judge.errors
