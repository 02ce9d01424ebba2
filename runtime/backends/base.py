"""The contract every backend meets: start a kernel on a layout, watch it, stop it."""

from __future__ import annotations

import signal
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.workspace import Layout

KERNEL_COMMAND = ("-m", "pixelbox.kernel", "--ipc-dir")


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


class Backend(ABC):
    """Starts kernels of one kind. Instances are cheap and may be shared between sandboxes."""

    name: str
    kernel_uid: int | None

    @abstractmethod
    def paths(self, layout: Layout) -> KernelPaths:
        """The in-sandbox view of ``layout``."""

    @abstractmethod
    def start(self, layout: Layout, options: SandboxOptions) -> KernelHandle:
        """Launch ``python -m pixelbox.kernel`` on ``layout`` under ``options``' limits."""

    @abstractmethod
    def facts(self, handle: KernelHandle, ready: dict[str, Any], options: SandboxOptions) -> dict[str, Any]:
        """The isolation facts actually in force for this kernel (for ``Sandbox.info``)."""
