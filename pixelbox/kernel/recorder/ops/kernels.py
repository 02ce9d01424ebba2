"""Classify convolution kernels and intensity curves by what they do to an image.

NumPy is imported inside the functions: they run only once an operation has been matched,
and importing this module must stay free (see ``pixelbox.kernel.recorder.libs``).
"""

from __future__ import annotations

from typing import Any


def classify_kernel(weights: Any, shape: tuple[int, int] | None = None) -> tuple[str, dict[str, Any]]:
    """A filter kernel (array-like, reshaped to ``shape`` if given) is a blur (non-negative), an
    edge detector (sums to 0) or a sharpener."""
    import numpy as np

    weights = np.asarray(weights, dtype=float)
    if shape is not None:
        weights = weights.reshape(shape)
    total = float(weights.sum())
    if weights.size == 1:
        return "enhance", {"kind": "contrast", "factor": total}
    if abs(total) < 1e-9:
        return "edge_detect", {"method": "kernel"}
    if (weights >= 0).all():
        return "blur", {"method": "kernel", "ksize": list(weights.shape)}
    centre = float(weights[weights.shape[0] // 2, weights.shape[1] // 2])
    if centre > total > 0:
        return "sharpen", {"method": "kernel"}
    return "other", {"method": "kernel"}


def classify_lut(before: Any, after: Any) -> tuple[str, dict[str, Any]]:
    """Classify a per-pixel intensity map from the values it produced (never by calling user code).

    ``before`` and ``after`` are same-sized 8-bit images (arrays or anything NumPy can convert).
    """
    import numpy as np

    before, after = np.asarray(before), np.asarray(after)
    lut = np.full(256, -1, dtype=np.int64)
    lut[before.ravel().astype(np.int64)] = after.ravel().astype(np.int64)
    present = np.flatnonzero(lut >= 0)
    values = lut[present]
    distinct = np.unique(values)
    if distinct.size <= 2 and distinct.size > 0 and bool(np.all(np.diff(values) >= 0)):
        low = int(distinct[0])
        last_low = present[values == low]
        value = int(last_low.max()) if distinct.size == 2 else None
        return "threshold", {"method": "binary", "value": value}
    if bool(np.all(values == 255 - present)):
        return "invert", {}
    return "enhance", {"kind": "curve"}
