"""The official evaluator's tool-check verdicts, recomputed from an exported episode, for comparison.

The checks come from :mod:`.official_eval` (our exact reading of the official evaluator): every
checkpoint is walked in task order with one shared set of consumed entries, so search checkpoints
consume theirs (a ``google_lens_search`` hit is not available to a later visual fallback), and
``require_images:N`` counts only files named ``transformed_image_<digits>.png``. Without a search
judge, ``google_search`` checkpoints fail and consume nothing (the evaluator without a client).
We use it to list where our V_tool differs (docs/scoring.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelbox.harness.export.official_eval import SearchJudge, evaluate_run


@dataclass(frozen=True)
class OfficialVerdict:
    """The official tool-check outcome of one checkpoint and the entry index that decided it."""

    checkpoint_id: str
    passed: bool
    hit_index: int | None
    how: str


def _no_visual(question: str, image: Path) -> str:
    return ""


def official_tool_verdicts(
    task: dict[str, Any],
    entries: list[dict[str, Any]],
    tool_images: Path,
    search: SearchJudge | None = None,
) -> list[OfficialVerdict]:
    """Tool-check verdicts of every V checkpoint with a ``code_check``, in task order."""
    run = evaluate_run(task, Path(tool_images).parent, {}, "", entries, _no_visual, search)
    verdicts = []
    for cid, check in run.tool_checks.items():
        how = {"verifier": "verifier", "verifier_op": "first unused of the verifier's primitive"}
        how["tools_list"] = "first unused of tools"
        text = how.get(check.matched_by, check.matched_by) if check.passed else "no matching entry"
        verdicts.append(OfficialVerdict(cid, check.passed, check.hit_index, text))
    return verdicts


def verdicts_for_export(task_dir: str | Path, search: SearchJudge | None = None) -> list[OfficialVerdict]:
    """Verdicts for one exported run folder (``run_meta.task_file`` names the task, else ``task.json``)."""
    folder = Path(task_dir)
    task_path = folder / "task.json"
    meta_path = folder / "run_meta.json"
    if meta_path.is_file():
        named = json.loads(meta_path.read_text(encoding="utf-8")).get("task_file")
        if named and Path(named).is_file():
            task_path = Path(named)
    task = json.loads(task_path.read_text(encoding="utf-8"))
    entries = json.loads((folder / "tool_use_list.json").read_text(encoding="utf-8"))
    return official_tool_verdicts(task, entries, folder / "tool_images", search)


def exported_folders(export_root: str | Path) -> dict[tuple[str, str, str], Path]:
    """(mode, model, task id) -> the run folder ``pixelbox export`` wrote for it (read from each sidecar)."""
    found: dict[tuple[str, str, str], Path] = {}
    for sidecar in sorted(Path(export_root).glob("runs/*/*/*/pixelbox.json")):
        data = json.loads(sidecar.read_text(encoding="utf-8"))
        found[(str(data.get("mode")), str(data.get("model")), str(data.get("task_id")))] = sidecar.parent
    return found


def compare_run(scores: dict[str, Any], export_root: str | Path) -> list[dict[str, Any]]:
    """Our V_tool verdict next to the official one for every checkpoint with a ``code_check``.

    ``scores`` is ``scores.json`` of the run; ``export_root`` the directory ``pixelbox export`` wrote.
    Rows: ``task_id``, ``mode``, ``checkpoint``, ``ours``, ``official``, ``official_how``, ``our_reason``.
    """
    folders = exported_folders(export_root)
    rows = []
    for record in scores.get("episodes") or []:
        score = record["score"]
        folder = folders.get((score["mode"], score["model"], score["task_id"]))
        if folder is None or not (folder / "tool_use_list.json").is_file():
            continue
        ours = {c["checkpoint_id"]: c for c in score["checkpoints"]}
        for verdict in verdicts_for_export(folder):
            mine = ours.get(verdict.checkpoint_id) or {}
            rows.append(
                {
                    "task_id": score["task_id"],
                    "mode": score["mode"],
                    "checkpoint": verdict.checkpoint_id,
                    "ours": mine.get("tool"),
                    "official": verdict.passed,
                    "official_how": verdict.how,
                    "our_reason": "; ".join(
                        str(x)
                        for x in [
                            (mine.get("evidence") or {}).get("reason"),
                            *((mine.get("evidence") or {}).get("order") or []),
                        ]
                        if x
                    ),
                }
            )
    return rows
