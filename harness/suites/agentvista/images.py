"""The input images as AgentVista's runner prepares them: RGB, resized so that both sides are
multiples of 28 and the area is at most ``max_pixels`` (2,000,000) and at least ``min_pixels``.

The official runner loads each input through Qwen-VL's image helper with ``max_pixels=2e6`` before
the model sees it and before ``code_interpreter`` preloads it; the model and its code therefore see
the same, resized picture. This module computes the same target size in our own code (round each
side to the nearest multiple of 28, then scale down, or up, to fit the pixel bounds) and writes the
prepared copy beside the episode's other images, so the sandbox's inputs are those copies.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

FACTOR = 28
MAX_PIXELS = 2_000_000
MIN_PIXELS = 4 * FACTOR * FACTOR
MAX_ASPECT = 200


class ImagePrepError(ValueError):
    """An input image cannot be prepared (unreadable, or too elongated); the message says which."""


def target_size(
    width: int, height: int, *, max_pixels: int = MAX_PIXELS, min_pixels: int = MIN_PIXELS
) -> tuple[int, int]:
    """``(width, height)`` after the official resize: sides multiples of :data:`FACTOR`, area within bounds."""
    if width <= 0 or height <= 0:
        raise ImagePrepError(f"image size must be positive, got {width}x{height}")
    if max(width, height) / min(width, height) > MAX_ASPECT:
        raise ImagePrepError(f"image aspect ratio {width}x{height} exceeds {MAX_ASPECT}:1")
    h = max(FACTOR, _round(height))
    w = max(FACTOR, _round(width))
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(FACTOR, math.floor(height / beta / FACTOR) * FACTOR)
        w = max(FACTOR, math.floor(width / beta / FACTOR) * FACTOR)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / FACTOR) * FACTOR
        w = math.ceil(width * beta / FACTOR) * FACTOR
    return w, h


def prepare(source: Path, out_dir: Path, name: str) -> Path:
    """``source`` as the model sees it (RGB, :func:`target_size`), written as ``out_dir/name.png``.

    The file is named after the variable it becomes (``original_image``, ``original_image_1``...)
    plus a short digest of the source, so re-running an episode reuses the copy.
    """
    from PIL import Image, UnidentifiedImageError

    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    target = out_dir / f"{name}-{digest}.png"
    if target.is_file():
        return target
    try:
        with Image.open(source) as opened:
            image = opened.convert("RGB")
    except (OSError, UnidentifiedImageError) as exc:
        raise ImagePrepError(f"cannot read image {source}: {exc}") from None
    size = target_size(*image.size)
    if size != image.size:
        image = image.resize(size, Image.Resampling.BICUBIC)
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".tmp")
    image.save(partial, format="PNG")
    partial.replace(target)
    return target


def input_names(count: int) -> list[str]:
    """The variable of each input, in order: ``original_image``, then ``original_image_1``, ``_2``..."""
    return ["original_image" if k == 0 else f"original_image_{k}" for k in range(count)]


def _round(value: float) -> int:
    return round(value / FACTOR) * FACTOR
