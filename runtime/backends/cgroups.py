"""Per-kernel control groups: real limits for local kernels, OOM evidence for containers.

rlimits alone are a weak stand-in: RLIMIT_AS caps *virtual* memory (which breaks libraries
that reserve large address ranges) and ends a memory bomb as a MemoryError rather than the
OOM kill a container would report. When the host runs as root and cgroups are mounted, each
local kernel gets its own group, in cgroup v1 (one hierarchy per controller) or v2 (unified).

A container's own group vanishes as soon as it exits, and Docker's ``OOMKilled`` flag comes
from a shim that drops the kill when that group is already gone (often under gVisor on a
busy host). So a container can run *inside* a pixelbox group that holds its memory limit:
that group outlives the container and records the kill (v2: ``memory.events``; v1: an
eventfd on ``memory.oom_control``, since v1 counts kills only in the victim's own group).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

V1_ROOT = Path("/sys/fs/cgroup")
GROUP = "pixelbox"
CFS_PERIOD_US = 100_000
BACKSTOP_MARGIN = 4 * 1024**2
"""When a pixelbox group holds a container's memory limit, the container's own limit is this much
higher: the group then always hits its limit first (so the kill is recorded there), and the
container limit still holds if the engine ignored the group."""


class KernelCgroup:
    """The cgroup(s) of one kernel, or of one container's parent: create, inspect, remove."""

    def __init__(self, name: str, memory: int, cpus: float | None = None, pids: int | None = None) -> None:
        self.name = name
        self.unified = (V1_ROOT / "cgroup.controllers").exists()
        self.dirs: dict[str, Path] = {}
        self._settings = self._plan(memory, cpus, pids)
        self._oom_events: int | None = None
        self._oom_seen = False
        self._watching = False

    def _plan(self, memory: int, cpus: float | None, pids: int | None) -> dict[str, dict[str, str]]:
        """The files to write per controller; ``None`` leaves that limit to someone else."""
        quota = None if cpus is None else str(int(cpus * CFS_PERIOD_US))
        if self.unified:
            unified = {"memory.max": str(memory), "memory.swap.max": "0"}
            if pids is not None:
                unified["pids.max"] = str(pids)
            if quota is not None:
                unified["cpu.max"] = f"{quota} {CFS_PERIOD_US}"
            return {"": unified}
        plan: dict[str, dict[str, str]] = {
            "memory": {"memory.limit_in_bytes": str(memory), "memory.memsw.limit_in_bytes": str(memory)},
            "cpuacct": {},  # accounting only: what the kernel (or the container inside) used
        }
        if quota is not None:
            plan["cpu"] = {"cpu.cfs_period_us": str(CFS_PERIOD_US), "cpu.cfs_quota_us": quota}
        if pids is not None:
            plan["pids"] = {"pids.max": str(pids)}
        return plan

    @property
    def path(self) -> str:
        """The group's path as a container runtime names a cgroup parent."""
        return f"/{GROUP}/{self.name}"

    def memory_dir(self) -> Path | None:
        """The directory holding the memory controller's files, once created."""
        return self.dirs.get("" if self.unified else "memory")

    def create(self) -> list[str]:
        """Make the groups and write the limits; return the limits that could be applied."""
        applied: list[str] = []
        for controller, settings in self._settings.items():
            base = V1_ROOT / controller / GROUP if controller else V1_ROOT / GROUP
            if self.unified:
                _enable_controllers(V1_ROOT, base)
            path = base / self.name
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError:
                continue
            self.dirs[controller] = path
            applied += _write(path, settings)
        return applied

    def adopt(self, spare: str) -> list[str]:
        """cgroup v1: make the groups a spare kernel joined ahead (``spare`` in every controller of
        :func:`spare_parents`) this kernel's, renamed to its name, and write its limits; return the
        limits that could be applied. ``OSError`` when a group cannot be taken over (those already
        renamed are this kernel's, so :meth:`remove` removes them)."""
        renamed: dict[Path, Path] = {}
        for controller in SPARE_CONTROLLERS:
            parent = (V1_ROOT / controller / GROUP).resolve()  # cpu and cpuacct may be one hierarchy
            if parent not in renamed:
                (parent / spare).rename(parent / self.name)
                renamed[parent] = parent / self.name
            self.dirs[controller] = renamed[parent]
        settings = self._settings
        return [key for controller, path in self.dirs.items() for key in _write(path, settings.get(controller, {}))]

    def cpu_seconds(self) -> float | None:
        """CPU time used so far by the processes of this group and the groups inside it (a container's),
        from cgroup accounting (v2 ``cpu.stat``, v1 ``cpuacct.usage``); None when it cannot be read."""
        try:
            if self.unified:
                path = self.dirs.get("")
                stat = (path / "cpu.stat").read_text() if path is not None else ""
                usage = dict(line.split(" ", 1) for line in stat.splitlines() if " " in line).get("usage_usec")
                return int(usage) / 1e6 if usage is not None else None
            path = self.dirs.get("cpuacct")
            return int((path / "cpuacct.usage").read_text()) / 1e9 if path is not None else None
        except (OSError, ValueError):
            return None

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a child writes its pid into before exec."""
        return [str(path / "cgroup.procs") for path in self.dirs.values()]

    def adopt_children(self) -> None:
        """cgroup v2: hand memory, cpu and pids on to child groups (a container's own).

        One controller per write: a write naming several fails as a whole if any one of them
        cannot be enabled, and memory is the one that matters here.
        """
        path = self.memory_dir()
        if self.unified and path is not None:
            for controller in ("memory", "cpu", "pids"):
                with contextlib.suppress(OSError):
                    (path / "cgroup.subtree_control").write_text(f"+{controller}")

    def watch_oom(self) -> bool:
        """Start recording OOM kills of the containers inside this group; False if impossible.

        The container is given a limit above this group's (see ``BACKSTOP_MARGIN`` in the
        Docker backend), so this group is the one that hits its limit. cgroup v1 counts a
        kill only in the victim's own group, which is removed when the container exits, but
        notifies an eventfd registered on the group that hit its limit: that count is read
        after the container is gone. cgroup v2 keeps the count in this group's
        ``memory.events`` (``oom`` here, ``oom_kill`` propagated up from the victim).
        """
        path = self.memory_dir()
        if path is None:
            return False
        self._watching = True
        if self.unified:
            return True
        event = control = None
        try:
            event = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            control = os.open(path / "memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
            (path / "cgroup.event_control").write_text(f"{event} {control}")
        except OSError:
            if event is not None:
                os.close(event)
            return False
        finally:
            if control is not None:
                os.close(control)
        self._oom_events = event
        return True

    def oom_killed(self) -> bool:
        """Whether this kernel's group, or (with :meth:`watch_oom`) a container in it, was OOM-killed."""
        path = self.memory_dir()
        if path is None:
            return False
        if self._oom_events is not None and not self._oom_seen and path.exists():
            # v1 also signals the eventfd when the group is deleted: only a live group's count is a kill.
            with contextlib.suppress(BlockingIOError):
                self._oom_seen = os.eventfd_read(self._oom_events) > 0
        if self._oom_seen:
            return True
        source = path / ("memory.events" if self.unified else "memory.oom_control")
        counted = ("oom", "oom_kill") if self._watching else ("oom_kill",)
        with contextlib.suppress(OSError):
            for line in source.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key in counted and int(value) > 0:
                    return True
        return False

    def remove(self) -> list[str]:
        """Delete the groups, including those a container runtime made in other controllers;
        return what could not be removed (``pixelbox cleanup`` retries it later).

        They must be empty: kill the processes (or remove the container) first.
        """
        if self._oom_events is not None:
            os.close(self._oom_events)
            self._oom_events = None
        made_by_runtime = [] if self.unified else list(V1_ROOT.glob(f"*/{GROUP}/{self.name}"))
        errors = [remove_group(path) for path in {*self.dirs.values(), *made_by_runtime}]
        return [error for error in errors if error]


SPARE_CONTROLLERS = ("memory", "cpuacct", "cpu", "pids")
"""The cgroup v1 controllers a spare kernel's groups are made in (every one a kernel's plan may use)."""


def spare_parents() -> list[Path]:
    """Where the local zygote makes its spares' groups (one per controller), or none: cgroup v2 cannot
    rename a group (a spare's would have to be migrated again), and a host without cgroups has none."""
    if not cgroups_usable() or (V1_ROOT / "cgroup.controllers").exists():
        return []
    parents = list(dict.fromkeys((V1_ROOT / controller / GROUP).resolve() for controller in SPARE_CONTROLLERS))
    try:
        for parent in parents:
            parent.mkdir(exist_ok=True)
    except OSError:
        return []
    return parents


def pixelbox_groups(prefix: str) -> list[Path]:
    """pixelbox's groups whose names start with ``prefix``, in every v1 controller or under v2."""
    return [*V1_ROOT.glob(f"*/{GROUP}/{prefix}*"), *V1_ROOT.glob(f"{GROUP}/{prefix}*")]


def remove_group(path: Path, patience: float = 1.0) -> str | None:
    """Delete a cgroup and any groups nested in it, deepest first; return the error, if any.

    A container runtime does not always remove its container's group (a sandbox killed
    mid-flight, a frozen process), so the empty groups left inside pixelbox's are removed
    with it. A group whose last process is still exiting is retried for ``patience`` seconds.
    """
    nested = sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
    deadline = time.monotonic() + patience
    for group in [*nested, path]:
        while True:
            try:
                group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError as exc:
                if time.monotonic() >= deadline:
                    return f"cgroup {group}: {exc.strerror}"
                time.sleep(0.02)
    return None


def _write(path: Path, settings: dict[str, str]) -> list[str]:
    """Write each of ``settings`` into the group at ``path``; return the keys that could be written."""
    written = []
    for key, value in settings.items():
        with contextlib.suppress(OSError):
            (path / key).write_text(value)
            written.append(key)
    return written


def _enable_controllers(root: Path, base: Path) -> None:
    """cgroup v2: delegate memory, cpu and pids to pixelbox's subtree."""
    with contextlib.suppress(OSError):
        base.mkdir(exist_ok=True)
        for parent in (root, base):
            (parent / "cgroup.subtree_control").write_text("+memory +cpu +pids")


def cgroups_usable() -> bool:
    """Whether this process can create cgroups (root, with a writable cgroup mount)."""
    if os.geteuid() != 0:
        return False
    unified = (V1_ROOT / "cgroup.controllers").exists()
    probe = V1_ROOT if unified else V1_ROOT / "memory"
    return os.access(probe, os.W_OK)
