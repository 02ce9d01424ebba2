"""Ordering constraints: checkpoints hit in a given order with at most ``max_gap`` steps between."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OrderVerdict:
    """One ``ordering_constraints`` entry checked against the checkpoint hits."""

    constraint_id: str
    sequence: tuple[str, ...]
    max_gap: int
    passed: bool
    positions: tuple[int | None, ...]
    reason: str


def check_order(constraint: dict[str, Any], hits: dict[str, int | None]) -> OrderVerdict:
    """Every checkpoint in ``sequence`` hit, positions non-decreasing, gaps at most ``max_gap``."""
    sequence = tuple(str(c) for c in constraint.get("sequence") or ())
    max_gap = int(constraint.get("max_gap", 0))
    positions = tuple(hits.get(cid) for cid in sequence)
    verdict = _verdict(sequence, positions, max_gap)
    return OrderVerdict(str(constraint.get("id", "")), sequence, max_gap, verdict is None, positions, verdict or "ok")


def _verdict(sequence: tuple[str, ...], positions: tuple[int | None, ...], max_gap: int) -> str | None:
    for cid, position in zip(sequence, positions, strict=True):
        if position is None:
            return f"checkpoint {cid} was not hit"
    pairs = [(cid, p) for cid, p in zip(sequence, positions, strict=True) if p is not None]
    for (a_id, a), (b_id, b) in itertools.pairwise(pairs):
        if b < a:
            return f"{b_id} (step {b}) came before {a_id} (step {a})"
        if b - a - 1 > max_gap:
            return f"{b - a - 1} steps between {a_id} and {b_id}, at most {max_gap} allowed"
    return None


def count_passed(constraints: list[dict[str, Any]], hits: dict[str, int | None]) -> int:
    return sum(check_order(c, hits).passed for c in constraints)


def cannot_pass(constraint: dict[str, Any], known: dict[str, int | None], options: dict[str, list[int]]) -> bool:
    """True when a partial assignment already rules the constraint out.

    ``known`` holds decided positions (None = not hit), ``options`` the sorted positions still
    open to undecided checkpoints. Sweeping the sequence, each undecided checkpoint takes its
    earliest option not before the previous one; a decided position below that is a violation.
    """
    floor = -1
    previous: int | None = None
    for cid in (str(c) for c in constraint.get("sequence") or ()):
        if cid in known:
            position = known[cid]
            if position is None or position < floor:
                return True
            if previous is not None and position - previous - 1 > int(constraint.get("max_gap", 0)):
                return True
            floor = previous = position
            continue
        later = [p for p in options.get(cid, ()) if p >= floor]
        if not later:
            return True
        floor, previous = later[0], None
    return False
