"""What the kernel states about an image file it captured: digest, size, dimensions, mode, format."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from PIL import Image

from pixelbox.kernel.imageio.errors import NotAnImageError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ImageFacts:
    """Facts read back from the bytes on disk, never from the object the code passed."""

    sha256: str
    size_bytes: int
    width: int
    height: int
    mode: str
    format: str


def read_facts(path: str) -> ImageFacts:
    """Hash the file and read its image header (pixels are not decoded)."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    try:
        with Image.open(path) as image:
            width, height = image.size
            mode, fmt = image.mode, image.format or "UNKNOWN"
    except (Image.UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise NotAnImageError(f"the file written at {path!r} is not a readable image ({exc})") from exc
    return ImageFacts(digest.hexdigest(), size, width, height, mode, fmt)


def pixel_count(obj: Any) -> int | None:
    """Pixels in a PIL image, image-shaped array or matplotlib figure (None when unknown)."""
    size = getattr(obj, "size", None)
    if isinstance(obj, Image.Image) and isinstance(size, tuple):
        return int(size[0]) * int(size[1])
    shape = getattr(obj, "shape", None)
    if isinstance(shape, tuple) and len(shape) >= 2:
        return int(shape[0]) * int(shape[1])
    inches = getattr(obj, "get_size_inches", None)
    if callable(inches):
        width, height = inches()
        dpi = float(getattr(obj, "dpi", 100.0))
        return round(width * dpi) * round(height * dpi)
    return None
