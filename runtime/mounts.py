"""A size-capped tmpfs under each sandbox's directories: the kernel cannot fill the host's disk.

The workspace is shared with the host, so a container's read-only root and capped ``/tmp`` do
not bound it: without a cap, a cell that writes file after file fills the disk under ``/tmp``
for every process on the machine. When the host may mount (it runs as root), each sandbox's
directory becomes its own tmpfs with a byte and an inode limit; writes beyond them fail with
``ENOSPC`` in the kernel. Pages written by the kernel are also charged to its memory cgroup,
so the space is bounded by the memory limit too. Unmounting frees everything at once, however
deep the tree the kernel built.
"""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path
from typing import NamedTuple

_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MNT_DETACH = 0x2
BYTES_PER_INODE = 16 * 1024
"""One inode per 16 KiB of quota (65,536 files for 1 GiB): empty files cost kernel memory too."""
MIN_INODES = 4096

_libc: ctypes.CDLL | None = None


def _c() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def inodes_for(size: int) -> int:
    """The inode limit that goes with a byte limit."""
    return max(MIN_INODES, size // BYTES_PER_INODE)


def mount_capped(path: Path, size: int, mode: int = 0o711) -> str | None:
    """Mount a tmpfs of ``size`` bytes on the empty directory ``path``.

    Returns ``None`` when the cap is in force, else why not (the caller reports it in
    ``Sandbox.info``; the sandbox still works, without the cap).
    """
    if os.geteuid() != 0:
        return f"not enforced: mounting a tmpfs needs root (the host runs as uid {os.geteuid()})"
    options = f"size={size},nr_inodes={inodes_for(size)},mode={mode:o}".encode()
    if _c().mount(b"tmpfs", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        code = ctypes.get_errno()
        name = errno.errorcode.get(code, str(code))
        return f"not enforced: mounting a tmpfs on {path} failed ({name}: {os.strerror(code)})"
    return None


def unmount(path: Path) -> bool:
    """Detach the mount at ``path`` (lazily, so a container still using it is no obstacle).

    Returns whether something was mounted there; never raises.
    """
    return _c().umount2(os.fsencode(path), _MNT_DETACH) == 0


def unmount_all_under(directory: Path) -> bool:
    """Detach every mount below ``directory``, deepest first; whether none is left there."""
    for point in sorted(mounts_under(f"{directory}/"), reverse=True):
        unmount(Path(point))
    return not mounts_under(f"{directory}/")


class Mount(NamedTuple):
    """One line of ``/proc/self/mountinfo``: where it is mounted, what directory of its file system
    it shows (``root``: a bind mount shows a directory below the file system's top), the device and id."""

    point: str
    root: str
    device: str
    id: str = ""
    """Its mount id (unique while it is mounted): tells a mount from a later one on the same point."""


def mount_table() -> list[Mount]:
    """The mounts of this mount namespace (none if ``/proc`` cannot be read)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    fields = [line.split() for line in lines]
    return [Mount(_unescape(f[4]), _unescape(f[3]), f[2], f[0]) for f in fields if len(f) > 4]


def mounts_under(prefix: str) -> list[str]:
    """Mount points of this mount namespace whose path starts with ``prefix``."""
    return [mount.point for mount in mount_table() if mount.point.startswith(prefix)]


def mounts_exposing(path: Path) -> list[str]:
    """Mount points through which removing ``path`` would reach beyond it or be seen elsewhere: those at
    or below ``path``, and bind mounts elsewhere that show ``path`` or a directory in it (as a killed
    ``runc restore`` leaves the container's root bound at ``<state>/criu-root``). A bind of the same
    file system has the same ``st_dev``, so the mount table is what tells."""
    real = os.path.realpath(path)
    table = mount_table()
    found = [m.point for m in table if _within(m.point, real)]
    try:
        info = os.stat(real)
    except OSError:
        return found
    device = f"{os.major(info.st_dev)}:{os.minor(info.st_dev)}"
    homes = [m for m in table if m.device == device and _within(real, m.point)]
    if not homes:
        return found
    home = max(homes, key=lambda m: len(m.point))
    inside = home.root.rstrip("/") + real[len(home.point.rstrip("/")) :]  # ``path`` within its file system
    for mount in table:
        # a bind of a directory since deleted shows as ``<old path>//deleted``: not this one
        shown = not mount.root.endswith("//deleted") and _within(mount.root, inside)
        if mount is not home and mount.device == device and shown:
            found.append(mount.point)
    return sorted(set(found))


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def deleted_mounts_under(prefix: str) -> list[str]:
    """Mount points under ``prefix`` (this mount namespace) whose source directory was deleted."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    fields = [line.split() for line in lines]
    found = [(_unescape(f[4]), _unescape(f[3])) for f in fields if len(f) > 4]
    return [point for point, root in found if point.startswith(prefix) and root.endswith("//deleted")]


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (``\\040``)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)
