"""A capture's sha256 taken while its bytes are written, instead of reading the file back after.

:class:`HashingFile` is the file object PIL writes a captured PNG or JPEG into: every byte goes to
the file and, in order, to a sha256 computed on a helper thread (``hashlib`` releases the GIL on
large buffers), so hashing overlaps PIL's encoder instead of following it. The digest counts only
when the file is exactly the bytes written, once each, front to back: a write after a seek
elsewhere, a truncation, or a file whose size is not the bytes written afterwards (something else
wrote to it) leaves no digest, and the capture hashes the file from disk as before. Either way the
host hashes the bytes it reads and refuses an artifact whose digest differs.
"""

from __future__ import annotations

import hashlib
import io
import os
import queue
import threading
from typing import Any

FEED_BYTES = 1 << 16
"""Small writes (PNG chunk headers, CRCs) are gathered up to this size before they are hashed."""


class _Hasher:
    """sha256 of the chunks fed to it, in order, taken on a thread of its own."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self._chunks: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="pbx-capture-hash", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (chunk := self._chunks.get()) is not None:
            self._digest.update(chunk)

    def feed(self, chunk: bytes) -> None:
        """Hash ``chunk`` after every chunk fed before it."""
        self._chunks.put(chunk)

    def finish(self) -> str:
        """The hex digest of everything fed (waits for the thread)."""
        self._chunks.put(None)
        self._thread.join()
        return self._digest.hexdigest()


class HashingFile(io.RawIOBase):
    """A new file at ``path`` (created or truncated, like ``open(path, "w+b")``) that hashes what is
    written to it; :attr:`sha256` is set on :meth:`close` when the digest describes the whole file.

    It has no ``fileno`` on purpose: PIL then writes through :meth:`write` rather than to the
    descriptor behind our back.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.name = path
        self.sha256: str | None = None
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        self._hasher = _Hasher()
        self._pending = bytearray()
        self._pos = self._end = 0
        self._in_order = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        raise io.UnsupportedOperation("fileno")

    def write(self, data: Any) -> int:
        """Write all of ``data`` at the current position; hash it if it extends the file in order."""
        chunk = bytes(data)
        view = memoryview(chunk)
        while view:
            view = view[os.pwrite(self._fd, view, self._pos) :]
        if self._pos != self._end:
            self._in_order = False
        elif self._in_order:
            self._hash(chunk)
        self._pos += len(chunk)
        self._end = max(self._end, self._pos)
        return len(chunk)

    def _hash(self, chunk: bytes) -> None:
        """Feed ``chunk`` to the hasher, small ones gathered first (one queue item per ~64 KiB)."""
        if len(chunk) < FEED_BYTES:
            self._pending += chunk
            if len(self._pending) < FEED_BYTES:
                return
            chunk = b""
        if self._pending:
            self._hasher.feed(bytes(self._pending))
            self._pending.clear()
        if chunk:
            self._hasher.feed(chunk)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._end}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def truncate(self, size: int | None = None) -> int:
        self._in_order = False
        size = self._pos if size is None else size
        os.ftruncate(self._fd, size)
        self._end = size
        return size

    def close(self) -> None:
        """Close the file; keep the digest only if the file is exactly the bytes hashed, in order."""
        if self.closed:
            return
        try:
            if self._pending:
                self._hasher.feed(bytes(self._pending))
            digest = self._hasher.finish()
            if self._in_order and os.fstat(self._fd).st_size == self._end:
                self.sha256 = digest
        finally:
            os.close(self._fd)
            super().close()
