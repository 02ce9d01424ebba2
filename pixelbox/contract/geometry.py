"""Image lineage: where an image's pixels come from in its root image.

Each image carries an affine map from its own pixel coordinates (edges, x right, y down) to
its root's, composed through crops, resizes, flips and rotations. Right-angle rotations and
flips compose exactly; other rotations and unknown geometry mark the lineage approximate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Affine = tuple[float, float, float, float, float, float]
"""``(a, b, c, d, e, f)``: ``X = a*x + b*y + c``, ``Y = d*x + e*y + f``."""

IDENTITY: Affine = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0)


@dataclass(frozen=True)
class Lineage:
    """The root an image descends from, the root's size, and this image's map into it."""

    root: str
    root_size: tuple[int, int]
    to_root: Affine = IDENTITY
    approximate: bool = False

    def then(self, out_to_in: Affine, approximate: bool = False) -> Lineage:
        """Lineage of an image derived from this one through ``out_to_in`` (output px -> input px)."""
        return Lineage(self.root, self.root_size, compose(self.to_root, out_to_in), self.approximate or approximate)

    def box_to_root(self, box: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
        """Bounding box in root pixels of ``box`` (x0, y0, x1, y1) given in this image's pixels."""
        x0, y0, x1, y1 = box
        points = [apply(self.to_root, x, y) for x, y in ((x0, y0), (x1, y0), (x0, y1), (x1, y1))]
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        return min(xs), min(ys), max(xs), max(ys)


def compose(outer: Affine, inner: Affine) -> Affine:
    """The map ``outer(inner(p))``."""
    a1, b1, c1, d1, e1, f1 = outer
    a2, b2, c2, d2, e2, f2 = inner
    return (
        a1 * a2 + b1 * d2,
        a1 * b2 + b1 * e2,
        a1 * c2 + b1 * f2 + c1,
        d1 * a2 + e1 * d2,
        d1 * b2 + e1 * e2,
        d1 * c2 + e1 * f2 + f1,
    )


def apply(m: Affine, x: float, y: float) -> tuple[float, float]:
    return m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]


def crop_map(x0: float, y0: float) -> Affine:
    return (1.0, 0.0, float(x0), 0.0, 1.0, float(y0))


def scale_map(in_size: tuple[int, int], out_size: tuple[int, int]) -> Affine:
    return (in_size[0] / max(out_size[0], 1), 0.0, 0.0, 0.0, in_size[1] / max(out_size[1], 1), 0.0)


def flip_map(direction: str, in_size: tuple[int, int]) -> Affine:
    w, h = in_size
    sx = -1.0 if direction in ("horizontal", "both") else 1.0
    sy = -1.0 if direction in ("vertical", "both") else 1.0
    return (sx, 0.0, w if sx < 0 else 0.0, 0.0, sy, h if sy < 0 else 0.0)


def transpose_map(method: str, in_size: tuple[int, int]) -> Affine:
    """Output px -> input px for a swap of the axes: ``transpose`` (main diagonal, ``a.T``) or
    ``transverse`` (anti-diagonal)."""
    if method == "transpose":
        return (0.0, 1.0, 0.0, 1.0, 0.0, 0.0)
    w, h = in_size
    return (0.0, -1.0, float(w), -1.0, 0.0, float(h))


def rotate_map(angle: float, in_size: tuple[int, int], out_size: tuple[int, int]) -> Affine:
    """Output px -> input px for a counterclockwise rotation by ``angle`` degrees about the centres."""
    theta = math.radians(angle)
    cos, sin = _clean(math.cos(theta)), _clean(math.sin(theta))
    cxi, cyi = in_size[0] / 2, in_size[1] / 2
    cxo, cyo = out_size[0] / 2, out_size[1] / 2
    return (cos, -sin, cxi - cos * cxo + sin * cyo, sin, cos, cyi - sin * cxo - cos * cyo)


def is_right_angle(angle: float) -> bool:
    return abs(angle / 90 - round(angle / 90)) < 1e-9


def _clean(v: float) -> float:
    """Snap values within float noise of -1, 0 or 1 so right-angle maps stay exact."""
    for target in (-1.0, 0.0, 1.0):
        if abs(v - target) < 1e-12:
            return target
    return v


def clip_box(box: tuple[float, ...], size: tuple[int, int]) -> tuple[float, float, float, float]:
    """``box`` (x0, y0, x1, y1) with each coordinate clipped to an image of ``size``."""
    w, h = size
    x0, y0, x1, y1 = box
    return min(max(x0, 0.0), w), min(max(y0, 0.0), h), min(max(x1, 0.0), w), min(max(y1, 0.0), h)


def normalize_box(box: tuple[float, float, float, float], size: tuple[int, int]) -> list[float]:
    """Pixel box -> 0-1000 coordinates of an image of ``size`` (Agentic-MME's ``bbox_2d``)."""
    w, h = max(size[0], 1), max(size[1], 1)
    x0, y0, x1, y1 = box
    return [_round(x0 / w * 1000), _round(y0 / h * 1000), _round(x1 / w * 1000), _round(y1 / h * 1000)]


def _round(v: float) -> float:
    r = round(v, 1)
    return 0.0 if r == 0 else r
