"""When and how long to wait before retrying a model request."""

from __future__ import annotations

import random
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from time import time

RETRY_STATUSES = frozenset({408, 409, 429})
"""Besides every 5xx: request timeout, conflict (lock contention) and rate limit."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter.

    Attempt ``n`` (1-based) that failed waits ``min(max_delay, base_delay * 2**(n-1))`` scaled by
    a random factor in ``[1 - jitter, 1]``, or what the server's ``Retry-After`` asks when that is
    given (capped at ``max_retry_after``).
    """

    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    jitter: float = 0.5
    max_retry_after: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter}")

    def delay(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt``."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return backoff * (1 - self.jitter * (rng or random).random())


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth retrying."""
    return status in RETRY_STATUSES or status >= 500


def parse_retry_after(value: str | None) -> float | None:
    """The ``Retry-After`` header in seconds (delta-seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(parsedate_to_datetime(value).timestamp() - time(), 0.0)
    except (TypeError, ValueError):
        return None
