"""Wake up when a file appears in a directory (inotify), instead of sleeping between looks.

The host waits for the kernel's ready file at every kernel start; sleeping a few milliseconds
between looks costs half a sleep on average, which is a good part of a forked kernel's start.
:class:`DirectoryWatch` wakes the waiter as soon as a file is created, written or renamed into the
directory. Where inotify is unavailable (another platform, no watches left) :meth:`wait` simply
sleeps, and callers keep looking as before: the watch only ever shortens a wait.

Closing an inotify descriptor waits for an SRCU grace period (the kernel destroys the watch's
group synchronously): 5-10 ms on this machine, between the ready file and the kernel's first
result. So :meth:`DirectoryWatch.close` hands the descriptor to one background thread, which
closes it while the caller goes on.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import select
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x8, 0x80, 0x100
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC

_init: Any = None
_add_watch: Any = None
with contextlib.suppress(OSError, AttributeError):  # not Linux: no watches, waits are sleeps
    _libc = ctypes.CDLL(None, use_errno=True)
    _init, _add_watch = _libc.inotify_init1, _libc.inotify_add_watch
    _add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)


class DirectoryWatch:
    """A context manager: :meth:`wait` returns once something may have changed in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.fd = -1
        if _init is None or _add_watch is None:
            return
        fd = _init(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return
        if _add_watch(fd, os.fsencode(directory), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0:
            os.close(fd)
            return
        self.fd = fd

    def wait(self, timeout: float) -> None:
        """Return when a file in the directory was created, written or renamed into it, or after
        ``timeout`` seconds (at once when events are pending; a plain sleep without inotify)."""
        if self.fd < 0:
            time.sleep(timeout)
            return
        if select.select([self.fd], [], [], max(0.0, timeout))[0]:
            with contextlib.suppress(BlockingIOError):
                while os.read(self.fd, 4096):
                    pass

    def close(self) -> None:
        """Stop watching (the descriptor is closed in the background); idempotent."""
        if self.fd >= 0:
            _close_later(self.fd)
            self.fd = -1

    def __enter__(self) -> DirectoryWatch:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


_closing: queue.SimpleQueue[int] = queue.SimpleQueue()
_closer: threading.Thread | None = None
_closer_lock = threading.Lock()


def _close_later(fd: int) -> None:
    """Have the closer thread (started on first use) close ``fd``: the caller does not wait for it."""
    global _closer
    with _closer_lock:
        if _closer is None or not _closer.is_alive():
            _closer = threading.Thread(target=_close_forever, name="pbx-inotify-closer", daemon=True)
            _closer.start()
    _closing.put(fd)


def _close_forever() -> None:
    while True:
        with contextlib.suppress(OSError):
            os.close(_closing.get())
