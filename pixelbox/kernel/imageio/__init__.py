"""Redirected image I/O, in the kernel: inputs served every way models reach for them, every
written or shown image captured as a numbered artifact, nothing overwritten, nothing guessed.

Installed by :mod:`pixelbox.kernel.plugins` as the ``io`` layer with the config's ``io`` section::

    {
      "enabled": true,
      "profile": {"name": "agentic-mme", "stem": "transformed_image_", ...},   # default: generic
                                                 # (pixelbox.contract.config.ProfileSpec, as data)
      "inputs": [{"index": 0, "name": "image_0001.png", "path": "/inputs/image_0001.png"}, ...],
      "workspace": "/workspace",                 # absolute, existing; the kernel's cwd
      "artifact_dir": "/workspace",              # optional, inside the workspace; default = workspace
      "limits": {"max_artifacts_per_exec": 32,   # optional, each key optional
                 "max_pixels_per_image": 40000000,
                 "max_pixels_per_exec": 160000000},
      "capture_open_figures": true | false,      # optional; default from the profile
      "first_index": 1                           # optional; number of the next artifact (after a restart)
    }

Input indices must be 0, 1, 2... in order; ``name`` is the file name the model is told. Unknown
keys are errors, so a typo in the host is caught at kernel start.

What model code gets (see docs/imageio.md for the full rules):
- profile conventions: environment variables, preloaded PIL variables, artifact names;
- captures of PIL / cv2 / matplotlib / imageio / skimage writes, ``Image.show``, ``cv2.imshow``,
  ``plt.show``, ``display()`` and a last-expression image; each announced with
  ``channel.publish("artifact", record)``; relocations announced with ``publish("normalization", ...)``;
- reads of made-up paths resolved to inputs or artifacts, or a clear error listing the images.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pixelbox.kernel.imageio.errors import (
    AmbiguousImagePathError,
    ArtifactLimitError,
    ImageNotFoundError,
    NotAnImageError,
)
from pixelbox.kernel.imageio.layer import IOLayer
from pixelbox.kernel.imageio.settings import IOSettings, SettingsError, parse_section
from pixelbox.kernel.imageio.store import Publish

_current: IOLayer | None = None


def install(shell: Any, section: Mapping[str, Any], publish: Publish | None = None) -> IOLayer:
    """Install the layer into ``shell`` (an IPython InteractiveShell) from the host's ``io`` section.

    ``publish`` defaults to :func:`pixelbox.kernel.channel.publish`. Installing again first
    removes the previous layer, so a shell never carries two.
    """
    global _current
    settings = parse_section(section)
    if _current is not None:
        uninstall()
    layer = IOLayer(shell, settings) if publish is None else IOLayer(shell, settings, publish)
    try:
        _wire(layer)
    except BaseException:
        layer.uninstall()
        raise
    _current = layer
    return layer


def current_layer() -> IOLayer | None:
    """The installed layer, if any (the recorder and atomic tools look artifacts up here)."""
    return _current


def uninstall() -> None:
    """Remove the installed layer and restore every patched library and variable."""
    global _current
    if _current is not None:
        _current.uninstall()
        _current = None


def _wire(layer: IOLayer) -> None:
    from pixelbox.kernel.imageio import cv2_hooks, imageio_hooks, ipython_hooks, mpl_hooks, open_hook, pil_hooks

    layer.set_environment()
    pil_hooks.install(layer, layer.patcher)
    cv2_hooks.install(layer, layer.patcher)
    figures = mpl_hooks.install(layer, layer.patcher)
    imageio_hooks.install(layer, layer.patcher)
    open_hook.install(layer, layer.patcher)
    ipython_hooks.install(layer, layer.patcher, figures)
    layer.shell.events.register("pre_run_cell", layer.pre_run_cell)
    layer.shell.events.register("post_run_cell", layer.post_run_cell)
    layer.preload_inputs()


__all__ = [
    "AmbiguousImagePathError",
    "ArtifactLimitError",
    "IOLayer",
    "IOSettings",
    "ImageNotFoundError",
    "NotAnImageError",
    "SettingsError",
    "current_layer",
    "install",
    "parse_section",
    "uninstall",
]
