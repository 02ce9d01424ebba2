"""Classify convolution kernels and intensity curves by what they do to an image."""

from __future__ import annotations

from typing import Any

import numpy as np


def classify_kernel(weights: np.ndarray) -> tuple[str, dict[str, Any]]:
    """A filter kernel is a blur (non-negative), an edge detector (sums to 0) or a sharpener."""
    weights = np.asarray(weights, dtype=float)
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


def classify_lut(before: np.ndarray, after: np.ndarray) -> tuple[str, dict[str, Any]]:
    """Classify a per-pixel intensity map from the values it produced (never by calling user code)."""
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
