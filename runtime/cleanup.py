"""Removing what a crashed host process left behind: containers, kernels, directories, mounts.

Everything pixelbox creates names its owner: containers carry the ``pixelbox.owner-pid``
label, workspaces are ``/tmp/pbx-<pid>-*``, local kernels run with ``--ipc-dir`` inside such a
workspace. Anything whose owner pid is gone is an orphan.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pixelbox.runtime.backends.cgroups import pixelbox_groups, remove_group
from pixelbox.runtime.mounts import mounts_under, unmount
from pixelbox.runtime.workspace import ROOT_PREFIX, remove_tree

_OWNER = re.compile(rf"/{ROOT_PREFIX}(\d+)-")


@dataclass
class CleanupReport:
    """What :func:`remove_orphans` removed."""

    containers: list[str] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def total(self) -> int:
        """How many things were removed."""
        return len(self.containers) + len(self.processes) + len(self.directories)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _orphaned(owner: int, everything: bool) -> bool:
    return everything or (owner != os.getpid() and not _pid_alive(owner))


Owned = Callable[[int], bool]
"""Whether resources whose owner pid is the argument are to be removed."""


def remove_orphans(*, everything: bool = False, tmp: str = "/tmp") -> CleanupReport:
    """Remove pixelbox resources whose owning process is dead (or all of them).

    ``everything=True`` also removes resources of live processes other than this one's
    callers' expectations: use it only when no pixelbox run is active on the machine.
    """
    return _remove(lambda owner: _orphaned(owner, everything), tmp)


def remove_leftovers_of(pid: int, tmp: str = "/tmp") -> CleanupReport:
    """Remove what the (dead) process ``pid`` left, and nothing of anyone else's."""
    return _remove(lambda owner: owner == pid, tmp)


def _remove(owned: Owned, tmp: str) -> CleanupReport:
    report = CleanupReport()
    _remove_containers(report, owned)
    _kill_kernels(report, owned)
    _wait_gone(report.processes)
    for entry in Path(tmp).glob(f"{ROOT_PREFIX}*-*"):
        match = _OWNER.search(str(entry) + "/")
        if match and entry.is_dir() and owned(int(match.group(1))):
            for point in [*sorted(mounts_under(f"{entry}/"), reverse=True), str(entry)]:
                unmount(Path(point))
            remove_tree(entry)
            report.directories.append(str(entry))
    _remove_cgroups(report, owned)
    return report


def _remove_cgroups(report: CleanupReport, owned: Owned) -> None:
    """Control groups of dead local kernels and removed containers (their processes are gone)."""
    for group in pixelbox_groups(ROOT_PREFIX):
        match = _OWNER.search(f"/{group.name}/")
        if match and owned(int(match.group(1))):
            error = remove_group(group)
            if error:
                report.errors.append(error)
            else:
                report.directories.append(str(group))


def _wait_gone(pids: list[int], limit: float = 5.0) -> None:
    """Wait until killed kernels have exited: a cgroup cannot be removed while it holds a process."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.02)


def _remove_containers(report: CleanupReport, owned: Owned) -> None:
    from pixelbox.runtime.backends.docker import LABEL, OWNER_LABEL, docker_client
    from pixelbox.runtime.errors import BackendUnavailable

    try:
        client = docker_client()
    except BackendUnavailable as exc:
        report.errors.append(str(exc))
        return
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner = int(container.labels.get(OWNER_LABEL, "0") or 0)
        if owned(owner):
            try:
                container.remove(force=True)
                report.containers.append(container.name)
            except Exception as exc:
                report.errors.append(f"container {container.name}: {exc}")


def _kill_kernels(report: CleanupReport, owned: Owned) -> None:
    for pid, cmdline in _kernel_processes():
        match = _OWNER.search(cmdline)
        if match and owned(int(match.group(1))):
            try:
                os.kill(int(pid), signal.SIGKILL)
                report.processes.append(int(pid))
            except OSError as exc:
                report.errors.append(f"pid {pid}: {exc}")


def leftovers_of(pid: int) -> dict[str, list[str]]:
    """What process ``pid`` still owns: workspaces, live kernel processes, cgroups, containers.

    Empty once every sandbox of ``pid`` is closed; the test session's leak check and the soak
    read it. Exited (zombie) kernels hold nothing and are not counted.
    """
    found: dict[str, list[str]] = {}
    prefix = f"{ROOT_PREFIX}{pid}-"
    dirs = [str(p) for p in Path("/tmp").glob(f"{prefix}*")]
    kernels = [f"{n}: {cmd}" for n, cmd in _kernel_processes() if prefix in cmd and not _zombie(n)]
    groups = [str(p) for p in pixelbox_groups(prefix)]
    mounts = mounts_under(f"/tmp/{prefix}")
    for key, items in (("directories", dirs), ("kernels", kernels), ("cgroups", groups), ("mounts", mounts)):
        if items:
            found[key] = items
    containers = _containers_of(pid)
    if containers:
        found["containers"] = containers
    return found


def _kernel_processes() -> list[tuple[str, str]]:
    """(pid, command line) of every pixelbox kernel process on the machine."""
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmd = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "pixelbox.kernel" in cmd:
                out.append((entry.name, cmd))
    return out


def _zombie(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _containers_of(pid: int) -> list[str]:
    from pixelbox.runtime.backends.docker import LABEL, OWNER_LABEL, docker_client
    from pixelbox.runtime.errors import BackendUnavailable

    try:
        client = docker_client()
    except BackendUnavailable:
        return []
    return [c.name for c in client.containers.list(all=True, filters={"label": [LABEL, f"{OWNER_LABEL}={pid}"]})]
