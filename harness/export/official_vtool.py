"""The official evaluator's tool-check verdicts, recomputed from an exported episode, for comparison.

A reading of the published checkpoint semantics (our own code, no API): for each visual
checkpoint with a ``code_check``, in task order,

1. the verifier: ``verify_<name>_ast`` becomes ``require_op:<primitive>`` (the first of crop, rotate,
   resize, enhance, flip inside the name); ``require_op:OP`` passes on the *first* entry whose
   ``tool_name`` or ``arguments.op`` is OP, whether or not an earlier checkpoint used it;
   ``require_images:N`` counts ``transformed_image_*`` files in ``tool_images/``;
2. if that fails, the first *unused* entry of the verifier's primitive (one-to-one);
3. then the first unused entry named in ``tools``.

Entries with ``output.declared_only`` are skipped. Ordering constraints do not affect V. We use it
to list where our V_tool differs (docs/scoring.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelbox.harness.scoring.requirements import PRIMITIVES


@dataclass(frozen=True)
class OfficialVerdict:
    """The official tool-check outcome of one checkpoint and the entry index that decided it."""

    checkpoint_id: str
    passed: bool
    hit_index: int | None
    how: str


def official_tool_verdicts(
    task: dict[str, Any], entries: list[dict[str, Any]], tool_images: Path
) -> list[OfficialVerdict]:
    """Tool-check verdicts of every V checkpoint with a ``code_check``, in task order."""
    used: set[int] = set()
    verdicts = []
    for checkpoint in (task.get("process_evaluation") or {}).get("checkpoints") or []:
        if checkpoint.get("axis") != "V" or "answer_check" in checkpoint or "code_check" not in checkpoint:
            continue
        verdict = _one(checkpoint, entries, tool_images, used)
        if verdict.hit_index is not None:
            used.add(verdict.hit_index)
        verdicts.append(verdict)
    return verdicts


def verdicts_for_export(task_dir: str | Path) -> list[OfficialVerdict]:
    """Verdicts for one exported ``{mode}/{model}/{task_id}/`` directory."""
    folder = Path(task_dir)
    task = json.loads((folder / "task.json").read_text(encoding="utf-8"))
    entries = json.loads((folder / "tool_use_list.json").read_text(encoding="utf-8"))
    return official_tool_verdicts(task, entries, folder / "tool_images")


def _one(checkpoint: dict[str, Any], entries: list[dict[str, Any]], images: Path, used: set[int]) -> OfficialVerdict:
    cid = str(checkpoint.get("id"))
    verifier = str((checkpoint.get("code_check") or {}).get("verifier") or "").strip()
    primitive = next((p for p in ("crop", "rotate", "flip", "resize", "enhance") if p in verifier.lower()), None)
    passed, hit = _verifier(verifier, entries, images)
    if passed:
        return OfficialVerdict(cid, True, hit, f"verifier {verifier}")
    if primitive is not None:
        found = _first(entries, {primitive}, used, op_only=True)
        if found is not None:
            return OfficialVerdict(cid, True, found, f"first unused {primitive}")
    tools = {str(t).lower() for t in checkpoint.get("tools") or []}
    found = _first(entries, tools, used, op_only=False) if tools else None
    if found is not None:
        return OfficialVerdict(cid, True, found, f"first unused of tools {sorted(tools)}")
    return OfficialVerdict(cid, False, None, "no matching entry")


def _verifier(verifier: str, entries: list[dict[str, Any]], images: Path) -> tuple[bool, int | None]:
    if not verifier:
        return True, None
    mapped = next((p for p in PRIMITIVES if p in verifier.lower()), None)
    if mapped and verifier.startswith("verify_") and verifier.endswith("_ast"):
        verifier = f"require_op:{mapped}"
    if verifier.startswith("require_op:"):
        hit = _first(entries, {verifier.split(":", 1)[1].strip().lower()}, set(), op_only=True)
        return hit is not None, hit
    if verifier.startswith("require_images"):
        parts = verifier.split(":")
        wanted = int(parts[1]) if len(parts) > 1 and parts[1].strip().isdigit() else 1
        found = len(list(images.glob("transformed_image_*.png"))) if images.is_dir() else 0
        return found >= wanted, 0 if found >= wanted else None
    return False, None


def _names(entry: dict[str, Any], op_only: bool) -> set[str]:
    arguments = entry.get("arguments") or {}
    if op_only:
        return {str(entry.get("tool_name") or "").lower(), str(arguments.get("op") or "").lower()} - {""}
    keys = [entry.get("tool_name"), entry.get("raw_tool_name"), arguments.get("tool_name"), arguments.get("op")]
    keys.append(arguments.get("raw_tool_name"))
    return {str(k).strip().lower() for k in keys if k}


def _first(entries: list[dict[str, Any]], wanted: set[str], used: set[int], *, op_only: bool) -> int | None:
    for entry in entries:
        index = int(entry.get("index", 0))
        if index in used or (entry.get("output") or {}).get("declared_only"):
            continue
        if _names(entry, op_only) & wanted:
            return index
    return None


def compare_run(scores: dict[str, Any], export_root: str | Path) -> list[dict[str, Any]]:
    """Our V_tool verdict next to the official one for every checkpoint with a ``code_check``.

    ``scores`` is ``scores.json`` of the run; ``export_root`` the directory ``pixelbox export`` wrote.
    Rows: ``task_id``, ``mode``, ``checkpoint``, ``ours``, ``official``, ``official_how``, ``our_reason``.
    """
    rows = []
    for record in scores.get("episodes") or []:
        score = record["score"]
        folder = Path(export_root) / score["mode"] / _component(score["model"]) / _component(score["task_id"])
        if not (folder / "tool_use_list.json").is_file():
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


def _component(text: str) -> str:
    """The path component the exporter uses for a model or task id."""
    from pixelbox.harness.export.layout import path_component

    return path_component(text)
