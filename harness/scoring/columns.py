"""Metric columns of scored episodes: which metrics a report or a comparison shows, read from the suites.

Reports and comparisons never name a suite's metrics. A suite declares them once, as
:meth:`Suite.metric_columns() <pixelbox.harness.suites.Suite.metric_columns>` (a tuple of
:class:`Column`) and :attr:`~pixelbox.harness.suites.Suite.primary_metric` (the key that says
whether an episode passed); each score record names its ``suite`` and carries its values, either
as fields (Agentic-MME's ``acc``, ``v_tool``...) or as ``metrics`` (``{key: value}``). A record
may also declare its own ``columns`` and ``primary``, which win over its suite's (a run scored by
a suite this installation lacks still reports); a record with neither, whose suite declares none,
has the default suite's (Agentic-MME's fields, as every score had before suites declared
columns). Values are numbers (``True``/``False`` count as 1/0) or None when the metric does not
apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pixelbox.harness.suites import Suite

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


def columns_of(score: dict[str, Any]) -> tuple[Column, ...]:
    """The metric columns of one score: its own ``columns``, else its suite's (:func:`suite_of`)."""
    declared = score.get("columns")
    if isinstance(declared, list) and declared:
        return tuple(Column.from_dict(c) for c in declared if isinstance(c, dict) and "key" in c)
    return suite_of(score).metric_columns()


def suite_of(score: dict[str, Any]) -> Suite:
    """The suite whose columns a score without its own has: the registered suite it names when that suite
    declares columns, else the default suite (scores written before suites declared them, or by a suite this
    installation lacks, have Agentic-MME's fields)."""
    from pixelbox.harness.suites import DEFAULT_SUITE, SUITES

    name = score.get("suite")
    if isinstance(name, str) and name in SUITES and SUITES.get(name).metric_columns():
        return SUITES.get(name)
    return SUITES.get(DEFAULT_SUITE)


def metrics_of(score: dict[str, Any]) -> dict[str, float | None]:
    """Metric key -> value (None where it does not apply) for one score."""
    raw = score.get("metrics")
    source = raw if isinstance(raw, dict) else score
    return {c.key: _number(source.get(c.key)) for c in columns_of(score)}


def primary_of(score: dict[str, Any]) -> str:
    """The key of the metric that says whether the episode passed: the score's ``primary``, else its suite's
    (its first column when it declares columns but no primary)."""
    if score.get("primary"):
        return str(score["primary"])
    declared = score.get("columns")
    if isinstance(declared, list) and declared:
        return columns_of(score)[0].key
    return suite_of(score).primary_metric


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
    """The primary column of ``scores`` (the first score's choice; the default suite's when there are none)."""
    sample = scores[0] if scores else {}
    key = primary_of(sample)
    columns = union_columns(scores) or list(columns_of(sample))
    return next((c for c in columns if c.key == key), columns[0] if columns else Column(key, key))


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return None
