"""Host directories behind one sandbox, and safe path handling for upload/download.

Layout of ``/tmp/pbx-<host pid>.<its start time>-<random>/``:
``ipc/`` (sockets, connection and config files; kernel-writable, made afresh for every kernel
start), ``work/`` (the kernel's
working directory, shared zero-copy with the host), ``inputs/`` (task images, read-only to
the kernel), ``home/`` (HOME and caches of local kernels) and ``outputs/`` (host-only: rich
outputs decoded from messages). The host pid and start time in the name let ``pixelbox
cleanup`` find directories whose owner died, even after the pid was given to another process.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from pixelbox.runtime.errors import WorkspacePathError
from pixelbox.runtime.mounts import mount_capped, unmount

ROOT_PREFIX = "pbx-"
_OWNER = re.compile(rf"/{ROOT_PREFIX}(\d+)(?:\.(\d+))?-")


class Owner(NamedTuple):
    """The process that owns a sandbox: its pid and its start time (clock ticks after boot).

    Pids are reused (``pid_max`` is 32,768 on many hosts), so a pid alone cannot tell a dead
    owner from a live process that got its number later; the pair can. ``start`` is None only
    in names written before it was recorded.
    """

    pid: int
    start: int | None

    @property
    def tag(self) -> str:
        """How the owner appears in names: ``<pid>.<start>``."""
        return f"{self.pid}.{self.start}" if self.start is not None else str(self.pid)


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (field 22 of ``/proc/<pid>/stat``), or None if there is none."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
        return int(stat_line.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def this_owner() -> Owner:
    """This process as an owner."""
    return Owner(os.getpid(), process_start(os.getpid()))


def owner_alive(owner: Owner) -> bool:
    """Whether ``owner`` still runs: its pid exists and started when the name says it did."""
    start = process_start(owner.pid)
    return start is not None and (owner.start is None or owner.start == start)


def owner_of(text: str) -> Owner | None:
    """The owner of a sandbox, read from a path or command line naming its ``/tmp/pbx-<pid>.<start>-*``."""
    match = _OWNER.search(text)
    if match is None:
        return None
    return Owner(int(match.group(1)), int(match.group(2)) if match.group(2) else None)


def belongs_to(owner: Owner | None, pid: int, start: int | None) -> bool:
    """Whether ``owner`` is process ``pid`` that started at ``start`` (any start when None)."""
    return owner is not None and owner.pid == pid and (start is None or owner.start in (None, start))


KERNEL_WRITABLE = ("ipc", "work", "home")


@dataclass(frozen=True)
class Layout:
    """The host paths of one sandbox's directories.

    ``disk_cap`` is the byte limit in force on the whole tree (a tmpfs, see
    :mod:`pixelbox.runtime.mounts`), or ``None`` with ``disk_note`` saying why there is none.
    """

    root: Path
    disk_cap: int | None = None
    disk_note: str | None = None

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
    def create(cls, kernel_uid: int | None, base: str | None = None, disk_cap: int | None = None) -> Layout:
        """Make the directories; hand the kernel-writable ones to ``kernel_uid``.

        With ``disk_cap`` the tree lives on a tmpfs of that many bytes when the host may mount
        one. When the host is not root it cannot chown, so the kernel-writable directories are
        made world-writable instead (the root directory stays private to the host user).
        """
        root = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{this_owner().tag}-", dir=base or "/tmp"))
        note = "not enforced: no workspace_size was set" if disk_cap is None else mount_capped(root, disk_cap)
        root.chmod(0o711)
        layout = cls(root, disk_cap if note is None else None, note)
        try:
            layout._populate(kernel_uid)
        except BaseException:
            layout.remove()
            raise
        return layout

    def _populate(self, kernel_uid: int | None) -> None:
        for name in (*KERNEL_WRITABLE, "inputs", "outputs"):
            (self.root / name).mkdir(mode=0o755)
        self.outputs.chmod(0o700)
        owner = kernel_uid if os.geteuid() == 0 else None
        for name in KERNEL_WRITABLE:
            _hand_to_kernel(self.root / name, owner)
        if owner is not None:  # readable by this kernel's group only: other sandboxes' kernels see nothing
            os.chown(self.inputs, os.geteuid(), owner)
            self.inputs.chmod(0o750)

    def fresh_ipc(self, kernel_uid: int | None) -> Path:
        """Replace the IPC directory with an empty one before a kernel starts; return it.

        The kernel can write there (it binds its sockets there), so anything a cell planted
        (a directory at the ready file's temporary name, a symlink, a FIFO) would otherwise
        meet the next kernel's start and could fail every restart. Each start gets a fresh
        directory, made by the host after the previous kernel is gone.
        """
        remove_tree(self.ipc)
        self.ipc.mkdir(mode=0o755)
        _hand_to_kernel(self.ipc, kernel_uid if os.geteuid() == 0 else None)
        return self.ipc

    def add_input(self, source: Path, name: str, kernel_uid: int | None) -> None:
        """Copy a task input in, read-only to the kernel and, as root, readable by its group only."""
        target = self.inputs / name
        shutil.copyfile(source, target)
        if kernel_uid is not None and os.geteuid() == 0:
            os.chown(target, os.geteuid(), kernel_uid)
            target.chmod(0o440)
        else:
            target.chmod(0o444)

    def open_kernel_log(self) -> int:
        """The kernel's stderr log: host-only (0600), never through a link; a descriptor to close."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.root / "kernel.log", flags, 0o600)
        os.fchmod(fd, 0o600)
        return fd

    def remove(self) -> None:
        """Delete everything; never raises (files may belong to another uid).

        The kernel shapes the tree: ``shutil.rmtree`` recurses once per directory level and
        dies with ``RecursionError`` on a few thousand nested directories (which a cell makes
        in milliseconds), so whatever it leaves is removed level by level instead. A capped
        tree is simply unmounted, which frees it whole.
        """
        if self.disk_cap is not None:
            unmount(self.root)
        remove_tree(self.root)


def _hand_to_kernel(path: Path, owner: int | None) -> None:
    """Make ``path`` the kernel's: owned by its uid (0700) as root, else world-writable."""
    if owner is not None:
        os.chown(path, owner, owner)
        path.chmod(0o700)
    else:
        path.chmod(0o777)


def write_host_file(directory: Path, name: str, text: str | bytes) -> None:
    """Write a file the kernel may read but not change, never through a link the kernel planted.

    Created fresh (``O_EXCL | O_NOFOLLOW``) and owned by the host with mode 0444: in a
    kernel-writable directory the kernel can still remove the entry, never rewrite it. Text is
    written as UTF-8.
    """
    fd = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), 0o444)
        handle.write(text.encode() if isinstance(text, str) else text)


def read_kernel_file(path: Path, *, max_bytes: int) -> bytes | None:
    """Read a small file the kernel wrote, as the host: no links, no FIFOs, capped; None if absent.

    The host often runs as root, and the kernel owns the directory: a symlink there must not
    make the host read its own files, a FIFO must not block it, and a huge file must not be
    loaded. Raises :class:`WorkspacePathError` (without the host path) for anything but a
    regular file of at most ``max_bytes``.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        what = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise WorkspacePathError(f"{path.name} in the sandbox's IPC directory cannot be read: {what}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise WorkspacePathError(f"{path.name} in the sandbox's IPC directory is not a plain file")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise WorkspacePathError(f"{path.name} in the sandbox's IPC directory is over {max_bytes} bytes")
    return data


def remove_tree(root: Path) -> None:
    """Delete ``root`` and everything below it, however deep; never raises."""
    with contextlib.suppress(RecursionError):
        shutil.rmtree(root, ignore_errors=True)
    if os.path.lexists(root):
        remove_tree_flat(root)


def remove_tree_flat(root: Path) -> None:
    """Remove a directory tree of any depth with bounded recursion and descriptors.

    Each pass deletes the files directly under ``root`` and lifts the entries of every child
    directory up into ``root`` (``rename`` within one file system, links never followed),
    so the tree loses one level per pass. Never raises.
    """
    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        empty_directory(top)
    except OSError:
        pass
    finally:
        os.close(top)
    try:
        os.rmdir(root)
    except OSError:
        return


def empty_directory(top: int) -> None:
    """Delete everything below the open directory ``top``, one level per pass (see :func:`remove_tree_flat`)."""
    for _ in range(1_000_000):
        entries = list(os.scandir(top))
        if not entries:
            return
        for entry in entries:
            _flatten_entry(top, entry)


def _flatten_entry(top: int, entry: os.DirEntry[str]) -> None:
    """Delete ``entry`` if it is not a directory; otherwise lift its children and remove it."""
    if not entry.is_dir(follow_symlinks=False):
        os.unlink(entry.name, dir_fd=top)
        return
    child = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
    try:
        for inner in list(os.scandir(child)):
            os.rename(inner.name, f"{secrets.token_hex(12)}", src_dir_fd=child, dst_dir_fd=top)
    finally:
        os.close(child)
    os.rmdir(entry.name, dir_fd=top)


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


def read_workspace_file(
    workspace_host_dir: Path, relpath: str, *, what: str, max_bytes: int
) -> tuple[bytes, os.stat_result]:
    """Read a regular, singly-linked file below the workspace without following any symlink.

    Each directory component is opened relative to its parent with ``O_NOFOLLOW``, so a
    symlink anywhere on the way (or swapped in during the walk) fails instead of escaping; a
    hard link (possibly to a host file) is refused. Returns the bytes and the file's status as
    opened. ``what`` names the caller in error messages.
    """
    parts = PurePosixPath(relpath).parts
    fd = os.open(workspace_host_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            fd = open_below(fd, part, os.O_RDONLY | os.O_DIRECTORY, relpath, what)
        fd = open_below(fd, parts[-1], os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY, relpath, what)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise WorkspacePathError(f"{what} {relpath!r} is not a regular file")
        if info.st_nlink != 1:
            raise WorkspacePathError(
                f"{what} {relpath!r} has {info.st_nlink} hard links; only files the kernel wrote itself are accepted"
            )
        if info.st_size > max_bytes:
            raise WorkspacePathError(f"{what} {relpath!r} is {info.st_size} bytes, over the {max_bytes} limit")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(min(info.st_size, max_bytes) + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise WorkspacePathError(f"{what} {relpath!r} grew past the {max_bytes} byte limit while being read")
    return data, info


def write_workspace_file(base: Path, relative: str, src: bytes | Path, *, owner: int | None = None) -> Path:
    """Write ``src`` (bytes or a host file) to ``relative`` under ``base`` without following links.

    The kernel owns the workspace and can plant a symlink at any name the host is about to
    write, including a temporary one, so every step goes through directory descriptors:
    directories are entered with ``O_NOFOLLOW``, the data goes to a fresh temporary file
    created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under a random name, ownership is given with
    ``fchown`` on the open descriptor (never by path), and ``rename`` swaps it into place
    (replacing whatever entry is there, never what it points to). Missing directories are
    created and handed to ``owner`` too. Returns the host path written.
    """
    target = resolve_inside(base, relative, what="upload")
    parts = target.relative_to(base).parts
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parts[:-1]:
            fd = _enter_dir(fd, part, relative, owner)
        name = parts[-1]
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                raise WorkspacePathError(f"upload: {relative!r} exists and is not a plain file; choose another name")
        tmp = f".{name}.{secrets.token_hex(8)}.upload"
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
        try:
            with os.fdopen(os.dup(out), "wb") as handle:
                if isinstance(src, bytes):
                    handle.write(src)
                else:
                    with open(src, "rb") as source:
                        shutil.copyfileobj(source, handle)
            if owner is not None:
                os.fchown(out, owner, owner)
        finally:
            os.close(out)
        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)
    return target


def _enter_dir(dir_fd: int, name: str, relative: str, owner: int | None) -> int:
    """Open (creating if needed) directory ``name`` under ``dir_fd``; close ``dir_fd``."""
    created = False
    try:
        os.mkdir(name, 0o755, dir_fd=dir_fd)
        created = True
    except FileExistsError:
        pass
    try:
        opened = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        raise WorkspacePathError(
            f"upload: {relative!r} goes through {name!r}, which is a symbolic link or not a directory"
        ) from exc
    if created and owner is not None:
        os.fchown(opened, owner, owner)
    os.close(dir_fd)
    return opened


def open_below(dir_fd: int, name: str, flags: int, relpath: str, what: str) -> int:
    """Open ``name`` under ``dir_fd`` without following a symlink.

    On success the returned descriptor replaces ``dir_fd``, which is closed; on failure
    ``dir_fd`` stays open for the caller's cleanup.
    """
    try:
        opened = os.open(name, flags | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise WorkspacePathError(f"{what} {relpath!r}: {name!r} is a symlink or not a directory") from exc
        if exc.errno == errno.ENOENT:
            raise WorkspacePathError(f"{what} {relpath!r} does not exist in the workspace") from exc
        raise WorkspacePathError(f"{what} {relpath!r} cannot be opened: {exc.strerror}") from exc
    os.close(dir_fd)
    return opened
