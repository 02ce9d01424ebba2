"""pixelbox: sandboxed, traced Python execution for agents that think with images.

This top-level module stays import-light on purpose: it is also shipped into kernel
images, where only the in-kernel package ``pixelbox.kernel`` and its dependencies exist.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
