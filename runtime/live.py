"""Every live sandbox of this process, so that none outlives the interpreter (nor the helpers backends
share between sandboxes, stopped after them)."""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from collections.abc import Callable
from typing import Any

_live: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()
_after_close: list[Callable[[], None]] = []


def on_close_all(callback: Callable[[], None]) -> None:
    """Run ``callback`` after :func:`close_all` closed the sandboxes (a backend's shared helpers
    that outlive sandboxes, such as the local zygote, stop there)."""
    with _lock:
        if callback not in _after_close:
            _after_close.append(callback)


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
    with _lock:
        callbacks = list(_after_close)
    for callback in callbacks:
        with contextlib.suppress(Exception):
            callback()
