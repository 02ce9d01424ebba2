"""Who uses an entry of the restore cache, and when it was last used: one lock file per entry.

Several pixelbox processes share the cache (:data:`pixelbox.runtime.backends.restore.CACHE`). A
process that uses an entry (an exported root file system its templates and restored containers run
on, a checkpoint of its own) holds a *shared* ``flock`` on the entry's lock file for as long as it
may use it: until it exits (templates live that long). The pruner (:mod:`.cache_prune`) takes the
*exclusive* lock without waiting, so it never removes an entry some process holds; a process that
dies releases its locks with it. The lock file's modification time is the entry's last use (touched
on every hold and restore), and its content the entry's size in bytes once measured (exports never
change after they are made, so the pruner measures each one once).

The pruner unlinks the lock file of an entry it removed; a user that opened it just before then
locks a file no longer at that path, so every lock is checked to be the file at its path, and
taken again if not (the usual pattern for lock files that are removed).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

LOCKS = "locks"
"""The cache's directory of lock files: ``<kind>.<name>.lock`` (kind ``rootfs`` or ``templates``)."""
_held: dict[Path, int] = {}
_held_lock = threading.Lock()


def lock_path(root: Path, kind: str, name: str) -> Path:
    """The lock (and last-use stamp) file of entry ``root/kind/name``."""
    return root / LOCKS / f"{kind}.{name}.lock"


def _locked(path: Path, operation: int) -> int | None:
    """A descriptor of ``path`` (created if missing) locked with ``operation``; None if a non-blocking
    lock is taken by another holder. Retried while the file locked is no longer the one at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, operation)
        except BlockingIOError:
            os.close(fd)
            return None
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        os.close(fd)


def hold(root: Path, kind: str, name: str) -> None:
    """Hold a shared lock on entry ``root/kind/name`` until this process exits (taken once; waits only
    while a pruner is renaming the entry away), and stamp its use."""
    path = lock_path(root, kind, name)
    with _held_lock:
        if path not in _held:
            fd = _locked(path, fcntl.LOCK_SH)
            assert fd is not None  # a blocking lock is always granted
            _held[path] = fd
    touch(root, kind, name)


def touch(root: Path, kind: str, name: str) -> None:
    """Stamp the entry as used now (its lock file's modification time); never raises."""
    with contextlib.suppress(OSError):
        os.utime(lock_path(root, kind, name))


def last_used(root: Path, kind: str, name: str) -> float:
    """When the entry was last used: its stamp, or the entry's own modification time (made before
    stamps were kept), or 0."""
    for path in (lock_path(root, kind, name), root / kind / name):
        with contextlib.suppress(OSError):
            return os.stat(path).st_mtime
    return 0.0


def recorded_size(root: Path, kind: str, name: str) -> int | None:
    """The entry's size as recorded by :func:`record_size`, or None."""
    try:
        return int(lock_path(root, kind, name).read_text().strip())
    except (OSError, ValueError):
        return None


def record_size(root: Path, kind: str, name: str, size: int) -> None:
    """Record an entry's size in its lock file, keeping its last use; never raises."""
    path = lock_path(root, kind, name)
    used = last_used(root, kind, name)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, str(size).encode())
        finally:
            os.close(fd)
        os.utime(path, (used, used))


@contextlib.contextmanager
def exclusive(root: Path, kind: str, name: str) -> Iterator[bool]:
    """The exclusive lock of an entry if no process holds it (yields True), else yields False at once.
    Leaving the block after removing the entry should :func:`forget` it first."""
    fd = _locked(lock_path(root, kind, name), fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)


def forget(root: Path, kind: str, name: str) -> None:
    """Remove an entry's lock file (under its exclusive lock, once the entry is gone)."""
    with contextlib.suppress(FileNotFoundError):
        lock_path(root, kind, name).unlink()
