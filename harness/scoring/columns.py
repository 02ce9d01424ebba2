"""Metric columns of scored episodes, read from the scores themselves.

Reports and comparisons never name a suite's metrics: each scored episode says which metrics it
has. A suite's scorer puts ``columns`` (``[{key, label, kind, better, description}]``), ``metrics``
(``{key: value}``) and ``primary`` (the key that says whether the episode passed) in its score
record; an Agentic-MME score, which has its metrics as fields, gets :data:`AGENTIC_MME_COLUMNS`.
Values are numbers (``True``/``False`` count as 1/0) or None when the metric does not apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

Kind = Literal["rate", "number"]
Better = Literal["higher", "lower"]
NOT_APPLICABLE = "—"
INFRASTRUCTURE = "n/a"
"""Shown for an episode's metrics when its infrastructure failed, and for a group with no episode left."""


@dataclass(frozen=True)
class Column:
    """One metric: ``rate`` values are fractions shown as percentages, ``number`` values as decimals."""

    key: str
    label: str
    kind: Kind = "rate"
    better: Better | None = "higher"
    description: str = ""

    def format(self, value: float | None) -> str:
        """``62.5%`` or ``1.20``; ``—`` when the metric does not apply."""
        if value is None:
            return NOT_APPLICABLE
        return f"{100 * value:.1f}%" if self.kind == "rate" else f"{value:.2f}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Column:
        kind: Kind = "number" if raw.get("kind") == "number" else "rate"
        better: Better | None = "lower" if raw.get("better") == "lower" else "higher" if raw.get("better") else None
        key = str(raw["key"])
        return cls(key, str(raw.get("label") or key), kind, better, str(raw.get("description") or ""))


AGENTIC_MME_COLUMNS = (
    Column("acc", "Acc", description="the final answer matches the golden answer"),
    Column("s", "S", description="search checkpoints passed"),
    Column("v", "V", description="visual checkpoints passed (tool and truth parts that apply)"),
    Column("v_tool", "V_tool", description="visual checkpoints whose operation was executed as required"),
    Column("v_true", "V_true", description="visual checkpoints whose produced image shows the evidence"),
    Column("calls", "calls/task", "number", None, "actions per episode (code blocks and tool calls)"),
    Column("overthink", "Overthink", "number", "lower", "extra calls beyond the reference solution, relative"),
)
PRIMARY = "acc"


def columns_of(score: dict[str, Any]) -> tuple[Column, ...]:
    """The metric columns one score declares (Agentic-MME's when it declares none)."""
    declared = score.get("columns")
    if isinstance(declared, list) and declared:
        return tuple(Column.from_dict(c) for c in declared if isinstance(c, dict) and "key" in c)
    return AGENTIC_MME_COLUMNS


def metrics_of(score: dict[str, Any]) -> dict[str, float | None]:
    """Metric key -> value (None where it does not apply) for one score."""
    raw = score.get("metrics")
    source = raw if isinstance(raw, dict) else score
    return {c.key: _number(source.get(c.key)) for c in columns_of(score)}


def primary_of(score: dict[str, Any]) -> str:
    """The key of the metric that says whether the episode passed (``acc`` unless the score says otherwise)."""
    return str(score.get("primary") or PRIMARY)


def union_columns(scores: Iterable[dict[str, Any]]) -> list[Column]:
    """Every column of ``scores``, each once, in the order first seen."""
    return merge_columns(columns_of(score) for score in scores)


def merge_columns(groups: Iterable[Iterable[Column]]) -> list[Column]:
    """The columns of several lists, each key once (its first description wins), in the order first seen."""
    seen: dict[str, Column] = {}
    for columns in groups:
        for column in columns:
            seen.setdefault(column.key, column)
    return list(seen.values())


def primary_column(scores: list[dict[str, Any]]) -> Column:
    """The primary column of ``scores`` (the first score's choice; Acc when there are none)."""
    key = primary_of(scores[0]) if scores else PRIMARY
    return next((c for c in union_columns(scores) if c.key == key), AGENTIC_MME_COLUMNS[0])


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return None
