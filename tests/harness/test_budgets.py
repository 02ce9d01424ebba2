"""Budgets: which limit is hit, when, and the recorded reason. A hand-driven clock replaces waiting."""

from __future__ import annotations

import pytest

from pixelbox.harness.episode.budgets import Budget, BudgetLimits


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rounds_run_out_after_the_limit() -> None:
    budget = Budget(BudgetLimits(max_rounds=2, episode_seconds=None))
    assert budget.start_round() is None and budget.start_round() is None
    hit = budget.start_round()
    assert hit is not None and hit.limit == "max_rounds" and budget.rounds == 2
    assert hit.reason == "budget exhausted: max_rounds (2 of 2 model turns used)"


def test_tool_calls_run_out_after_the_limit() -> None:
    budget = Budget(BudgetLimits(max_tool_calls=3))
    admitted = [budget.admit_tool_call() is None for _ in range(5)]
    assert admitted == [True, True, True, False, False] and budget.tool_calls == 3
    hit = budget.admit_tool_call()
    assert hit is not None and hit.to_dict()["limit"] == "max_tool_calls" and "3 of 3 tool calls" in hit.reason


def test_wall_clock_ends_turns_and_tool_calls() -> None:
    clock = Clock()
    budget = Budget(BudgetLimits(episode_seconds=60), clock=clock)
    clock.now += 59
    assert budget.exhausted() is None and budget.remaining_seconds() == 1
    clock.now += 1
    hit = budget.exhausted()
    assert hit is not None and hit.limit == "wall_clock" and hit.used == 60
    assert budget.admit_tool_call() is not None and budget.tool_calls == 0


def test_execution_timeout_shrinks_to_what_is_left_of_the_episode() -> None:
    clock = Clock()
    budget = Budget(BudgetLimits(execution_timeout=180, episode_seconds=200), clock=clock)
    assert budget.execution_timeout() == 180
    clock.now += 150
    assert budget.execution_timeout() == 50
    assert Budget(BudgetLimits(episode_seconds=None)).execution_timeout() == 180


def test_snapshot_counts_use_and_timeouts() -> None:
    budget = Budget(BudgetLimits())
    budget.start_round()
    budget.admit_tool_call()
    budget.note_execution("timeout")
    budget.note_execution("ok")
    snap = budget.snapshot()
    assert (snap["rounds"], snap["tool_calls"], snap["timeouts"]) == (1, 1, 1)
    assert snap["limits"] == {
        "max_rounds": 15,
        "max_tool_calls": 15,
        "execution_timeout": 180.0,
        "episode_seconds": 1800.0,
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_rounds": 0}, "max_rounds must be a positive integer"),
        ({"max_tool_calls": 1.5}, "max_tool_calls must be a positive integer"),
        ({"execution_timeout": 0}, "execution_timeout must be positive"),
        ({"episode_seconds": -1}, "episode_seconds must be positive"),
    ],
)
def test_limits_are_validated(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BudgetLimits(**kwargs)  # type: ignore[arg-type]
