"""In-kernel side of pixelbox: code that runs *inside* the sandboxed Jupyter kernel.

Only the standard library, numpy, PIL, cv2 (and IPython/ipykernel, which host the kernel)
may be imported here: this package is copied into container images and must not depend on
anything host-only (docker, libcst, openai...). Its version is the distribution version, so
the host can detect a stale image at kernel start.
"""

from pixelbox import __version__

KERNEL_PROTOCOL = 1
"""Bumped whenever the host/kernel contract (config, channel MIME types) changes."""

__all__ = ["KERNEL_PROTOCOL", "__version__"]
