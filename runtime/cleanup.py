"""Removing what a crashed host process left behind: containers, kernels, directories, mounts.

Everything pixelbox creates names its owner, a pid and the process's start time (pids are
reused): containers carry the ``pixelbox.owner-pid`` and ``pixelbox.owner-start`` labels,
workspaces are ``/tmp/pbx-<pid>.<start>-*``, local kernels run with ``--ipc-dir`` inside such a
workspace. Anything whose owner pid is gone is an orphan. Each registered backend removes what
it runs (:meth:`Backend.remove_orphans <pixelbox.runtime.backends.base.Backend.remove_orphans>`);
workspaces, mounts and control groups are removed here, after the kernels that held them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pixelbox.runtime.backends import BACKENDS, restore
from pixelbox.runtime.backends import spares as parked
from pixelbox.runtime.backends import zygote as zygotes
from pixelbox.runtime.backends.base import CleanupReport, Owned
from pixelbox.runtime.backends.cgroups import pixelbox_groups, remove_group
from pixelbox.runtime.mounts import mounts_under, unmount, unmount_all_under
from pixelbox.runtime.workspace import ROOT_PREFIX, Owner, belongs_to, owner_alive, owner_of, process_start, remove_tree

__all__ = ["CleanupReport", "leftovers_of", "remove_leftovers_of", "remove_orphans"]


def _orphaned(owner: Owner, everything: bool) -> bool:
    return everything or not owner_alive(owner)


def remove_orphans(*, everything: bool = False, tmp: str = "/tmp") -> CleanupReport:
    """Remove pixelbox resources whose owning process is dead (or all of them).

    An owner is its pid and its start time, so a live process that got a dead owner's pid is
    not mistaken for it. ``everything=True`` also removes resources of live processes: use it
    only when no pixelbox run is active on the machine.
    """
    return _remove(lambda owner: _orphaned(owner, everything), tmp)


def remove_leftovers_of(pid: int, tmp: str = "/tmp") -> CleanupReport:
    """Remove what the dead process ``pid`` left, and nothing of anyone else's (nor of a live process
    that has its pid now)."""
    return _remove(lambda owner: owner.pid == pid and not owner_alive(owner), tmp)


def _remove(owned: Owned, tmp: str) -> CleanupReport:
    report = CleanupReport()
    for entry in BACKENDS.entries():
        entry.load().remove_orphans(owned, report)
    _wait_gone(report.processes)
    for directory in Path(tmp).glob(f"{ROOT_PREFIX}*-*"):
        owner = owner_of(str(directory) + "/")
        if owner is not None and directory.is_dir() and owned(owner):
            unmount_all_under(directory)
            unmount(directory)
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


def leftovers_of(pid: int, start: int | None = None) -> dict[str, list[str]]:
    """What process ``pid`` (started at ``start``; by default when the live ``pid`` started) still owns:
    workspaces, cgroups, mounts, and what each backend still runs for it (kernels, containers).

    Empty once every sandbox of that process is closed; the test session's leak check and the soak
    read it. A live zygote of this process (the local backend's fork server, shared by its sandboxes
    and stopped with them at exit) is no leftover, nor are its spare kernel's groups; a dead one's
    directory and groups are. Nor are this process's container spares (:mod:`.backends.spares`: kernels
    parked ahead in layouts of their own, removed with the sandboxes at exit): their layouts, mounts,
    cgroups and containers are left out, as are its checkpoint templates' (one being made runs a
    container). What another process with the same pid left (pids are reused) is not counted, and
    exited (zombie) kernels hold nothing.
    """
    start = start if start is not None else process_start(pid)

    def mine(text: str) -> bool:
        return belongs_to(owner_of(text), pid, start)

    found: dict[str, list[str]] = {}
    prefix = f"{ROOT_PREFIX}{pid}"
    helpers = {z["root"] for z in zygotes.running() if z["alive"]} if pid == os.getpid() else set()
    dirs = [str(p) for p in Path("/tmp").glob(f"{prefix}*") if mine(f"{p}/") and str(p) not in helpers]
    spares = tuple(f"{Path(root).name}-spare-" for root in helpers)  # a live zygote's spare kernels' groups
    groups = [str(p) for p in pixelbox_groups(prefix) if mine(f"/{p.name}/") and not p.name.startswith(spares)]
    mounts = [m for m in mounts_under(f"/tmp/{prefix}") if mine(f"{m}/")]
    for key, items in (("directories", dirs), ("cgroups", groups), ("mounts", mounts)):
        if items:
            found[key] = items
    for entry in BACKENDS.entries():
        found.update(entry.load().leftovers_of(pid, start))
    return _without_helpers(found) if pid == os.getpid() else found


def _without_helpers(found: dict[str, list[str]]) -> dict[str, list[str]]:
    """``found`` less what belongs to this process's spares (every name of theirs holds a layout's name) and
    checkpoint templates (one being made runs a container)."""
    names = [Path(root).name for root in parked.roots()] + sorted(restore.template_names())
    kept = {key: [item for item in items if not any(name in item for name in names)] for key, items in found.items()}
    return {key: items for key, items in kept.items() if items}
