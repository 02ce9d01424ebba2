"""Who uses an entry of the restore cache, and when it was last used: one lock file per entry.

Several pixelbox processes share the cache (:data:`pixelbox.runtime.backends.restore.CACHE`). A
process that uses an entry (an exported root file system its templates and restored containers run
on, a checkpoint of its own) holds a *shared* ``flock`` on the entry's lock file for as long as it
may use it: until it exits (templates live that long). The pruner (:mod:`.cache_prune`) takes the
*exclusive* lock without waiting, so it never removes an entry some process holds; a process that
dies releases its locks with it. The lock file's modification time is the entry's last use (touched
on every hold and restore). The entry's size in bytes, once measured, is recorded beside it
(``<kind>.<name>.size``: exports never change after they are made, so the pruner measures each one once).

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


def size_path(root: Path, kind: str, name: str) -> Path:
    """Where entry ``root/kind/name``'s measured size is recorded: beside its lock, not in it, so that
    recording it never moves the use stamp (a process may stamp its use meanwhile)."""
    return root / LOCKS / f"{kind}.{name}.size"


def recorded_size(root: Path, kind: str, name: str) -> int | None:
    """The entry's size as recorded by :func:`record_size` (or in its lock file, as it once was), or None."""
    for path in (size_path(root, kind, name), lock_path(root, kind, name)):
        with contextlib.suppress(OSError, ValueError):
            return int(path.read_text().strip())
    return None


def record_size(root: Path, kind: str, name: str, size: int) -> None:
    """Record an entry's size (whole or not at all: written aside, then renamed); never raises."""
    path = size_path(root, kind, name)
    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        part.write_text(str(size))
        part.replace(path)


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
    """Remove an entry's recorded size and lock file (under its exclusive lock, once the entry is gone)."""
    size_path(root, kind, name).unlink(missing_ok=True)
    lock_path(root, kind, name).unlink(missing_ok=True)
