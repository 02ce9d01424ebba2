"""The run store: episode images addressed by content hash, on a shared directory or object storage.

Workers put what their episodes produced; the driver copies each file into the run directory when
the episode lands, so neither the driver's memory nor Ray's object store ever holds the images. A
URL without a scheme (or ``file://``) is a directory every node can reach; any other URL goes
through fsspec (``s3://bucket/prefix`` with s3fs, ``gs://`` with gcsfs, ...).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHUNK = 1 << 20


@dataclass(frozen=True)
class ArtifactStore:
    """Content-addressed files under ``url``: ``put`` returns a key, ``get`` copies it back out."""

    url: str

    def _fs(self) -> tuple[Any, str]:
        import fsspec

        fs, root = fsspec.core.url_to_fs(self.url)
        return fs, root.rstrip("/")

    def put(self, path: str | Path) -> str:
        """Store the file at ``path`` (once per content) and return its key, ``sha256/AB/<hash><suffix>``."""
        source = Path(path)
        digest = hashlib.sha256()
        with open(source, "rb") as handle:
            for chunk in iter(lambda: handle.read(CHUNK), b""):
                digest.update(chunk)
        key = f"sha256/{digest.hexdigest()[:2]}/{digest.hexdigest()}{source.suffix.lower()}"
        fs, root = self._fs()
        target = f"{root}/{key}"
        if not fs.exists(target):
            fs.makedirs(f"{root}/{key.rsplit('/', 1)[0]}", exist_ok=True)
            partial = f"{target}.part-{os.getpid()}-{digest.hexdigest()[:8]}"
            fs.put_file(str(source), partial)
            fs.mv(partial, target)  # readers never see a half-written object
        return key

    def get(self, key: str, target: str | Path) -> None:
        """Copy the object ``key`` to ``target`` and check it against the hash in its key."""
        fs, root = self._fs()
        destination = Path(target)
        destination.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(dir=destination.parent, prefix=".store-")
        os.close(fd)
        try:
            fs.get_file(f"{root}/{key}", scratch)
            _check(Path(scratch), key)
            shutil.move(scratch, destination)
        finally:
            Path(scratch).unlink(missing_ok=True)


def _check(path: Path, key: str) -> None:
    expected = key.rsplit("/", 1)[-1].split(".", 1)[0]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != expected:
        raise OSError(f"run store object {key} is corrupt: its content hashes to {digest}")
