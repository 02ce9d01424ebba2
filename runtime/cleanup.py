"""Removing what a crashed host process left behind: containers, kernels, directories, mounts.

Everything pixelbox creates names its owner: containers carry the ``pixelbox.owner-pid``
label, workspaces are ``/tmp/pbx-<pid>-*``, local kernels run with ``--ipc-dir`` inside such a
workspace. Anything whose owner pid is gone is an orphan. Each registered backend removes what
it runs (:meth:`Backend.remove_orphans <pixelbox.runtime.backends.base.Backend.remove_orphans>`);
workspaces, mounts and control groups are removed here, after the kernels that held them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pixelbox.runtime.backends import BACKENDS
from pixelbox.runtime.backends.base import CleanupReport, Owned
from pixelbox.runtime.backends.cgroups import pixelbox_groups, remove_group
from pixelbox.runtime.mounts import mounts_under, unmount
from pixelbox.runtime.workspace import ROOT_PREFIX, owner_of, remove_tree

__all__ = ["CleanupReport", "leftovers_of", "remove_leftovers_of", "remove_orphans"]


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
    for entry in BACKENDS.entries():
        entry.load().remove_orphans(owned, report)
    _wait_gone(report.processes)
    for directory in Path(tmp).glob(f"{ROOT_PREFIX}*-*"):
        owner = owner_of(str(directory) + "/")
        if owner is not None and directory.is_dir() and owned(owner):
            for point in [*sorted(mounts_under(f"{directory}/"), reverse=True), str(directory)]:
                unmount(Path(point))
            remove_tree(directory)
            report.directories.append(str(directory))
    _remove_cgroups(report, owned)
    return report


def _remove_cgroups(report: CleanupReport, owned: Owned) -> None:
    """Control groups of dead local kernels and removed containers (their processes are gone)."""
    for group in pixelbox_groups(ROOT_PREFIX):
        owner = owner_of(f"/{group.name}/")
        if owner is not None and owned(owner):
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


def leftovers_of(pid: int) -> dict[str, list[str]]:
    """What process ``pid`` still owns: workspaces, cgroups, mounts, and what each backend still runs
    for it (live kernel processes, containers).

    Empty once every sandbox of ``pid`` is closed; the test session's leak check and the soak
    read it. Exited (zombie) kernels hold nothing and are not counted.
    """
    found: dict[str, list[str]] = {}
    prefix = f"{ROOT_PREFIX}{pid}-"
    dirs = [str(p) for p in Path("/tmp").glob(f"{prefix}*")]
    groups = [str(p) for p in pixelbox_groups(prefix)]
    mounts = mounts_under(f"/tmp/{prefix}")
    for key, items in (("directories", dirs), ("cgroups", groups), ("mounts", mounts)):
        if items:
            found[key] = items
    for entry in BACKENDS.entries():
        found.update(entry.load().leftovers_of(pid))
    return found
