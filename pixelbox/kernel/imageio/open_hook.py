"""``open()`` in read mode of a missing image file is resolved like the image libraries' reads.

Only reads are touched, only names with an image extension, and only when the file does not
exist: every other ``open()`` call (including every write) behaves exactly as before. Bytes
written through ``open()`` are therefore not captured as artifacts; save with an image
library for that.
"""

from __future__ import annotations

import builtins
import os
from typing import Any

from pixelbox.kernel.imageio.layer import IOLayer
from pixelbox.kernel.imageio.paths import IMAGE_EXTENSIONS, extension
from pixelbox.kernel.patching import Patcher

_WRITE_FLAGS = frozenset("wax+")


def install(layer: IOLayer, patcher: Patcher) -> None:
    """Patch ``builtins.open`` and the cells' own ``open`` (``io.open`` and ``os.open`` are left alone)."""
    patcher.replace(builtins, "open", lambda original: _open(layer, original))
    patcher.replace_item(layer.shell.user_ns, "open", lambda original: _open(layer, original))


def _open(layer: IOLayer, original: Any) -> Any:
    def open_file(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if (
            isinstance(mode, str)
            and not _WRITE_FLAGS.intersection(mode)
            and isinstance(file, (str, os.PathLike))
            and extension(os.fsdecode(os.fspath(file))) in IMAGE_EXTENSIONS
            and not os.path.exists(file)
        ):
            asked = layer.read_target(file)
            if asked is not None:
                file = layer.resolve_read(asked, "open").path
        return original(file, mode, *args, **kwargs)

    return open_file
