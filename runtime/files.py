"""``Sandbox.files``: list, read, write and remove files in the sandbox's own directories.

Two directories belong to a sandbox and are reachable here: the workspace (the kernel's working
directory, readable and writable) and the inputs (the task's images, read-only). Paths are given
as the kernel sees them (``/workspace/a/b.png``, ``/inputs/x.png`` on Docker) or relative to the
workspace. Every access walks directory descriptors without following links, as uploads and
downloads do (:mod:`pixelbox.runtime.workspace`): the kernel owns the workspace and may plant a
symbolic link or a hard link to a host file anywhere in it, so a link is listed as a link and
never followed, and a file with other hard links is never read.
"""

from __future__ import annotations

import builtins
import os
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pixelbox.runtime.errors import WorkspacePathError
from pixelbox.runtime.workspace import (
    empty_directory,
    open_below,
    read_workspace_file,
    resolve_inside,
    write_workspace_file,
)

MAX_READ_BYTES = 512 * 1024**2
"""Largest file :meth:`SandboxFiles.read` returns (the same cap as ``Sandbox.download``)."""
MAX_LISTED = 10_000
"""Most entries one :meth:`SandboxFiles.list` returns (a cell can make millions of files)."""

Kind = Literal["file", "dir", "link", "other"]
LINK_ITSELF = ("remove", "exists")
"""Calls whose last path component may be a symbolic link (they act on the link, never its target)."""


@dataclass(frozen=True)
class FileInfo:
    """One entry of a sandbox directory: its in-sandbox path, name, kind and size in bytes."""

    path: str
    name: str
    kind: Kind
    size: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable view."""
        return asdict(self)


@dataclass(frozen=True)
class Place:
    """A path resolved to one of the sandbox's directories."""

    host_root: Path
    kernel_root: str
    relative: str
    writable: bool

    @property
    def kernel_path(self) -> str:
        return f"{self.kernel_root}/{self.relative}" if self.relative else self.kernel_root


class SandboxFiles:
    """The files of one sandbox (``sandbox.files``); every call checks the sandbox is open."""

    def __init__(self, roots: Callable[[], dict[str, tuple[Path, bool]]], owner: Callable[[], int | None]) -> None:
        self._roots = roots
        self._owner = owner

    def list(self, path: str = "", *, recursive: bool = False) -> builtins.list[FileInfo]:
        """The entries of directory ``path`` (the workspace by default), sorted by path.

        With ``recursive`` the whole tree below it, links listed but never followed; at most
        :data:`MAX_LISTED` entries (more raises, saying so).
        """
        place = self._locate(path, "list")
        fd = self._open_dir(place, "list")
        found: list[FileInfo] = []
        try:
            _walk(fd, place.kernel_path, recursive, found)
        finally:
            os.close(fd)
        return sorted(found, key=lambda info: info.path)

    def read(self, path: str) -> bytes:
        """The bytes of regular file ``path`` (no links on the way, no hard links, capped size)."""
        place = self._locate(path, "read")
        if not place.relative:
            raise WorkspacePathError(f"read: {path!r} is a directory")
        return read_workspace_file(place.host_root, place.relative, what="read", max_bytes=MAX_READ_BYTES)[0]

    def write(self, path: str, data: bytes | str) -> str:
        """Write ``data`` (text is UTF-8 encoded) to ``path`` in the workspace; its in-sandbox path.

        Missing directories are made; a link at the destination is replaced, never written through.
        """
        if not isinstance(data, (bytes, str)):
            raise TypeError(f"data must be bytes or str, got {type(data).__name__}")
        place = self._locate(path, "write", writable=True)
        payload = data.encode("utf-8") if isinstance(data, str) else data
        write_workspace_file(place.host_root, place.relative, payload, owner=self._owner())
        return place.kernel_path

    def remove(self, path: str) -> None:
        """Delete file, link or directory tree ``path`` in the workspace (a link itself, never its target)."""
        place = self._locate(path, "remove", writable=True)
        if not place.relative:
            raise WorkspacePathError("remove: the workspace itself cannot be removed; remove its entries")
        parts = PurePosixPath(place.relative).parts
        fd = os.open(place.host_root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for part in parts[:-1]:
                fd = open_below(fd, part, os.O_RDONLY | os.O_DIRECTORY, place.relative, "remove")
            _remove_entry(fd, parts[-1], place.relative)
        finally:
            os.close(fd)

    def exists(self, path: str) -> bool:
        """Whether ``path`` names an entry (a link counts, and is not followed)."""
        place = self._locate(path, "exists")
        if not place.relative:
            return True
        parent, _, name = place.relative.rpartition("/")
        try:
            fd = self._open_dir(Place(place.host_root, place.kernel_root, parent, place.writable), "exists")
        except WorkspacePathError:
            return False
        try:
            os.stat(name, dir_fd=fd, follow_symlinks=False)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    # -- paths ---------------------------------------------------------------------------------

    def _locate(self, path: str, what: str, *, writable: bool = False) -> Place:
        """Which sandbox directory ``path`` is in, and where below it."""
        if not isinstance(path, str):
            raise TypeError(f"{what}: path must be a str, got {type(path).__name__}")
        roots = self._roots()
        workspace = next(iter(roots))
        chosen, relative = workspace, path
        for kernel_root in roots:
            if path == kernel_root or path.startswith(kernel_root.rstrip("/") + "/"):
                chosen, relative = kernel_root, path[len(kernel_root) :]
                break
        else:
            if path.startswith("/"):
                where = " or ".join(roots)
                raise WorkspacePathError(f"{what}: {path!r} is outside the sandbox's directories ({where})")
        host_root, can_write = roots[chosen]
        relative = relative.strip("/")
        if writable and not can_write:
            raise WorkspacePathError(f"{what}: {path!r} is in {chosen}, which is read-only")
        parent, _, last = relative.rpartition("/")
        if last in (".", ".."):
            raise WorkspacePathError(f"{what}: {path!r} must name an entry, not {last!r}")
        checked = parent if what in LINK_ITSELF else relative
        if checked:  # remove and exists act on a link itself: only the way to it must hold no link
            resolve_inside(host_root, checked, what=what)
        return Place(host_root, chosen.rstrip("/"), str(PurePosixPath(relative)) if relative else "", can_write)

    def _open_dir(self, place: Place, what: str) -> int:
        fd = os.open(place.host_root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for part in PurePosixPath(place.relative).parts if place.relative else ():
                fd = open_below(fd, part, os.O_RDONLY | os.O_DIRECTORY, place.relative, what)
        except BaseException:
            os.close(fd)
            raise
        return fd


def _walk(fd: int, kernel_dir: str, recursive: bool, found: list[FileInfo]) -> None:
    """Append the entries under open directory ``fd`` (depth first, an explicit stack, no links followed)."""
    stack = [(os.dup(fd), kernel_dir)]
    try:
        while stack:
            current, prefix = stack.pop()
            try:
                for entry in os.scandir(current):
                    info = entry.stat(follow_symlinks=False)
                    kind = _kind(info.st_mode)
                    found.append(FileInfo(f"{prefix}/{entry.name}", entry.name, kind, int(info.st_size)))
                    if len(found) > MAX_LISTED:
                        raise WorkspacePathError(
                            f"list: more than {MAX_LISTED} entries under {kernel_dir}; list a smaller directory"
                        )
                    if recursive and kind == "dir":
                        child = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=current)
                        stack.append((child, f"{prefix}/{entry.name}"))
            finally:
                os.close(current)
    finally:
        for left, _ in stack:
            os.close(left)


def _kind(mode: int) -> Kind:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def _remove_entry(parent: int, name: str, relative: str) -> None:
    """Unlink ``name`` under ``parent``; a directory is emptied through descriptors first."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        raise WorkspacePathError(f"remove: {relative!r} does not exist") from None
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    duplicate = os.dup(parent)
    try:
        child = open_below(duplicate, name, os.O_RDONLY | os.O_DIRECTORY, relative, "remove")
    except BaseException:
        os.close(duplicate)
        raise
    try:
        empty_directory(child)
    finally:
        os.close(child)
    os.rmdir(name, dir_fd=parent)
