"""Host directories behind one sandbox, and safe path handling for upload/download.

Layout of ``/tmp/pbx-<host pid>-<random>/``:
``ipc/`` (sockets, connection and config files; kernel-writable), ``work/`` (the kernel's
working directory, shared zero-copy with the host), ``inputs/`` (task images, read-only to
the kernel), ``home/`` (HOME and caches of local kernels) and ``outputs/`` (host-only: rich
outputs decoded from messages). The host pid in the name lets ``pixelbox cleanup`` find
directories whose owner died.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pixelbox.runtime.errors import WorkspacePathError

ROOT_PREFIX = "pbx-"
KERNEL_WRITABLE = ("ipc", "work", "home")


@dataclass(frozen=True)
class Layout:
    """The host paths of one sandbox's directories."""

    root: Path

    @property
    def ipc(self) -> Path:
        return self.root / "ipc"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def inputs(self) -> Path:
        return self.root / "inputs"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def outputs(self) -> Path:
        return self.root / "outputs"

    @classmethod
    def create(cls, kernel_uid: int | None, base: str | None = None) -> Layout:
        """Make the directories; hand the kernel-writable ones to ``kernel_uid``.

        When the host is not root it cannot chown, so those directories are made
        world-writable instead (the root directory stays private to the host user).
        """
        root = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{os.getpid()}-", dir=base or "/tmp"))
        root.chmod(0o711)
        layout = cls(root)
        for name in (*KERNEL_WRITABLE, "inputs", "outputs"):
            (root / name).mkdir(mode=0o755)
        layout.outputs.chmod(0o700)
        for name in KERNEL_WRITABLE:
            path = root / name
            if kernel_uid is not None and os.geteuid() == 0:
                os.chown(path, kernel_uid, kernel_uid)
                path.chmod(0o700)
            else:
                path.chmod(0o777)
        return layout

    def remove(self) -> None:
        """Delete everything; never raises (files may belong to another uid)."""
        shutil.rmtree(self.root, ignore_errors=True)


def resolve_inside(base: Path, relative: str, *, what: str) -> Path:
    """Map a sandbox-relative path to a host path under ``base``, refusing escapes.

    Absolute paths, ``..`` components that climb out, and symlinks anywhere on the way are
    refused: the kernel controls the workspace and could plant a link to a host file.
    """
    if not relative or "\x00" in relative:
        raise WorkspacePathError(f"{what}: empty path or NUL byte in {relative!r}")
    candidate = Path(relative)
    if candidate.is_absolute():
        raise WorkspacePathError(f"{what}: {relative!r} is absolute; give a path relative to the workspace")
    parts = candidate.parts
    if any(part == ".." for part in parts):
        raise WorkspacePathError(f"{what}: {relative!r} contains '..'; paths must stay inside the workspace")
    current = base
    for part in parts:
        current = current / part
        if current.is_symlink():
            raise WorkspacePathError(f"{what}: {relative!r} goes through a symbolic link, which is refused")
    return current


def read_regular_file(path: Path, *, what: str, max_bytes: int) -> bytes:
    """Read a file the kernel could have tampered with: no symlink, no hard link, capped size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise WorkspacePathError(f"{what}: {path.name!r} does not exist in the workspace") from None
    except OSError as exc:
        raise WorkspacePathError(f"{what}: cannot open {path.name!r} safely ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise WorkspacePathError(f"{what}: {path.name!r} is not a regular file")
        if info.st_nlink != 1:
            raise WorkspacePathError(f"{what}: {path.name!r} has {info.st_nlink} hard links; refused")
        if info.st_size > max_bytes:
            raise WorkspacePathError(f"{what}: {path.name!r} is {info.st_size} bytes, over the {max_bytes} cap")
        return handle.read(max_bytes + 1)[:max_bytes]
