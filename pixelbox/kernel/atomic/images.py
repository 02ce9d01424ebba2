"""The images atomic tools address, and the steps every kernel tool shares: find, load, capture.

Images are numbered as the I/O layer numbers them: the task inputs first (0, 1, ...), then every
artifact captured so far. Used by the atomic tools (:mod:`pixelbox.kernel.atomic`) and by the
kernel's internal tools (OCR, generated images), so all of them look images up and capture results
the same way. Only stdlib and PIL are used.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any

from pixelbox.contract.tools import ToolError

_WORKING_MODES = ("RGB", "RGBA", "L")


@dataclass(frozen=True)
class ImageRef:
    """One image the tools can address: its index, lineage key, file name and kernel path."""

    index: int
    key: str
    name: str
    path: str


def available_images(layer: Any) -> list[ImageRef]:
    """Inputs, then artifacts, in index order (an input wins if an artifact index collides with it)."""
    refs = {
        image.index: ImageRef(image.index, f"input:{image.index}", image.name, image.path)
        for image in layer.settings.inputs
    }
    for record in layer.store.records:
        refs.setdefault(
            record["index"], ImageRef(record["index"], f"artifact:{record['index']}", record["name"], record["path"])
        )
    return [refs[index] for index in sorted(refs)]


def find_image(layer: Any, index: int) -> ImageRef:
    """The image at ``index``, or a :class:`ToolError` listing the images there are."""
    images = available_images(layer)
    found = next((ref for ref in images if ref.index == index), None)
    if found is None:
        listing = ", ".join(f"{ref.index} ({ref.name})" for ref in images) or "none"
        raise ToolError(f"image_index {index} does not exist; the images are: {listing}")
    return found


def io_layer() -> Any:
    from pixelbox.kernel.imageio import current_layer

    layer = current_layer()
    if layer is None:
        raise ToolError("atomic tools need the image I/O layer; start the sandbox with io enabled")
    return layer


def load(layer: Any, ref: ImageRef) -> Any:
    """Decode the image file (unpatched), in a mode every tool handles, registered under its lineage key."""
    from PIL import Image

    from pixelbox.kernel.imageio import recorder_link

    with layer.guard(), Image.open(ref.path) as opened:
        opened.load()
        image = opened.copy()
    if image.mode not in _WORKING_MODES:
        has_alpha = "A" in image.getbands() or "transparency" in image.info
        image = image.convert("RGBA" if has_alpha else "RGB")
    recorder_link.register_root(image, ref.key)
    return image


def capture(layer: Any, image: Any, kind: str, api: str) -> dict[str, Any]:
    from pixelbox.kernel.imageio import ArtifactLimitError
    from pixelbox.kernel.imageio.pil_hooks import capture_shown

    try:
        return capture_shown(layer, image, kind, api)
    except ArtifactLimitError as exc:
        raise ToolError(str(exc).replace("this code block", "this call")) from None


def take_upload(layer: Any, path: str, tool: str) -> Any:
    """Decode the image file the host uploaded to the workspace for ``tool``, then delete the file.

    Only a file inside the workspace is read (a :class:`ToolError` naming ``tool`` otherwise), decoded
    under the I/O layer's guard so the read records nothing.
    """
    from PIL import Image

    real = os.path.realpath(str(path))
    if os.path.commonpath([real, layer.settings.workspace]) != layer.settings.workspace or not os.path.isfile(real):
        raise ToolError(f"{tool}: {path!r} is not a file in the workspace")
    try:
        with layer.guard(), Image.open(real) as opened:
            opened.load()
            return opened.copy()
    except (OSError, SyntaxError, ValueError) as exc:
        raise ToolError(f"{tool}: {path!r} is not a readable image ({exc})") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(real)
