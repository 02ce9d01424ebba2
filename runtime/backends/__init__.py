"""Sandbox backends: where a kernel runs (a local child process, a runc or runsc container)."""

from pixelbox.runtime.backends.base import Backend, KernelHandle, KernelPaths

__all__ = ["Backend", "KernelHandle", "KernelPaths"]
