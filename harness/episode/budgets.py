"""Episode budgets: rounds, tool calls, seconds per execution, wall-clock seconds per episode.

The defaults are those of the released Agentic-MME runner (15 rounds, 15 tool calls, 180 s per
code run). An episode asks :meth:`Budget.exhausted` before each model turn and
:meth:`Budget.admit_tool_call` before each action; a :class:`BudgetHit` says which limit ended it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

Limit = Literal["max_rounds", "max_tool_calls", "wall_clock"]


@dataclass(frozen=True)
class BudgetLimits:
    """The limits of one episode. ``episode_seconds=None`` means no wall-clock limit."""

    max_rounds: int = 15
    max_tool_calls: int = 15
    execution_timeout: float = 180.0
    episode_seconds: float | None = 1800.0

    def __post_init__(self) -> None:
        for name in ("max_rounds", "max_tool_calls"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.execution_timeout > 0:
            raise ValueError(f"execution_timeout must be positive seconds, got {self.execution_timeout!r}")
        if self.episode_seconds is not None and not self.episode_seconds > 0:
            raise ValueError(f"episode_seconds must be positive seconds or None, got {self.episode_seconds!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable view."""
        return asdict(self)


@dataclass(frozen=True)
class BudgetHit:
    """Which limit was reached, its value and how much had been used."""

    limit: Limit
    allowed: float
    used: float

    @property
    def reason(self) -> str:
        """The sentence recorded in traces and shown to the model."""
        what = {"max_rounds": "model turns", "max_tool_calls": "tool calls", "wall_clock": "seconds for the episode"}
        return f"budget exhausted: {self.limit} ({self.used:g} of {self.allowed:g} {what[self.limit]} used)"

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable view including ``reason``."""
        return {**asdict(self), "reason": self.reason}


class Budget:
    """Counts one episode's use against its :class:`BudgetLimits`. ``clock`` returns seconds (monotonic)."""

    def __init__(self, limits: BudgetLimits | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits or BudgetLimits()
        self._clock = clock
        self._started = clock()
        self.rounds = 0
        self.tool_calls = 0
        self.timeouts = 0

    @property
    def elapsed(self) -> float:
        """Seconds since the budget was created."""
        return self._clock() - self._started

    def remaining_seconds(self) -> float | None:
        """Wall-clock seconds left, or None without a wall-clock limit."""
        total = self.limits.episode_seconds
        return None if total is None else max(total - self.elapsed, 0.0)

    def exhausted(self) -> BudgetHit | None:
        """The limit that forbids another model turn, if any (rounds first, then wall clock)."""
        if self.rounds >= self.limits.max_rounds:
            return BudgetHit("max_rounds", self.limits.max_rounds, self.rounds)
        return self._wall_clock_hit()

    def start_round(self) -> BudgetHit | None:
        """Count a model turn; returns the hit instead of counting when no turn is left."""
        hit = self.exhausted()
        if hit is None:
            self.rounds += 1
        return hit

    def admit_tool_call(self) -> BudgetHit | None:
        """Count one action (code block or tool call); returns the hit instead of counting when none is left."""
        if self.tool_calls >= self.limits.max_tool_calls:
            return BudgetHit("max_tool_calls", self.limits.max_tool_calls, self.tool_calls)
        hit = self._wall_clock_hit()
        if hit is None:
            self.tool_calls += 1
        return hit

    def execution_timeout(self) -> float:
        """Seconds the next execution may take: the per-execution limit, shortened to the episode's remainder."""
        remaining = self.remaining_seconds()
        limit = self.limits.execution_timeout
        return limit if remaining is None else max(min(limit, remaining), 0.001)

    def note_execution(self, status: str) -> None:
        """Record an execution's status (timeouts are counted for the summary)."""
        self.timeouts += status == "timeout"

    def snapshot(self) -> dict[str, Any]:
        """Use so far, for traces and summaries."""
        return {
            "rounds": self.rounds,
            "tool_calls": self.tool_calls,
            "timeouts": self.timeouts,
            "elapsed": round(self.elapsed, 3),
            "limits": self.limits.to_dict(),
        }

    def _wall_clock_hit(self) -> BudgetHit | None:
        total = self.limits.episode_seconds
        elapsed = self.elapsed
        return BudgetHit("wall_clock", total, round(elapsed, 3)) if total is not None and elapsed >= total else None
