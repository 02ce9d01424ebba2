"""Paired bootstrap confidence intervals for the difference between two systems on the same tasks.

Two models scored on the same tasks are paired: resampling tasks (with replacement) and taking the
mean per-task difference each time gives the spread of the difference that comes from which tasks
happened to be in the set. The interval is the percentile interval of those means; ``p`` is the
two-sided share of resamples on the other side of zero (bounded below by one resample). The seed
is fixed, so the same scores always give the same interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class PairedDifference:
    """``mean(a) - mean(b)`` over ``tasks`` shared tasks, its interval at ``confidence``, and ``p``."""

    tasks: int
    mean_a: float
    mean_b: float
    difference: float
    low: float
    high: float
    p: float
    confidence: float
    resamples: int
    seed: int

    @property
    def significant(self) -> bool:
        """Whether the interval excludes zero."""
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "significant": self.significant}


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> PairedDifference:
    """The paired bootstrap of ``mean(a) - mean(b)``; ``a[i]`` and ``b[i]`` are the same task's values."""
    if len(a) != len(b):
        raise ValueError(f"paired values must have the same length, got {len(a)} and {len(b)}")
    if not a:
        raise ValueError("no shared task to compare on")
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"need resamples >= 1 and 0 < confidence < 1, got {resamples} and {confidence}")
    diffs = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(diffs), size=(resamples, len(diffs)))
    means = diffs[picks].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    observed = float(diffs.mean())
    if np.all(diffs == 0):
        p = 1.0
    else:
        below, above = float(np.mean(means <= 0)), float(np.mean(means >= 0))
        p = min(1.0, max(2 * min(below, above), 1 / resamples))
    return PairedDifference(
        tasks=len(diffs),
        mean_a=float(np.mean(a)),
        mean_b=float(np.mean(b)),
        difference=observed,
        low=float(low),
        high=float(high),
        p=p,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )
