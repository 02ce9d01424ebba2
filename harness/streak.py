"""Stopping a run whose infrastructure keeps failing: consecutive infrastructure failures, counted.

An endpoint that dies midway, a container engine that stops, a disk that fills: every episode after
that fails the same way, each after its own retries. The runner notes each finished episode here in
the order they finish; after ``limit`` infrastructure failures in a row it schedules no new episode
(running ones finish), and the run's summary says what failed and how to resume.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FailureStreak:
    """The current run of infrastructure failures; ``limit`` 0 never stops a run."""

    limit: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    """``(task_id, reason)`` of the failures in a row so far."""
    stopped: list[tuple[str, str]] | None = None
    """The streak that stopped the run (None while it goes on)."""

    def __post_init__(self) -> None:
        if self.limit < 0:
            raise ValueError(f"the consecutive failure limit must be 0 (never stop) or more, got {self.limit}")

    def note(self, task_id: str, failure: str | None) -> bool:
        """Count one finished episode (``failure``: why the run failed it, None when it has a model outcome);
        True when this one reaches the limit."""
        if failure is None:
            self.failures.clear()
            return False
        self.failures.append((task_id, failure))
        if self.stopped is None and self.limit and len(self.failures) >= self.limit:
            self.stopped = list(self.failures)
            return True
        return False

    def to_dict(self, not_started: list[str]) -> dict[str, Any] | None:
        """The run summary's ``stopped`` entry (None when the run was not stopped)."""
        if self.stopped is None:
            return None
        return {
            "limit": self.limit,
            "failures": [{"task_id": t, "reason": r} for t, r in self.stopped],
            "not_started": list(not_started),
        }
