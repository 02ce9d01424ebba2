"""Every live sandbox of this process, so that none outlives the interpreter."""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from typing import Any

_live: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()


def register(sandbox: Any) -> None:
    """Track ``sandbox`` until it is closed."""
    with _lock:
        _live.add(sandbox)


def unregister(sandbox: Any) -> None:
    """Stop tracking ``sandbox``."""
    with _lock:
        _live.discard(sandbox)


def live_count() -> int:
    """How many sandboxes are open in this process."""
    with _lock:
        return len(_live)


@atexit.register
def close_all() -> None:
    """Close every sandbox still open (runs at interpreter exit)."""
    with _lock:
        sandboxes = list(_live)
    for sandbox in sandboxes:
        with contextlib.suppress(Exception):
            sandbox.close()
