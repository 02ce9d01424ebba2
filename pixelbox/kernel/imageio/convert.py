"""Turning shown objects into files a browser-grade PNG decoder can read.

Nothing here imports NumPy or Pillow at module load: the layer is installed at kernel start,
and those imports cost about half a second of every cold start under gVisor. A function that
is handed an array or image imports its library then (it is loaded already); a test on an
arbitrary object looks in ``sys.modules``, since no array or image exists before the import.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

MIN_DISPLAY_SIDE = 16
"""Arrays passed to display() become images only from this size up; smaller ones stay text."""

_PNG_MODES = frozenset({"1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"})


def is_pil_image(obj: Any) -> bool:
    """Whether ``obj`` is a PIL image (never true before the model's code imported PIL)."""
    image_class = getattr(sys.modules.get("PIL.Image"), "Image", None)
    return isinstance(image_class, type) and isinstance(obj, image_class)


def png_ready(image: Image.Image) -> Image.Image:
    """``image`` itself when PNG can hold its mode, else an RGB (or L) conversion."""
    if image.mode in _PNG_MODES:
        return image
    if image.mode == "F":
        import numpy as np
        from PIL import Image

        return Image.fromarray(_to_uint8(np.asarray(image)))
    return image.convert("RGB")


def looks_like_image(obj: Any) -> bool:
    """Whether an array is shaped like a picture (H x W, or H x W x 1/3/4) of displayable size."""
    np = sys.modules.get("numpy")
    if np is None or not isinstance(obj, np.ndarray) or obj.dtype.kind not in "buif":
        return False
    if obj.ndim == 3 and obj.shape[2] not in (1, 3, 4):
        return False
    if obj.ndim not in (2, 3):
        return False
    return min(obj.shape[0], obj.shape[1]) >= MIN_DISPLAY_SIDE


def array_to_image(array: np.ndarray) -> Image.Image:
    """An RGB-convention array (matplotlib / PIL order) as a PIL image."""
    from PIL import Image

    data = array[:, :, 0] if array.ndim == 3 and array.shape[2] == 1 else array
    return Image.fromarray(_to_uint8(data))


def imshow_array(mat: Any) -> np.ndarray:
    """What ``cv2.imshow`` would put on screen, as a uint8 BGR array ready for ``cv2.imwrite``.

    imshow scales floats by 255 and 16-bit values by 1/256; imwrite would not, so the
    conversion happens here to keep the captured image equal to the one shown.
    """
    import numpy as np

    array = mat.get() if hasattr(mat, "get") and not isinstance(mat, np.ndarray) else np.asarray(mat)
    if array.dtype.kind == "f":
        return np.clip(array * 255.0, 0, 255).astype(np.uint8)
    if array.dtype in (np.uint16, np.int16):
        return (array.astype(np.int32) // 256).clip(0, 255).astype(np.uint8)
    if array.dtype.kind == "b":
        return array.astype(np.uint8) * 255
    return array.astype(np.uint8, copy=False)


def _to_uint8(array: np.ndarray) -> np.ndarray:
    import numpy as np

    if array.dtype == np.uint8:
        return array
    if array.dtype.kind == "b":
        return array.astype(np.uint8) * 255
    if array.dtype.kind == "f":
        finite = np.nan_to_num(array.astype(np.float64))
        scale = 255.0 if finite.size and float(finite.max()) <= 1.0 else 1.0
        return np.clip(finite * scale, 0, 255).astype(np.uint8)
    return np.clip(array, 0, 255).astype(np.uint8)
