"""Small, pure helpers about paths as model code writes them."""

from __future__ import annotations

import os
from typing import Any

IMAGE_EXTENSIONS = frozenset(
    {".png", ".jpg", ".jpeg", ".jpe", ".jfif", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm", ".pbm", ".pnm"}
)
"""Raster formats captured as artifacts; any other non-empty extension (.pdf, .svg, .mp4...) passes through."""

PLACEHOLDER_DIRS = ("/mnt/data", "/mnt/user-data", "/mnt/efs", "/mnt/inputs", "/mnt")
"""Directories that models invent for their inputs (OpenAI-style sandboxes and others)."""

PLACEHOLDER_STEMS = frozenset(
    {"image", "img", "input", "input_image", "original", "original_image", "picture", "photo"}
)
"""File stems that, in a path that does not exist, plainly mean "the input image"."""

_FORMAT_EXTENSIONS = {"JPEG": ".jpg", "JPG": ".jpg", "TIFF": ".tiff", "TIF": ".tiff"}


def path_text(target: Any) -> str | None:
    """The path a str / bytes / os.PathLike names, or None for file objects and buffers."""
    if isinstance(target, (str, bytes)) or hasattr(target, "__fspath__"):
        try:
            text = os.fsdecode(os.fspath(target))
        except TypeError:
            return None
        if text.startswith("<") or "://" in text:
            return None  # imageio's "<bytes>" and URLs are not files
        return text
    return None


def absolute(text: str) -> str:
    """``text`` made absolute against the current directory, normalized without touching the disk."""
    return os.path.normpath(os.path.join(os.getcwd(), os.path.expanduser(text)))


def is_within(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or below it (both absolute and normalized)."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def extension(text: str) -> str:
    """The lower-case extension of the last component (``""`` for none or for a directory-like path)."""
    if text.endswith(("/", os.sep)):
        return ""
    return os.path.splitext(text)[1].lower()


def extension_for_format(fmt: str | None) -> str | None:
    """The file extension for a format name such as ``"PNG"`` or ``"jpeg"`` (None if unknown)."""
    if not fmt:
        return None
    upper = fmt.upper().lstrip(".")
    if upper in _FORMAT_EXTENSIONS:
        return _FORMAT_EXTENSIONS[upper]
    candidate = "." + upper.lower()
    return candidate if candidate in IMAGE_EXTENSIONS else None


def under_placeholder_dir(path: str) -> bool:
    """Whether an absolute path sits in a directory models invent for their inputs."""
    return any(is_within(path, directory) for directory in PLACEHOLDER_DIRS)
