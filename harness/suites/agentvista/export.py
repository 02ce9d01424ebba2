"""A scored AgentVista run in the official output layout, so the official tooling and habits apply.

``OUT/<question_id>/`` holds ``traj.jsonl`` (one record per model turn, ``turn_idx`` and
``text_output`` with ``[Calling tools: NAME]`` as the official runner writes it, then one per tool
result), ``metrics.json`` (``accuracy_score``, ``trajectory_score``, ``trajectory_analysis``) and
the images as JPEGs (``original_image.jpg``, ``original_image_K.jpg``, ``tool_image_N.jpg``);
``OUT/results.jsonl`` has one official result record per episode and ``OUT/summary_metrics.json``
the official summary (``total_samples``, ``overall_accuracy_score``, ``average_turns_per_sample``).
Accuracy comes from ``scores.json``: run ``pixelbox score`` first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pixelbox.harness.export.layout import ExportedEpisode


def export_run(run_dir: str | Path, out: str | Path) -> list[ExportedEpisode]:
    """Write every scored episode of ``run_dir`` under ``out``; returns where each went."""
    from pixelbox.harness.scoring.run import read_scores
    from pixelbox.harness.traces.episode import read_episode
    from pixelbox.harness.traces.store import find_traces

    root, target = Path(run_dir), Path(out)
    scores = {r["score"]["task_id"]: r["score"] for r in read_scores(root)["episodes"]}
    exported, results = [], []
    for path in find_traces(root):
        episode = read_episode(path)
        score = scores.get(episode.task_id)
        directory = target / episode.task_id
        directory.mkdir(parents=True, exist_ok=True)
        turns = _trajectory(episode)
        (directory / "traj.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in turns))
        accuracy = float(((score or {}).get("metrics") or {}).get("accuracy") or 0.0)
        analysis = ((score or {}).get("judge") or {}).get("explanation") or ""
        metrics = {"accuracy_score": accuracy, "trajectory_score": None, "trajectory_analysis": analysis}
        (directory / "metrics.json").write_text(json.dumps(metrics, indent=4))
        _images(root, episode, directory)
        results.append(_result(episode, score, accuracy, analysis))
        finished = episode.end is not None
        exported.append(ExportedEpisode(episode.task_id, episode.mode, episode.model, directory, finished))
    target.mkdir(parents=True, exist_ok=True)
    (target / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    (target / "summary_metrics.json").write_text(json.dumps(summary_metrics(results), indent=2))
    return exported


def summary_metrics(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The official summary: sample count, mean accuracy, mean number of assistant messages."""
    if not results:
        return {}
    n = len(results)
    turns = [sum(1 for m in r["conversation_history"] if m.get("role") == "assistant") for r in results]
    return {
        "total_samples": n,
        "overall_accuracy_score": round(sum(r["accuracy_score"] for r in results) / n, 4),
        "average_turns_per_sample": round(sum(turns) / n, 2),
    }


def _trajectory(episode: Any) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    turn_index = -1
    for record in episode.records:
        if record.get("kind") == "turn":
            turn_index += 1
            text = str(record.get("text") or "")
            names = [c.get("name") for c in (record.get("tool_calls") or [])[:1]]
            if names:
                text = "\n\n".join(p for p in (text.strip(), f"\n[Calling tools: {', '.join(map(str, names))}]") if p)
            records.append({"turn_idx": turn_index, "text_output": text})
        elif record.get("kind") == "observation":
            records.append({"turn_idx": turn_index, "tool_result": record.get("shown")})
    return records


def _result(episode: Any, score: dict[str, Any] | None, accuracy: float, analysis: str) -> dict[str, Any]:
    task = episode.task
    history: list[dict[str, Any]] = [{"role": "user", "content": str(task.get("question") or "")}]
    for record in episode.records:
        if record.get("kind") == "turn":
            history.append({"role": "assistant", "content": str(record.get("text") or "")})
        elif record.get("kind") == "observation":
            history.append({"role": "user", "content": str(record.get("shown") or "")})
    end = episode.end or {}
    return {
        "question_id": episode.task_id,
        "prompt": task.get("question"),
        "final_answer": end.get("answer"),
        "ground_truth": task.get("solution"),
        "conversation_history": history,
        "accuracy_score": accuracy,
        "trajectory_text": (score or {}).get("prediction", ""),
        "trajectory_score": None,
        "trajectory_analysis": analysis,
    }


def _images(root: Path, episode: Any, directory: Path) -> None:
    from PIL import Image

    from pixelbox.harness.suites.agentvista.images import input_names

    prepared = [Path(p) for p in episode.task.get("prepared_images") or []]
    named = dict(zip(input_names(len(prepared)), prepared, strict=True))
    for record in episode.records:
        for image in record.get("images") or [] if record.get("kind") == "observation" else []:
            named[str(image["name"])] = root / str(image["stored"])
    for name, source in named.items():
        if source.is_file():
            with Image.open(source) as image:
                image.convert("RGB").save(directory / f"{name}.jpg", quality=95)
