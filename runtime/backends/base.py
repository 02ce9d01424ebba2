"""The contract every backend meets: start a kernel on a layout, watch it, stop it, and clean up
after processes that died with kernels running."""

from __future__ import annotations

import signal
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pixelbox.runtime.commands import Captured, CommandSpec
from pixelbox.runtime.errors import BackendUnavailable
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.workspace import Layout, Owner

KERNEL_COMMAND = ("-m", "pixelbox.kernel", "--ipc-dir")
"""A cold kernel's command after the interpreter. ``python -m`` puts its start directory first on
``sys.path`` before importing ``pixelbox``, so a kernel never starts in a directory it can write
(its workspace): the local backend starts it in the sandbox's root (0711, the host's), the kernel
image's interpreter gets ``-P`` (:data:`SAFE_PATH`); the kernel moves into its workspace itself."""

SAFE_PATH = "-P"
"""Python 3.11's "no unsafe path first on sys.path" flag (the kernel image's interpreter is 3.11)."""


def safe_path_flags(python: str) -> tuple[str, ...]:
    """``(SAFE_PATH,)`` when ``python`` is known to take it: this interpreter, from 3.11 on."""
    return (SAFE_PATH,) if python == sys.executable and sys.version_info >= (3, 11) else ()


Owned = Callable[[Owner], bool]
"""Whether resources of the owner (pid and start time) given as the argument are to be removed."""


@dataclass
class CleanupReport:
    """What ``pixelbox cleanup`` (:func:`pixelbox.runtime.cleanup.remove_orphans`) removed."""

    containers: list[str] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def total(self) -> int:
        """How many things were removed."""
        return len(self.containers) + len(self.processes) + len(self.directories)


@dataclass(frozen=True)
class KernelPaths:
    """Where the layout's directories appear from inside the sandbox."""

    ipc: str
    workspace: str
    inputs: str


def describe_exit(code: int | None, *, oom: bool = False, memory: int | None = None) -> str:
    """Human wording for how a kernel ended: OOM-killed, killed by signal N, exited with N.

    Negative codes are signals (subprocess convention); codes above 128 come from an init
    process such as tini reporting a child killed by signal ``code - 128``.
    """
    if oom:
        limit = f" (memory limit {memory // 1024**2} MiB)" if memory else ""
        return f"OOM-killed: the kernel exceeded its memory limit{limit}"
    if code is None:
        return "the kernel disappeared (exit status unknown)"
    signum = -code if code < 0 else code - 128 if code > 128 else None
    if signum:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = "unknown"
        return f"killed by signal {signum} ({name})"
    return f"exited with code {code}"


class KernelHandle(ABC):
    """A running kernel process or container."""

    @abstractmethod
    def alive(self) -> bool:
        """Cheap liveness check, safe to call every few milliseconds."""

    @abstractmethod
    def exit_reason(self) -> str:
        """Why the kernel is no longer alive (only meaningful once :meth:`alive` is False)."""

    @abstractmethod
    def interrupt(self) -> None:
        """Deliver SIGINT to the kernel (KeyboardInterrupt in the running cell)."""

    @abstractmethod
    def kill(self) -> None:
        """Stop the kernel and everything it started; idempotent, never raises."""

    def cpu_seconds(self) -> float | None:
        """CPU time the kernel (its container, with the runtime's processes inside it) used so far, from
        cgroup accounting; None where the backend cannot tell. Read before :meth:`kill`."""
        return None

    def started(self) -> None:
        """Told once the kernel is ready and has greeted the host (its start is over): a backend may now do
        what it held back so as not to slow that start (the local zygote forks its next spare)."""
        return None


@dataclass
class ParkedKernel:
    """A fast-path kernel started ahead in a sandbox layout of its own and parked before its phase two:
    nothing of any sandbox in it yet (no environment, key, configuration or files).

    A sandbox that takes it makes ``layout`` its own (its directories are the kernel's bind mounts),
    writes its connection and configuration files into ``layout.ipc``, then calls ``wake`` (which hands
    the kernel its environment); from then on ``handle`` is its kernel's."""

    layout: Layout
    handle: KernelHandle
    wake: Callable[[], None]


class Backend(ABC):
    """Starts kernels of one kind. Instances are cheap and may be shared between sandboxes.

    A backend is registered by name in :data:`pixelbox.runtime.backends.BACKENDS`; the sandbox
    gets one through :meth:`for_options` and never looks at its concrete class.
    """

    name: str
    kernel_uid: int | None

    @classmethod
    @abstractmethod
    def for_options(cls, options: SandboxOptions) -> Backend:
        """The backend serving ``options`` (may be shared); ``BackendUnavailable`` when it cannot run here."""

    def chosen_because(self, options: SandboxOptions, *, auto: bool) -> str:
        """Why this backend serves a sandbox (``Sandbox.info.reason``): named by the caller, or picked by ``auto``."""
        return f"auto: {self.name} backend available" if auto else f"{self.name} backend requested"

    def allocate_uid(self) -> int | None:
        """The uid the next kernel runs as (backends that give each kernel its own uid pick one here)."""
        return self.kernel_uid

    @abstractmethod
    def paths(self, layout: Layout) -> KernelPaths:
        """The in-sandbox view of ``layout``."""

    @abstractmethod
    def start(self, layout: Layout, options: SandboxOptions, uid: int | None = None) -> KernelHandle:
        """Launch ``python -m pixelbox.kernel`` on ``layout`` under ``options``' limits, as ``uid``
        (from :meth:`allocate_uid`)."""

    def prepare_fresh(self, options: SandboxOptions) -> None:
        """Make the fast path to fresh kernels ready for ``options``, without waiting for it.

        The fast-path hook pair (issue 20): a backend that can make a clean, isolated, ready
        kernel cheaper than a cold start (the local zygote forks a primed kernel; a container
        backend may restore a checkpoint) prepares it here and serves it in :meth:`start_fresh`.
        Called by ``SandboxPool`` when it is made, so that its refills are fast from the first;
        idempotent and cheap when already prepared. The default has no fast path.
        """
        return None

    def start_fresh(self, layout: Layout, options: SandboxOptions, uid: int | None = None) -> KernelHandle | None:
        """A fresh kernel through the fast path, meeting :meth:`start`'s contract; None to start cold.

        The kernel must be as clean and isolated as a cold one: its own workspace, IPC directory,
        connection key, uid, limits and environment, reseeded random sources (see
        :func:`pixelbox.kernel.fresh.serve`), nothing of an earlier sandbox. Return None when
        there is no fast path for ``options`` or it is not ready within ``options.start_timeout``
        (it may prepare itself first, as :meth:`prepare_fresh`); the sandbox then calls
        :meth:`start`. ``Sandbox`` calls this only when ``options.fast_start`` is on, and starts
        cold, once, when a kernel started here fails to become ready.
        """
        return None

    def take_parked(self, options: SandboxOptions) -> ParkedKernel | None:
        """A kernel parked ahead for ``options`` (see :class:`ParkedKernel`), alive, or None: then the sandbox
        makes its own layout and calls :meth:`start_fresh` / :meth:`start`. The default keeps none."""
        return None

    @abstractmethod
    def facts(self, handle: KernelHandle, ready: dict[str, Any], options: SandboxOptions) -> dict[str, Any]:
        """The isolation facts actually in force for this kernel (for ``Sandbox.info``)."""

    def run_command(self, handle: KernelHandle, layout: Layout, options: SandboxOptions, spec: CommandSpec) -> Captured:
        """Run ``spec.argv`` beside the kernel of ``handle``: same place, user and limits, not in its namespace."""
        raise BackendUnavailable(f"the {self.name} backend cannot run commands")

    @classmethod
    def remove_orphans(cls, owned: Owned, report: CleanupReport) -> None:
        """Remove what this backend runs for owners ``owned`` accepts (dead processes), into ``report``.

        Called by ``pixelbox cleanup`` before workspaces and control groups go; needs no engine
        state beyond what the backend can list. The default has nothing of its own to remove.
        """
        return None

    @classmethod
    def leftovers_of(cls, pid: int, start: int | None) -> dict[str, list[str]]:
        """What this backend still runs for process ``pid`` started at ``start`` (any start when None),
        by kind (the leak check); empty when nothing."""
        return {}
