"""Scored results: per checkpoint and per episode, as plain data for reports."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pixelbox.harness.suites import DEFAULT_SUITE

from .columns import Column


@dataclass(frozen=True)
class CheckpointResult:
    """One checkpoint's verdicts with the evidence behind each.

    ``tool`` is V_tool (or the S/R verdict for those axes), ``true`` is V_true; either is None
    when it does not apply or could not be judged. ``passed`` combines the ones that apply.
    """

    checkpoint_id: str
    axis: str
    description: str
    passed: bool | None
    tool: bool | None = None
    true: bool | None = None
    step: int | None = None
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FailureLabel:
    """The dominant failure mode of a failed episode and what decided it."""

    label: str
    checkpoint_id: str | None
    evidence: str


@dataclass(frozen=True)
class EpisodeScore:
    """Every metric of one episode, with checkpoint detail and the failure label when it failed."""

    episode_id: str
    task_id: str
    level: int
    mode: str
    model: str
    acc: bool
    acc_reason: str
    s: float | None
    v: float | None
    v_tool: float | None
    v_true: float | None
    calls: int
    overthink: float | None
    checkpoints: tuple[CheckpointResult, ...]
    orders: tuple[dict[str, Any], ...] = ()
    failure: FailureLabel | None = None
    termination: str = "answered"
    infrastructure: str | None = None
    """Set (``status: reason``) when the episode failed for a reason outside the model; such
    episodes get no failure label and are left out of the metrics unless asked for."""
    tamper: tuple[dict[str, Any], ...] = ()
    """Executions the runtime flagged: ``{"interaction", "notices"}`` each."""
    category: str | None = None
    """The task's category, when its file gives one (reports and comparisons group by it)."""
    suite: str = DEFAULT_SUITE

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


METRIC_COLUMNS = (
    Column("acc", "Acc", description="the final answer matches the golden answer"),
    Column("s", "S", description="search checkpoints passed"),
    Column("v", "V", description="visual checkpoints passed (tool and truth parts that apply)"),
    Column("v_tool", "V_tool", description="visual checkpoints whose operation was executed as required"),
    Column("v_true", "V_true", description="visual checkpoints whose produced image shows the evidence"),
    Column("calls", "calls/task", "number", None, "actions per episode (code blocks and tool calls)"),
    Column("overthink", "Overthink", "number", "lower", "extra calls beyond the reference solution, relative"),
)
"""The metric fields of :class:`EpisodeScore`, as Agentic-MME's suite declares them (``Suite.metric_columns``)."""


def fraction(values: list[bool | None]) -> float | None:
    """Share of True among the decided values; None when none was decided."""
    decided = [v for v in values if v is not None]
    return sum(decided) / len(decided) if decided else None
