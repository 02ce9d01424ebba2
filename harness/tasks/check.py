"""``pixelbox tasks check``: every deviation of an Agentic-MME task set from the documented format.

The loader takes what the official code takes and says what it normalized; this check is the
strict reading: the same notes, plus what the official evaluator would fail on or ignore (an unknown
checkpoint axis, a visual checkpoint with nothing to check, an ordering constraint naming an unknown
checkpoint), plus the files no loader can use (``unusable``: not JSON, no image the official lookup
finds, checkpoints that are not objects with ids).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pixelbox.harness.tasks.loader import TaskSourceError, read_official_task
from pixelbox.harness.tasks.official import TaskNote, read_document, task_files
from pixelbox.harness.tasks.schema import ValidationError

AXES = ("S", "V", "R")


def check_task_set(path: str | Path) -> list[TaskNote]:
    """Every note on every task file under ``path`` (an Agentic-MME root, its ``json/``, or one file)."""
    source = Path(path).expanduser().resolve()
    if source.is_file():
        files = [source]
    else:
        folder = source / "json" if (source / "json").is_dir() else source
        files = task_files(folder) if folder.is_dir() else []
    if not files:
        raise TaskSourceError(f"{source}: no .json task files (expected an Agentic-MME root, its json/, or a file)")
    notes: list[TaskNote] = []
    for file in files:
        notes += check_task_file(file)
    return notes


def check_task_file(path: Path) -> list[TaskNote]:
    """The notes on one task file (loader normalizations, structure the evaluator trips on, unusable)."""
    notes: list[TaskNote] = []
    try:
        read_official_task(path, notes)
    except ValidationError as error:
        notes.append(TaskNote(error.file, error.field, f"expected {error.expected}", "unusable"))
        return notes
    raw = read_document(path)
    notes += _structure(str(path), raw.get("process_evaluation") or {})
    return notes


def _structure(file: str, process: dict[str, Any]) -> list[TaskNote]:
    notes = []
    checkpoints = process.get("checkpoints") or []
    ids = set()
    for i, cp in enumerate(checkpoints):
        ids.add(cp.get("id"))
        where = f"process_evaluation.checkpoints[{i}]"
        axis = cp.get("axis")
        if axis not in AXES:
            notes.append(
                TaskNote(file, f"{where}.axis", f"{axis!r} is not S, V or R (the evaluator fails it)", "deviation")
            )
        elif axis == "V" and not {"code_check", "visual_check", "answer_check"} & set(cp):
            notes.append(
                TaskNote(file, where, "a V checkpoint with no code_check or visual_check always fails", "deviation")
            )
        elif axis == "S" and not {"google_search", "google_lens_search"} & {
            str(t).lower() for t in cp.get("tools") or []
        }:
            notes.append(
                TaskNote(file, f"{where}.tools", "an S checkpoint without a search tool always fails", "deviation")
            )
    for i, constraint in enumerate(process.get("ordering_constraints") or []):
        unknown = [c for c in constraint.get("sequence") or [] if c not in ids]
        if unknown:
            field = f"process_evaluation.ordering_constraints[{i}].sequence"
            notes.append(
                TaskNote(file, field, f"names no checkpoint {', '.join(map(str, unknown))} (always fails)", "deviation")
            )
    return notes
