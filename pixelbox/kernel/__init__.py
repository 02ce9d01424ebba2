"""In-kernel side of pixelbox: code that runs *inside* the sandboxed Jupyter kernel.

Only the standard library, numpy, PIL, cv2 (and IPython/ipykernel, which host the kernel)
may be imported here: this package is copied into container images, together with the
host-kernel contract (:mod:`pixelbox.contract`), and must not depend on anything host-only
(docker, libcst, openai...). Its version is the distribution version, so the host can detect a
stale image at kernel start.

Everything in this package is private to the kernel. Host code (``pixelbox.runtime``,
``pixelbox.tracer``, ``pixelbox.harness``, ``pixelbox.cli``) talks to it only through
:mod:`pixelbox.contract` and starts it as ``python -m pixelbox.kernel``; the one exception is
:data:`HOST_SHARED`, implementations the host re-runs itself. ``tests/test_architecture.py``
fails when host code imports anything else from here.
"""

from pixelbox import __version__
from pixelbox.contract.wire import KERNEL_PROTOCOL

HOST_SHARED = ("pixelbox.kernel.atomic.canonical", "pixelbox.kernel.recorder.ops")
"""Kernel modules the host may import: the canonical operations, which replay verification
re-runs on the host so that a recorded chain is checked with the very code that made it; and the
recorder's API table, which the static reader names written calls with, so that written and
executed operations share one vocabulary."""

__all__ = ["HOST_SHARED", "KERNEL_PROTOCOL", "__version__"]
