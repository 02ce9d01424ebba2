"""What the kernel states about an image file it captured: sha256, size, mtime, dimensions, mode, format.

The kernel hashes the bytes it captured, at capture (as PIL writes them, or read back from the
file for every other writer): the host re-reads and hashes every
artifact anyway (it never trusts the kernel's other facts), and refuses one whose bytes no
longer have the announced digest. Size and mtime alone would let a cell rewrite a captured file
with bytes of the same length and restore its mtime.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

from pixelbox.kernel.imageio.convert import is_pil_image
from pixelbox.kernel.imageio.errors import NotAnImageError


@dataclass(frozen=True)
class ImageFacts:
    """Facts read back from the bytes on disk, never from the object the code passed."""

    sha256: str
    size_bytes: int
    mtime_ns: int
    width: int
    height: int
    mode: str
    format: str


def read_facts(path: str, sha256: str | None = None) -> ImageFacts:
    """Read the file's digest, size, mtime and image header (pixels are not decoded); ``sha256`` is
    the digest taken while the file was written (:mod:`~pixelbox.kernel.imageio.hashing`), when it was."""
    from PIL import Image

    info = os.stat(path)
    digest = sha256 if sha256 is not None else _sha256(path)
    try:
        with Image.open(path) as image:
            width, height = image.size
            mode, fmt = image.mode, image.format or "UNKNOWN"
    except (Image.UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise NotAnImageError(f"the file written at {path!r} is not a readable image ({exc})") from exc
    return ImageFacts(digest, info.st_size, info.st_mtime_ns, width, height, mode, fmt)


def _sha256(path: str) -> str:
    """The file's sha256, read with ``os`` calls (``open`` is patched by the image I/O layer)."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY)
    try:
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def pixel_count(obj: Any) -> int | None:
    """Pixels in a PIL image, image-shaped array or matplotlib figure (None when unknown)."""
    size = getattr(obj, "size", None)
    if is_pil_image(obj) and isinstance(size, tuple):
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
