"""pixelbox.runtime: stateful, isolated Jupyter-kernel sandboxes for model-written code.

from pixelbox.runtime import Sandbox
with Sandbox(backend="docker", runtime="runsc") as sb:
    result = sb.execute("x = 41 + 1; x")
    print(result.status, result.text)
"""

from pixelbox.runtime.aio import AsyncSandbox
from pixelbox.runtime.artifacts import Artifact
from pixelbox.runtime.errors import (
    BackendUnavailable,
    ImageMissing,
    KernelStartError,
    OptionsError,
    PixelboxError,
    SandboxClosed,
    WorkspacePathError,
)
from pixelbox.runtime.execution import ErrorInfo, Execution, Output
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.pool import PoolExhausted, SandboxPool
from pixelbox.runtime.sandbox import Sandbox, SandboxInfo

__all__ = [
    "Artifact",
    "AsyncSandbox",
    "BackendUnavailable",
    "ErrorInfo",
    "Execution",
    "ImageMissing",
    "KernelStartError",
    "OptionsError",
    "Output",
    "PixelboxError",
    "PoolExhausted",
    "Sandbox",
    "SandboxClosed",
    "SandboxInfo",
    "SandboxOptions",
    "SandboxPool",
    "WorkspacePathError",
]
