"""How a local kernel process confines itself before it runs any code: one description, two users.

A cold local kernel applies it in the pre-exec hook of ``subprocess.Popen`` (between fork and
exec); a kernel forked from the zygote (:mod:`pixelbox.kernel.zygote`) applies it in the child
right after the fork, before it reads its configuration. Both therefore get the same walls, in
the same order, from the same code:

1. join the kernel's control groups (root is needed to write ``cgroup.procs``);
2. as root: a private network namespace (only a downed loopback), a private IPC namespace (no
   System V segment or queue of another kernel, none outliving this one) and a private mount namespace
   whose ``/dev/shm`` and ``/tmp`` are fresh size-capped tmpfs (the host's are world-writable,
   outside every cap, what a kernel leaves there would outlive it, and every kernel would see the
   names of every other's files); the sandbox's own directory under ``/tmp`` is bound back in, and
   so are, read-only, the few host directories under ``/tmp`` the kernel's interpreter runs from
   (a checkout or virtualenv there: CI may check out anywhere), nothing else of the host's ``/tmp``,
   whose other mounts (other sandboxes' directories) are detached, gone from the mount table too;
3. rlimits (processes, file size, descriptors, no core files; address space only when no memory
   cgroup holds the limit);
4. drop to the kernel's own uid and gid (no supplementary groups), which also drops every
   capability;
5. ``umask 077`` (what the kernel creates is its own) and ``no_new_privs`` (no setuid binary can
   give privileges back).

The description travels as JSON (the zygote's fork request), so it holds only numbers and paths:
standard library only, like the rest of the contract.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import resource
import socket
import struct
from dataclasses import dataclass
from typing import Any

CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
"""A kernel's own System V IPC and POSIX message queues: a 0666 segment would reach every other kernel
(any uid) and outlive its maker."""
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
MNT_DETACH = 0x2
SHM = "/dev/shm"
TMP = "/tmp"
PR_SET_DUMPABLE = 4
"""prctl option: a process that changed its uid without exec is made undumpable, and then cannot read
its own ``/proc/self`` files; a forked kernel is made dumpable again, as exec makes a cold one."""
PR_SET_NO_NEW_PRIVS = 38
"""prctl option: execve() can no longer raise privileges (setuid/setgid bits, file capabilities)."""

_libc = ctypes.CDLL(None, use_errno=True)
_unshare, _mount, _umount2, _prctl = _libc.unshare, _libc.mount, _libc.umount2, _libc.prctl
"""Resolved at import: a pre-exec hook should not have to look symbols up between fork and exec."""


@dataclass(frozen=True)
class Confinement:
    """The walls one local kernel puts up around itself (see the module docstring for the order).

    ``uid`` is None when the host is not root (the kernel keeps the host's uid, network and
    ``/dev/shm``); ``rlimits`` are ``(resource.RLIMIT_*, value)`` pairs; ``shm_size`` is the
    byte cap of the private ``/dev/shm`` and ``/tmp``; ``keep`` is the sandbox's directory, which
    stays visible at its path when it lies in ``/tmp``; ``shared`` are host directories the kernel
    runs from (interpreter prefix, virtualenv, the pixelbox package), which stay visible, read-only,
    at their paths when they lie in ``/tmp`` (the host chooses them, never the kernel).
    """

    procs_files: tuple[str, ...]
    uid: int | None
    rlimits: tuple[tuple[int, int], ...]
    shm_size: int
    keep: str | None = None
    shared: tuple[str, ...] = ()

    def apply(self, *, isolated: bool = False) -> None:
        """Confine the calling process (single-threaded: after fork); raises ``OSError`` on failure.

        ``isolated``: the process made its network and IPC namespaces already (:func:`isolate`: a
        spare kernel does, ahead of its request), so they are not made again.
        """
        for procs in self.procs_files:
            with contextlib.suppress(OSError), open(procs, "w") as handle:
                handle.write(str(os.getpid()))
        if self.uid is not None:
            if not isolated and not isolate():
                raise OSError(ctypes.get_errno(), "the kernel's network and IPC namespaces could not be made")
            private_shm(f"size={self.shm_size},mode=1777".encode())
            private_tmp(f"size={self.shm_size},mode=1777".encode(), self.keep, self.shared)
        for which, value in self.rlimits:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (value, value))
        if self.uid is not None:
            os.setgroups([])
            os.setgid(self.uid)
            os.setuid(self.uid)
        os.umask(0o077)  # what the kernel creates is its own: other sandboxes' kernels read nothing
        _prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (the zygote's fork request carries it)."""
        return {
            "procs_files": list(self.procs_files),
            "uid": self.uid,
            "rlimits": [list(pair) for pair in self.rlimits],
            "shm_size": self.shm_size,
            "keep": self.keep,
            "shared": list(self.shared),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Confinement:
        """Inverse of :meth:`to_dict`; ``ValueError`` on a malformed description."""
        try:
            uid = data["uid"]
            return cls(
                procs_files=tuple(str(p) for p in data["procs_files"]),
                uid=None if uid is None else int(uid),
                rlimits=tuple((int(which), int(value)) for which, value in data["rlimits"]),
                shm_size=int(data["shm_size"]),
                keep=None if data.get("keep") is None else str(data["keep"]),
                shared=tuple(str(path) for path in data.get("shared", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed confinement: {exc}") from None


def isolate() -> bool:
    """Move the calling process into new, empty network and IPC namespaces (step 2's first part); False
    when they cannot be made (not root). Nothing in them depends on a sandbox, so a process forked
    for one sandbox may make them before it knows which (making a network namespace takes ~0.7 ms
    here, and waits on the kernel's network locks when other namespaces come and go)."""
    return bool(_unshare(CLONE_NEWNET | CLONE_NEWIPC) == 0)


def private_shm(shm_options: bytes) -> None:
    """Give the calling process a ``/dev/shm`` of its own: a capped tmpfs in a private mount namespace.

    In a mount namespace of its own (mounts not propagated back), a fresh tmpfs covers the
    host's ``/dev/shm``; its pages count against the kernel's memory cgroup and vanish with the
    kernel's last process. If that cannot be done the kernel is not started (this raises).
    """
    mount = _mount
    if (
        _unshare(CLONE_NEWNS) != 0
        or mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0
        or mount(b"tmpfs", SHM.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, shm_options) != 0
    ):
        raise OSError(ctypes.get_errno(), f"a private {SHM} could not be mounted for the kernel")


def private_tmp(tmpfs_options: bytes, keep: str | None, shared: tuple[str, ...] = ()) -> None:
    """Cover ``/tmp`` with a fresh capped tmpfs (in the mount namespace :func:`private_shm` made),
    binding ``keep`` (the sandbox's own directory, when it lies in ``/tmp``) back at its path, and
    each of ``shared`` that lies in ``/tmp`` back at its path read-only.

    Every directory is opened before the tmpfs hides it, and bound from that descriptor after.
    A ``shared`` directory that does not exist is left out (the kernel then fails as it would
    without the bind, saying which module or file it misses).
    """
    kept = keep if keep is not None and os.path.dirname(keep.rstrip("/")) == TMP else None
    binds = ([(kept, False)] if kept else []) + [(path, True) for path in under_tmp(shared)]
    fds: list[tuple[str, bool, int]] = []
    try:
        for path, read_only in binds:
            try:
                fds.append((path, read_only, os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)))
            except OSError:
                if not read_only:
                    raise
        detach_other_mounts([path for path, _, _ in fds])
        if _mount(b"tmpfs", TMP.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, tmpfs_options) != 0:
            raise OSError(ctypes.get_errno(), f"a private {TMP} could not be mounted for the kernel")
        for path, read_only, fd in fds:
            _bind(fd, path, read_only)
    finally:
        for _, _, fd in fds:
            os.close(fd)


_OCTAL = re.compile(rb"\\([0-7]{3})")
"""mountinfo writes space, tab, newline and backslash in a path as octal escapes (``\\040``)."""


def detach_other_mounts(kept: list[str]) -> None:
    """Detach, in this mount namespace, every mount below ``/tmp`` but those at, under or above a
    ``kept`` path. The private tmpfs covers them anyway; detached, they are also gone from the
    kernel's mount table, which would otherwise list other sandboxes' directories by name. A mount
    that cannot be detached (gone meanwhile) stays covered."""
    with open("/proc/self/mountinfo", "rb") as handle:
        fields = [line.split() for line in handle]
    points = {_OCTAL.sub(lambda m: bytes([int(m.group(1), 8)]), f[4]) for f in fields if len(f) > 4}
    keep = [os.fsencode(path) for path in kept]
    for point in sorted(points, key=len, reverse=True):  # the deepest first
        if point.startswith(TMP.encode() + b"/") and not any(
            point == k or point.startswith(k + b"/") or k.startswith(point + b"/") for k in keep
        ):
            _umount2(point, MNT_DETACH)


def under_tmp(paths: tuple[str, ...]) -> list[str]:
    """The absolute, normalised ``paths`` strictly inside ``/tmp``, without any that lies in another."""
    inside = sorted({os.path.normpath(p) for p in paths if os.path.isabs(p)})
    inside = [p for p in inside if p.startswith(TMP + "/")]
    return [p for p in inside if not any(p.startswith(other + "/") for other in inside)]


def _bind(fd: int, path: str, read_only: bool) -> None:
    """Bind the directory open at ``fd`` at ``path`` in the private ``/tmp`` (made there first):
    the sandbox's own directory with its submounts, a shared one alone and read-only."""
    if read_only:
        _make_dirs(path)
    else:
        os.mkdir(path, 0o711)
    source = f"/proc/self/fd/{fd}".encode()
    if _mount(source, path.encode(), None, MS_BIND if read_only else MS_BIND | MS_REC, None) != 0:
        raise OSError(ctypes.get_errno(), f"{path} could not be bound into the private {TMP}")
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
    if read_only and _mount(None, path.encode(), None, flags, None) != 0:
        raise OSError(ctypes.get_errno(), f"{path} could not be made read-only in the private {TMP}")


def _make_dirs(path: str) -> None:
    """Make ``path`` and its missing parents in the private ``/tmp``, each 0755 (root's: the kernel
    reaches what is bound there and writes nothing beside it)."""
    current = TMP
    for part in os.path.relpath(path, TMP).split("/"):
        current = f"{current}/{part}"
        with contextlib.suppress(FileExistsError):
            os.mkdir(current)
            os.chmod(current, 0o755)


HEADER = struct.Struct("!I")
MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""Cap on one fork request (the environment is its only open-ended part)."""


@dataclass(frozen=True)
class ForkRequest:
    """What a kernel forked from the zygote needs to become one sandbox's kernel.

    Sent by the host over its own connection to the zygote and read by the forked child alone
    (the zygote itself never reads it, so it never holds a sandbox's environment): the IPC
    directory, the working directory, the whole environment, the command line the kernel shows
    in ``/proc`` (as a cold kernel's, so tools that find kernels by command line see it), and
    the confinement. The kernel's stderr log travels beside it as a descriptor.
    """

    ipc_dir: str
    cwd: str
    env: dict[str, str]
    argv: tuple[str, ...]
    confinement: Confinement

    def to_bytes(self) -> bytes:
        """The framed request: a 4-byte length, then JSON."""
        body = json.dumps(
            {
                "ipc_dir": self.ipc_dir,
                "cwd": self.cwd,
                "env": self.env,
                "argv": list(self.argv),
                "confinement": self.confinement.to_dict(),
            }
        ).encode()
        if len(body) > MAX_REQUEST_BYTES:
            raise ValueError(f"fork request of {len(body)} bytes exceeds {MAX_REQUEST_BYTES} (environment too large)")
        return HEADER.pack(len(body)) + body

    @classmethod
    def from_json(cls, body: bytes) -> ForkRequest:
        """Parse a request body; ``ValueError`` when it is malformed."""
        try:
            data = json.loads(body)
            env = {str(k): str(v) for k, v in dict(data["env"]).items()}
            return cls(
                str(data["ipc_dir"]),
                str(data["cwd"]),
                env,
                tuple(str(a) for a in data["argv"]),
                Confinement.from_dict(data["confinement"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed fork request: {exc}") from None


def send_request(conn: socket.socket, request: ForkRequest, log_fd: int) -> None:
    """Send ``request`` with the kernel's log descriptor attached (SCM_RIGHTS)."""
    data = request.to_bytes()
    sent = socket.send_fds(conn, [data[: HEADER.size]], [log_fd])
    conn.sendall(data[sent:])


def receive_request(conn: socket.socket) -> tuple[ForkRequest, int]:
    """Read one request and its log descriptor (the forked child does, never the zygote)."""
    head, fds, _, _ = socket.recv_fds(conn, HEADER.size, 1)
    if len(fds) != 1 or len(head) != HEADER.size:
        raise ValueError("fork request without its log descriptor")
    (size,) = HEADER.unpack(head)
    if size > MAX_REQUEST_BYTES:
        raise ValueError(f"fork request of {size} bytes exceeds {MAX_REQUEST_BYTES}")
    body = bytearray()
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ValueError("fork request cut short")
        body += chunk
    return ForkRequest.from_json(bytes(body)), fds[0]
