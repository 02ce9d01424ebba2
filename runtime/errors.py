"""Exceptions raised by the runtime. Each message says what went wrong and what to do."""

from __future__ import annotations


class PixelboxError(Exception):
    """Base class for every error pixelbox raises on purpose."""


class OptionsError(PixelboxError, ValueError):
    """A :class:`~pixelbox.runtime.options.SandboxOptions` value is invalid."""


class BackendUnavailable(PixelboxError):
    """The requested backend cannot run on this machine (no engine, no image, no runtime)."""


class ImageMissing(BackendUnavailable):
    """The kernel image for this version of pixelbox is not built (or is stale)."""


class KernelStartError(PixelboxError):
    """A kernel did not come up: it exited, or did not answer before the start timeout."""


class SandboxClosed(PixelboxError):
    """An operation was attempted on a sandbox after :meth:`close`."""


class WorkspacePathError(PixelboxError, ValueError):
    """A path given to upload/download escapes the workspace or names something unsafe."""
