"""Errors model code sees from the image I/O layer; each says what went wrong and what to do.

The read errors subclass ``FileNotFoundError`` so code that already handles a missing file
keeps working; the limit error subclasses ``RuntimeError`` so it is never mistaken for an
I/O problem the code could retry.
"""

from __future__ import annotations


class ImageNotFoundError(FileNotFoundError):
    """A read asked for an image path that exists nowhere and matches no known image."""


class AmbiguousImagePathError(FileNotFoundError):
    """A made-up read path could mean more than one known image, so none was picked."""


class ArtifactLimitError(RuntimeError):
    """Capturing this image would exceed a per-execution cap or the per-image pixel cap."""


class NotAnImageError(ValueError):
    """A capture wrote bytes that do not decode as an image; the file was removed."""
