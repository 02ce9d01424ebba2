"""The embedded backend: ipykernel as a child process, confined as far as the host allows.

When the host runs as root each kernel gets a uid of its own (no passwd entry needed), a
private network namespace with only a downed loopback, rlimits on address space, processes,
file size and descriptors, a scrubbed environment, and its own session so that the whole
process tree can be signalled. Without root the kernel keeps the host uid and network;
``Sandbox.info`` says so plainly. This is not a container: the RestrictedPython policy is
on by default here for that reason.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import resource
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from pixelbox.contract.confine import Confinement, ForkRequest
from pixelbox.runtime.backends.base import (
    KERNEL_COMMAND,
    Backend,
    CleanupReport,
    KernelHandle,
    KernelPaths,
    Owned,
    describe_exit,
    safe_path_flags,
)
from pixelbox.runtime.backends.cgroups import KernelCgroup, cgroups_usable
from pixelbox.runtime.backends.host_dirs import kernel_dirs
from pixelbox.runtime.backends.zygote import ZYGOTE_MODULE, ForkedProcess, Zygote, ZygoteUnavailable, zygote_for
from pixelbox.runtime.commands import Captured, CommandSpec, run_process
from pixelbox.runtime.errors import BackendUnavailable
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.workspace import ROOT_PREFIX, Layout, belongs_to, owner_of

UID_RANGE = (110_000, 170_000)
ZYGOTE_CACHE = Path.home() / ".cache" / "pixelbox" / "zygote"
"""Caches the zygote's libraries build at import (Matplotlib's font list): kept across runs, read-only to kernels."""


def _uid_in_use(uid: int) -> bool:
    """Whether any process currently runs as ``uid`` (so it is not free for a new kernel)."""
    return bool(processes_of_uid(uid))


def processes_of_uid(uid: int) -> list[int]:
    """Pids of processes whose real uid is ``uid`` (read from /proc)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid == uid:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def interpreter_reachable(python: str, uid: int) -> bool:
    """Whether ``uid`` (not root) can execute ``python`` through every parent directory."""
    path = Path(python).resolve()
    for parent in [*reversed(path.parents)]:
        mode = parent.stat().st_mode
        if not mode & 0o001 and parent.stat().st_uid != uid:
            return False
    return bool(path.stat().st_mode & 0o001)


class LocalHandle(KernelHandle):
    """A kernel child process (session leader of its own process group)."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        uid: int | None,
        cgroup: KernelCgroup | None,
        limits: list[str],
        memory: int,
    ) -> None:
        self.proc = proc
        self.uid = uid
        self.cgroup = cgroup
        self.limits = limits
        self.memory = memory

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_reason(self) -> str:
        oom = self.cgroup is not None and self.cgroup.oom_killed()
        return describe_exit(self.proc.poll(), oom=oom, memory=self.memory)

    def interrupt(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGINT)

    def cpu_seconds(self) -> float | None:
        return self.cgroup.cpu_seconds() if self.cgroup is not None else None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.uid is not None:
            self._kill_uid_stragglers()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.cgroup is not None:
            self.cgroup.remove()

    def _kill_uid_stragglers(self) -> None:
        """Processes that left the group (setsid, double fork) still carry the kernel's uid."""
        assert self.uid is not None
        for _ in range(3):
            pids = processes_of_uid(self.uid)
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)


KERNEL_PACKAGES = ("ipykernel", "RestrictedPython", "numpy", "PIL")
"""What a kernel on the host imports at start (``pixelbox[local]`` installs them and the image libraries)."""


class ForkedHandle(LocalHandle):
    """A kernel forked from the zygote: a child of the zygote, watched through its pidfd."""

    proc: ForkedProcess  # type: ignore[assignment]

    def alive(self) -> bool:
        return self.proc.running()

    def exit_reason(self) -> str:
        oom = self.cgroup is not None and self.cgroup.oom_killed()
        return describe_exit(self.proc.exit_code(), oom=oom, memory=self.memory)

    def interrupt(self) -> None:
        self.proc.signal(signal.SIGINT)

    def started(self) -> None:
        self.proc.started()

    def kill(self) -> None:
        self.proc.signal(signal.SIGKILL)
        super().kill()
        self.proc.close()


class LocalBackend(Backend):
    """Runs kernels as child processes of the host interpreter."""

    name = "local"

    def __init__(self, python: str | None = None) -> None:
        self.python = python or sys.executable
        self.is_root = os.geteuid() == 0
        self.kernel_uid = None

    @classmethod
    def for_options(cls, options: SandboxOptions) -> LocalBackend:
        """A local backend (one per sandbox: it holds nothing worth sharing).

        The kernel runs on the host's interpreter, so it needs the kernel's packages there: the
        base install (Docker backend only) lacks them, and ``auto`` then says so and moves on.
        """
        missing = [name for name in KERNEL_PACKAGES if importlib.util.find_spec(name) is None]
        if missing:
            raise BackendUnavailable(
                f"the local backend runs the kernel on this interpreter, which lacks {', '.join(missing)}: "
                "install pixelbox[local] (or use the docker backend)"
            )
        return cls()

    def allocate_uid(self) -> int | None:
        """A fresh unprivileged uid for the next kernel (None when the host is not root)."""
        if not self.is_root:
            return None
        for _ in range(100):
            uid = random.randrange(*UID_RANGE)
            if not _uid_in_use(uid):
                return uid
        raise BackendUnavailable("could not find a free uid for a local kernel in the reserved range")

    def paths(self, layout: Layout) -> KernelPaths:
        return KernelPaths(ipc=str(layout.ipc), workspace=str(layout.work), inputs=str(layout.inputs))

    def environment(self, layout: Layout, options: SandboxOptions) -> dict[str, str]:
        """The kernel's whole environment: built from scratch, never inherited."""
        threads = str(max(1, int(options.cpus)))
        bin_dir = str(Path(self.python).parent)
        env = {
            "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(layout.home),
            "LANG": "C.UTF-8",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": str(layout.home / ".mpl"),
            "IPYTHONDIR": str(layout.home / ".ipython"),
            "JUPYTER_RUNTIME_DIR": str(layout.home / ".jupyter"),
            "TMPDIR": str(layout.home),
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": threads,
            "OPENBLAS_NUM_THREADS": threads,
            "PIXELBOX_SANDBOX": "local",
        }
        env.update(options.env)
        return env

    def _check_reachable(self, uid: int | None) -> None:
        if uid is not None and not interpreter_reachable(self.python, uid):
            raise BackendUnavailable(
                f"the local backend runs kernels as an unprivileged uid, which cannot execute {self.python} "
                "(a parent directory is not world-searchable). Create the virtualenv from a system "
                "interpreter, e.g. `/usr/bin/python3 -m venv .venv` (scripts/setup.sh does this)."
            )

    def start(self, layout: Layout, options: SandboxOptions, uid: int | None = None) -> LocalHandle:
        self._check_reachable(uid)
        cgroup, applied = _make_cgroup(layout, options)
        command = [self.python, *safe_path_flags(self.python), *KERNEL_COMMAND, str(layout.ipc)]
        try:
            with os.fdopen(layout.open_kernel_log(), "ab") as log:
                proc = subprocess.Popen(
                    command,
                    cwd=layout.root,  # not the workspace: python -m imports from its start directory first
                    env=self.environment(layout, options),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                    close_fds=True,
                    preexec_fn=self.confinement(layout, options, uid, cgroup, applied).apply,
                )
        except BaseException:  # no kernel (its interpreter is missing, a wall failed): no cgroup left either
            if cgroup is not None:
                cgroup.remove()
            raise
        return LocalHandle(proc, uid, cgroup, applied, int(options.memory))

    def confinement(
        self, layout: Layout, options: SandboxOptions, uid: int | None, cgroup: KernelCgroup | None, applied: list[str]
    ) -> Confinement:
        """The walls of a kernel (or command) of this backend: :func:`confinement`, with the host
        directories its interpreter runs from shown read-only in its private ``/tmp``."""
        walls = confinement(layout, options, uid, cgroup, memory_by_cgroup=_limits_memory(applied))
        return replace(walls, shared=kernel_dirs(self.python))

    def _zygote(self, options: SandboxOptions) -> Zygote | None:
        """The zygote whose imports fit ``options`` (BLAS and OpenMP read their thread count at import)."""
        threads = str(max(1, int(options.cpus)))
        env = {
            "PATH": f"{Path(self.python).parent}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": str(ZYGOTE_CACHE / "mpl"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": threads,
            "OPENBLAS_NUM_THREADS": threads,
            "PIXELBOX_SANDBOX": "local",
        }
        if os.environ.get("PIXELBOX_PREFAULT") is not None:  # the zygote's switch for the spare's pre-faulting
            env["PIXELBOX_PREFAULT"] = os.environ["PIXELBOX_PREFAULT"]
        try:
            ZYGOTE_CACHE.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError:  # no writable home: Matplotlib then uses a temporary directory of its own
            del env["MPLCONFIGDIR"]
        try:
            return zygote_for(self.python, env)
        except OSError:  # the zygote's directory or process could not be made: kernels start cold
            return None

    def prepare_fresh(self, options: SandboxOptions) -> None:
        """Start this process's zygote for ``options`` (it imports in the background)."""
        self._zygote(options)

    def start_fresh(self, layout: Layout, options: SandboxOptions, uid: int | None = None) -> LocalHandle | None:
        """Fork the kernel from the zygote (started now if needed); None when the zygote cannot serve."""
        self._check_reachable(uid)
        zygote = self._zygote(options)
        if zygote is None or not zygote.usable(options.start_timeout):
            return None
        made: list[tuple[KernelCgroup | None, list[str]]] = []

        def request_for(spare_group: str | None) -> ForkRequest:
            """The kernel's request, its control group adopted from the spare's (already joined) or made now."""
            cgroup, applied = _adopt_cgroup(layout, options, spare_group, made)
            limits = self.confinement(layout, options, uid, cgroup, applied)
            if spare_group is not None:
                limits = replace(limits, procs_files=())  # in its group already: joining again would wait
            argv = (self.python, *KERNEL_COMMAND, str(layout.ipc))
            return ForkRequest(str(layout.ipc), str(layout.work), self.environment(layout, options), argv, limits)

        try:
            with os.fdopen(layout.open_kernel_log(), "ab") as log:
                proc = zygote.fork(request_for, log.fileno())
        except ZygoteUnavailable:
            for cgroup, _ in made:
                if cgroup is not None:
                    cgroup.remove()
            return None
        ((cgroup, applied),) = made
        return ForkedHandle(proc, uid, cgroup, applied, int(options.memory))  # type: ignore[arg-type]

    def run_command(self, handle: KernelHandle, layout: Layout, options: SandboxOptions, spec: CommandSpec) -> Captured:
        """A child process made like the kernel: its uid, cgroup, rlimits, network and /dev/shm isolation."""
        assert isinstance(handle, LocalHandle)
        walls = self.confinement(layout, options, handle.uid, handle.cgroup, handle.limits)
        environment = {**self.environment(layout, options), **spec.env}

        def popen() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                list(spec.argv),
                cwd=layout.work,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                preexec_fn=walls.apply,
            )

        return run_process(popen, spec)

    @classmethod
    def remove_orphans(cls, owned: Owned, report: CleanupReport) -> None:
        """Kill kernel processes whose owning pixelbox process ``owned`` accepts."""
        for pid, cmdline in kernel_processes(zygotes=True):
            owner = owner_of(cmdline)
            if owner is not None and owned(owner):
                try:
                    os.kill(int(pid), signal.SIGKILL)
                    report.processes.append(int(pid))
                except OSError as exc:
                    report.errors.append(f"pid {pid}: {exc}")

    @classmethod
    def leftovers_of(cls, pid: int, start: int | None) -> dict[str, list[str]]:
        """Live kernel processes of the sandboxes of ``pid`` started at ``start`` (exited zombies hold nothing)."""
        kernels = [
            f"{n}: {cmd}"
            for n, cmd in kernel_processes()
            if f"/{ROOT_PREFIX}{pid}" in cmd and belongs_to(owner_of(cmd), pid, start) and not _zombie(n)
        ]
        return {"kernels": kernels} if kernels else {}

    def facts(self, handle: KernelHandle, ready: dict[str, Any], options: SandboxOptions) -> dict[str, Any]:
        assert isinstance(handle, LocalHandle)
        interfaces = ready.get("interfaces") or []
        isolated = interfaces in (["lo"], [])
        by_cgroup = _limits_memory(handle.limits)
        return {
            "cgroup_limits": handle.limits,
            "memory_limit": "cgroup (OOM kill, like a container)" if by_cgroup else "rlimit on address space",
            "container": False,
            "network": "isolated (private network namespace)" if isolated else "NOT isolated: host network",
            "network_isolated": isolated,
            "user": f"uid {ready.get('uid')}" + (" (unprivileged)" if ready.get("uid") else " (root!)"),
            "read_only_root": False,
            "rlimits": {
                "address_space": None if by_cgroup else int(options.memory),
                "processes": options.pids,
                "file_size": int(options.max_file_size),
                "open_files": options.max_open_files,
            },
            "environment": "scrubbed (explicit allow-list only)",
            "dev_shm": f"private tmpfs of {int(options.tmpfs_size)} bytes (own mount namespace)"
            if handle.uid is not None
            else "the host's /dev/shm (not private: the host is not root)",
            "tmp": f"private tmpfs of {int(options.tmpfs_size)} bytes, the sandbox's own directory bound in"
            if handle.uid is not None
            else "the host's /tmp (not private: the host is not root)",
        }


def kernel_processes(*, zygotes: bool = False) -> list[tuple[str, str]]:
    """(pid, command line) of every pixelbox kernel process on the machine; with ``zygotes`` the
    fork servers too (``pixelbox cleanup`` kills those of dead owners; a live owner stops its own)."""
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmd = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "pixelbox.kernel" in cmd and (zygotes or ZYGOTE_MODULE not in cmd):
                out.append((entry.name, cmd))
    return out


def _zombie(pid: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _limits_memory(applied: list[str]) -> bool:
    return "memory.limit_in_bytes" in applied or "memory.max" in applied


def _adopt_cgroup(
    layout: Layout, options: SandboxOptions, spare_group: str | None, made: list[tuple[KernelCgroup | None, list[str]]]
) -> tuple[KernelCgroup | None, list[str]]:
    """The sandbox's control group: the spare's ``spare_group`` renamed and given the limits, or (None) one
    made now; appended to ``made`` first, so the caller removes it when the start fails after all."""
    if spare_group is None:
        made.append(_make_cgroup(layout, options))
        return made[-1]
    cgroup = KernelCgroup(layout.root.name, int(options.memory), options.cpus, options.pids)
    made.append((cgroup, []))
    made[-1] = (cgroup, cgroup.adopt(spare_group))
    return made[-1]


def _make_cgroup(layout: Layout, options: SandboxOptions) -> tuple[KernelCgroup | None, list[str]]:
    if not cgroups_usable():
        return None, []
    cgroup = KernelCgroup(layout.root.name, int(options.memory), options.cpus, options.pids)
    return cgroup, cgroup.create()


def confinement(
    layout: Layout, options: SandboxOptions, uid: int | None, cgroup: KernelCgroup | None, *, memory_by_cgroup: bool
) -> Confinement:
    """The walls a local kernel puts up around itself (cold or forked alike, see :mod:`pixelbox.contract.confine`).

    RLIMIT_NPROC is per uid, which is why each kernel gets a uid of its own. The address-space
    rlimit is only a fallback for hosts without a memory cgroup.
    """
    limits = [
        (resource.RLIMIT_NPROC, options.pids),
        (resource.RLIMIT_FSIZE, int(options.max_file_size)),
        (resource.RLIMIT_NOFILE, options.max_open_files),
        (resource.RLIMIT_CORE, 0),
    ]
    if not memory_by_cgroup:
        limits.append((resource.RLIMIT_AS, int(options.memory)))
    procs_files = tuple(cgroup.procs_files()) if cgroup is not None else ()
    return Confinement(procs_files, uid, tuple(limits), int(options.tmpfs_size), keep=str(layout.root))
