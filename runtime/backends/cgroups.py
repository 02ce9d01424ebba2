"""Per-kernel control groups for the local backend: real memory, CPU and process limits.

rlimits alone are a weak stand-in: RLIMIT_AS caps *virtual* memory (which breaks libraries
that reserve large address ranges) and ends a memory bomb as a MemoryError rather than the
OOM kill a container would report. When the host runs as root and cgroups are mounted, each
local kernel gets its own group, in cgroup v1 (one hierarchy per controller) or v2 (unified).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

V1_ROOT = Path("/sys/fs/cgroup")
GROUP = "pixelbox"
CFS_PERIOD_US = 100_000


class KernelCgroup:
    """The cgroup(s) of one local kernel; create, join (from the child), inspect, remove."""

    def __init__(self, name: str, memory: int, cpus: float, pids: int) -> None:
        self.name = name
        self.unified = (V1_ROOT / "cgroup.controllers").exists()
        self.dirs: dict[str, Path] = {}
        self._settings = self._plan(memory, cpus, pids)

    def _plan(self, memory: int, cpus: float, pids: int) -> dict[str, dict[str, str]]:
        quota = str(int(cpus * CFS_PERIOD_US))
        if self.unified:
            return {
                "": {
                    "memory.max": str(memory),
                    "memory.swap.max": "0",
                    "pids.max": str(pids),
                    "cpu.max": f"{quota} {CFS_PERIOD_US}",
                }
            }
        return {
            "memory": {"memory.limit_in_bytes": str(memory), "memory.memsw.limit_in_bytes": str(memory)},
            "cpu": {"cpu.cfs_period_us": str(CFS_PERIOD_US), "cpu.cfs_quota_us": quota},
            "pids": {"pids.max": str(pids)},
        }

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
            for key, value in settings.items():
                try:
                    (path / key).write_text(value)
                    applied.append(key)
                except OSError:
                    continue
        return applied

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a child writes its pid into before exec."""
        return [str(path / "cgroup.procs") for path in self.dirs.values()]

    def oom_killed(self) -> bool:
        """Whether the kernel's group saw an OOM kill."""
        path = self.dirs.get("" if self.unified else "memory")
        if path is None:
            return False
        source = path / ("memory.events" if self.unified else "memory.oom_control")
        with contextlib.suppress(OSError):
            for line in source.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        return False

    def remove(self) -> None:
        """Delete the groups (they must be empty: kill the processes first)."""
        for path in self.dirs.values():
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


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
