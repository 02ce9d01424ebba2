"""``pixelbox export --suite agent-x``: a run as the official prediction file the official evaluator reads.

``run_eval_gpt_as_judge.py --pred_path`` takes a JSON list of one-key objects,
``[{"<key>": {"query", "filename", "reasoning_steps", "final_answer"}}, ...]``, as the official
inference scripts write it. Each episode's prediction (``episode_end.totals.prediction``) becomes one
entry; executed steps are given the official step keys (``task``, ``tool_used``, ``tool_output``,
``thought``, plus ``tool_input``). One file per mode and model: ``OUT/{mode}_{model}_predictions.json``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pixelbox.harness.export.layout import ExportedEpisode


def export_run(run_dir: str | Path, out: str | Path) -> list[ExportedEpisode]:
    """Write the official prediction file(s) of ``run_dir`` under ``out``; returns each episode and its file."""
    from pixelbox.harness.export.layout import ExportedEpisode
    from pixelbox.harness.scoring.run import RunDirError
    from pixelbox.harness.suites.agent_x.scoring import official_steps
    from pixelbox.harness.traces.episode import read_episode
    from pixelbox.harness.traces.store import find_traces

    traces = find_traces(Path(run_dir))
    if not traces:
        raise RunDirError(f"no episode traces under {run_dir}; is this a `pixelbox run --suite agent-x` directory?")
    files: dict[tuple[str, str], list[dict[str, Any]]] = {}
    finished: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for path in traces:
        episode = read_episode(path)
        prediction = ((episode.end or {}).get("totals") or {}).get("prediction") or {}
        entry = {
            "query": episode.task.get("query"),
            "filename": episode.task.get("file_path"),
            "reasoning_steps": official_steps(prediction.get("reasoning_steps", "")),
            "final_answer": prediction.get("final_answer") or {"value": "", "justification": ""},
        }
        files.setdefault((episode.mode, episode.model), []).append({episode.task_id: entry})
        finished.setdefault((episode.mode, episode.model), []).append((episode.task_id, episode.end is not None))
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for (mode, model), entries in sorted(files.items()):
        entries.sort(key=lambda e: _key_order(next(iter(e))))
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{mode}_{model}_predictions.json")
        (target / name).write_text(json.dumps(entries, indent=2), encoding="utf-8")
        written += [ExportedEpisode(t, mode, model, target / name, done) for t, done in finished[(mode, model)]]
    return written


def _key_order(key: str) -> tuple[int, str]:
    return (int(key), "") if key.isdigit() else (1 << 30, key)
