"""Field checks shared by the task readers: each failure names the file, the field and what was expected."""

from __future__ import annotations

import re
from typing import Any

MATCH_TYPES = ("exact", "contains", "string", "numeric", "keyword_inclusion", "extraction_match")
LEVELS = (1, 2, 3)
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
"""Task ids name files in a run directory, so they are limited to file-name-safe characters."""

_MISSING = object()


class ValidationError(ValueError):
    """A task file does not have the expected shape.

    ``file`` is the path (with ``:LINE`` for JSONL), ``field`` the dotted field name and
    ``expected`` a short description of what should be there.
    """

    def __init__(self, file: str, field: str, expected: str, got: Any = _MISSING) -> None:
        self.file = file
        self.field = field
        self.expected = expected
        self.got = None if got is _MISSING else got
        found = "it is missing" if got is _MISSING else f"got {_preview(got)}"
        super().__init__(f"{file}: field '{field}': expected {expected}; {found}")


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def lookup(raw: dict[str, Any], dotted: str) -> Any:
    """The value at ``a.b.c`` in nested dicts, or a private sentinel when absent."""
    node: Any = raw
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def is_missing(value: Any) -> bool:
    """Whether :func:`lookup` found nothing."""
    return value is _MISSING


def require_text(raw: dict[str, Any], dotted: str, file: str) -> str:
    """A non-empty string field."""
    value = lookup(raw, dotted)
    if is_missing(value):
        raise ValidationError(file, dotted, "a non-empty string")
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(file, dotted, "a non-empty string", value)
    return value


def require_id(raw: dict[str, Any], dotted: str, file: str) -> str:
    """A task id: a string or integer made of letters, digits, '.', '_' or '-'."""
    value = lookup(raw, dotted)
    expected = "a task id (letters, digits, '.', '_', '-'; it names files in the run directory)"
    if is_missing(value):
        raise ValidationError(file, dotted, expected)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not SAFE_ID.match(str(value)):
        raise ValidationError(file, dotted, expected, value)
    return str(value)


def optional_level(raw: dict[str, Any], dotted: str, file: str) -> int | None:
    """A difficulty level 1, 2 or 3 (absent -> None)."""
    value = lookup(raw, dotted)
    if is_missing(value) or value is None:
        return None
    if isinstance(value, bool) or value not in LEVELS:
        raise ValidationError(file, dotted, "a level 1, 2 or 3", value)
    return int(value)


def check_answer(answer: Any, dotted: str, file: str) -> dict[str, Any]:
    """A golden answer object ``{value, match_type?, tolerance?}``; returns a copy."""
    if not isinstance(answer, dict) or "value" not in answer:
        raise ValidationError(file, dotted, "an object with a 'value'", answer)
    match_type = answer.get("match_type", "exact")
    if match_type not in MATCH_TYPES:
        raise ValidationError(file, f"{dotted}.match_type", f"one of {', '.join(MATCH_TYPES)}", match_type)
    tolerance = answer.get("tolerance")
    if tolerance is not None and (isinstance(tolerance, bool) or not isinstance(tolerance, (int, float))):
        raise ValidationError(file, f"{dotted}.tolerance", "a number", tolerance)
    return dict(answer)


def check_process(process: Any, dotted: str, file: str) -> dict[str, Any]:
    """A ``process_evaluation`` object: checkpoints and ordering constraints are lists of objects."""
    if not isinstance(process, dict):
        raise ValidationError(file, dotted, "an object", process)
    check_checkpoints(process.get("checkpoints", []), f"{dotted}.checkpoints", file)
    _check_object_list(process.get("ordering_constraints", []), f"{dotted}.ordering_constraints", file)
    efficiency = process.get("efficiency", {})
    if efficiency is not None and not isinstance(efficiency, dict):
        raise ValidationError(file, f"{dotted}.efficiency", "an object", efficiency)
    return dict(process)


def check_checkpoints(checkpoints: Any, dotted: str, file: str) -> list[dict[str, Any]]:
    """A list of checkpoint objects, each with an ``id``."""
    items = _check_object_list(checkpoints, dotted, file)
    for i, item in enumerate(items):
        if "id" not in item:
            raise ValidationError(file, f"{dotted}[{i}].id", "a checkpoint id")
    return items


def _check_object_list(value: Any, dotted: str, file: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError(file, dotted, "a list of objects", value)
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise ValidationError(file, f"{dotted}[{i}]", "an object", item)
    return value
