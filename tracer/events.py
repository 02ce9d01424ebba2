"""The event schema: :class:`Event`, the typed and validated form of every record the kernel publishes.

Fields and parameters are documented in ``docs/events.md``. The wire constants (version, field
names, statuses) and the operation vocabulary are the host-kernel contract, one copy shared with the
in-kernel recorder: :mod:`pixelbox.contract.events` and the op table, :mod:`pixelbox.contract.ops`.
They are re-exported here, so this module is the one to read.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from pixelbox.contract.events import ALL_OPS, EVENT_FIELDS, EVENT_VERSION, OTHER_KINDS, STATUSES, VISUAL_OPS


class EventFormatError(ValueError):
    """A record does not follow the event schema; the message names the field and the fix."""


@dataclass(frozen=True)
class Source:
    """Where in the agent's cell the operation was called (1-based line, 0-based column)."""

    line: int
    col: int


@dataclass(frozen=True)
class Event:
    """One executed operation (see ``docs/events.md``)."""

    seq: int
    exec: int
    op: str
    status: str
    api: str
    src: Source | None
    inputs: tuple[str, ...]
    output: str | None
    params: dict[str, Any] = field(default_factory=dict)
    artifact: Any = None
    error: dict[str, str] | None = None
    t_ms: float = 0.0
    v: int = EVENT_VERSION

    @property
    def is_visual(self) -> bool:
        """True for the operations a visual checkpoint can ask for (not io/convert/draw/...)."""
        return self.op in VISUAL_OPS

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": self.v,
            "seq": self.seq,
            "exec": self.exec,
            "op": self.op,
            "status": self.status,
            "api": self.api,
            "src": None if self.src is None else {"line": self.src.line, "col": self.src.col},
            "inputs": list(self.inputs),
            "output": self.output,
            "params": self.params,
            "artifact": self.artifact,
            "error": self.error,
            "t_ms": self.t_ms,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Event:
        """Validate and convert one published record."""
        if not isinstance(raw, dict):
            raise EventFormatError(f"an event must be a JSON object, got {type(raw).__name__}")
        missing = [name for name in EVENT_FIELDS if name not in raw]
        if missing:
            raise EventFormatError(f"event is missing field(s) {missing}; every event has {list(EVENT_FIELDS)}")
        if raw["v"] != EVENT_VERSION:
            raise EventFormatError(
                f"event schema version {raw['v']} is not {EVENT_VERSION}; the kernel image and host disagree, "
                "rebuild the image or upgrade the host"
            )
        if raw["op"] not in ALL_OPS:
            raise EventFormatError(f"unknown op {raw['op']!r}; expected one of {list(ALL_OPS)}")
        if raw["status"] not in STATUSES:
            raise EventFormatError(f"unknown status {raw['status']!r}; expected one of {list(STATUSES)}")
        _check_shapes(raw)
        src = raw["src"]
        return cls(
            v=raw["v"],
            seq=int(raw["seq"]),
            exec=int(raw["exec"]),
            op=raw["op"],
            status=raw["status"],
            api=raw["api"],
            src=None if src is None else Source(int(src["line"]), int(src["col"])),
            inputs=tuple(raw["inputs"]),
            output=raw["output"],
            params=dict(raw["params"]),
            artifact=raw["artifact"],
            error=raw["error"],
            t_ms=float(raw["t_ms"]),
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_id(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


_SHAPES: tuple[tuple[str, Any, str], ...] = (
    ("seq", _is_int, "an integer"),
    ("exec", _is_int, "an integer"),
    ("api", lambda v: isinstance(v, str), "a string"),
    (
        "src",
        lambda v: v is None or (isinstance(v, dict) and _is_int(v.get("line")) and _is_int(v.get("col"))),
        "null or {line, col} integers",
    ),
    ("inputs", lambda v: isinstance(v, list) and all(_is_id(x) for x in v), "a list of image ids (non-empty strings)"),
    ("output", lambda v: v is None or _is_id(v), "null or an image id (a non-empty string)"),
    ("params", lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v), "an object"),
    (
        "error",
        lambda v: v is None or (isinstance(v, dict) and all(isinstance(x, str) for x in v.values())),
        "null or {type, message} strings",
    ),
    ("t_ms", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v), "a finite number"),
)
"""Each field's type, checked before anything reads it: an event is kernel-made data, and a value of
the wrong type (an output that is a list, say) would otherwise break lineage or scoring later."""


def _check_shapes(raw: dict[str, Any]) -> None:
    for name, valid, expected in _SHAPES:
        if not valid(raw[name]):
            shown = repr(raw[name])
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise EventFormatError(f"event field {name!r} must be {expected}, got {shown}")


def parse_events(records: list[dict[str, Any]]) -> list[Event]:
    """Validate a batch as published by the kernel (one list per execution)."""
    return [Event.from_dict(record) for record in records]


def same_operation(a: Event, b: Event, tolerance: float = 1e-6) -> bool:
    """Equal apart from where they came from (``src``, ``api``), timing and position in the trace.

    This is the contract between code mode and atomic mode: the same operation on the same
    region gives equal events.
    """
    return a.op == b.op and a.status == b.status and _close(a.params, b.params, tolerance)


def _close(x: Any, y: Any, tolerance: float) -> bool:
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_close(x[k], y[k], tolerance) for k in x)
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(_close(a, b, tolerance) for a, b in zip(x, y, strict=True))
    if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
        return abs(float(x) - float(y)) <= tolerance
    return bool(x == y)


__all__ = [
    "ALL_OPS",
    "EVENT_FIELDS",
    "EVENT_VERSION",
    "OTHER_KINDS",
    "STATUSES",
    "VISUAL_OPS",
    "Event",
    "EventFormatError",
    "Source",
    "parse_events",
    "same_operation",
]
