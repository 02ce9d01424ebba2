"""OpenCV (``cv2``) functions and the CLAHE object."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from pixelbox.contract.geometry import Affine, crop_map, is_right_angle
from pixelbox.kernel.recorder import libs
from pixelbox.kernel.recorder.images import size_of
from pixelbox.kernel.recorder.ops.base import (
    CHAINED,
    Args,
    Observed,
    Virtual,
    flip_obs,
    image_or_none,
    num,
    resize_obs,
    rotate_obs,
    simple,
)
from pixelbox.kernel.recorder.ops.kernels import classify_kernel

_THRESHOLD_MODES = {0: "binary", 1: "binary_inv", 2: "trunc", 3: "tozero", 4: "tozero_inv"}
_ROTATE_CODES = {0: -90.0, 1: 180.0, 2: 90.0}


@lru_cache(maxsize=1)
def _color_codes() -> dict[int, str]:
    import cv2

    codes: dict[int, str] = {}
    for name in sorted(dir(cv2)):
        if name.startswith("COLOR_"):
            codes.setdefault(int(getattr(cv2, name)), name[len("COLOR_") :].upper())
    return codes


def cvt_color(a: Args) -> Observed:
    source, code = a.get(0, "src"), int(a.get(1, "code"))
    name = _color_codes().get(code, str(code))
    op = "grayscale" if name.endswith("2GRAY") else "convert"
    return Observed(op, [source], a.result, {"code": name})


def threshold(a: Args) -> Observed:
    source = a.get(0, "src")
    kind = int(a.get(3, "type", 0))
    retval, output = a.result if isinstance(a.result, tuple) else (a.get(1, "thresh"), None)
    method = "otsu" if kind & 8 else "triangle" if kind & 16 else "fixed"
    params = {
        "value": num(retval),
        "maxval": num(a.get(2, "maxval")),
        "mode": _THRESHOLD_MODES.get(kind & 7, str(kind & 7)),
        "method": method,
    }
    return Observed("threshold", [source], image_or_none(output), params)


def adaptive_threshold(a: Args) -> Observed:
    params = {
        "method": "adaptive",
        "adaptive": "gaussian" if int(a.get(2, "adaptiveMethod", 0)) == 1 else "mean",
        "mode": _THRESHOLD_MODES.get(int(a.get(3, "thresholdType", 0)), "binary"),
        "block_size": num(a.get(4, "blockSize")),
        "c": num(a.get(5, "C")),
    }
    return Observed("threshold", [a.get(0, "src")], a.result, params)


def in_range(a: Args) -> Observed:
    params = {"method": "in_range", "lower": _plain(a.get(1, "lowerb")), "upper": _plain(a.get(2, "upperb"))}
    return Observed("threshold", [a.get(0, "src")], a.result, params)


def _plain(value: Any) -> Any:
    if isinstance(value, libs.ndarray):
        return value.tolist()
    if isinstance(value, (tuple, list)):
        return [num(v) for v in value]
    return num(value)


def gaussian_blur(a: Args) -> Observed:
    ksize = a.get(1, "ksize")
    sigma = float(a.get(2, "sigmaX", 0) or 0)
    if sigma <= 0 and ksize:
        sigma = 0.3 * ((int(ksize[0]) - 1) * 0.5 - 1) + 0.8
    params = {"method": "gaussian", "ksize": _plain(ksize), "radius": round(sigma, 4)}
    return Observed("blur", [a.get(0, "src")], a.result, params)


def box_blur(a: Args) -> Observed:
    ksize = a.get(1, "ksize")
    return Observed("blur", [a.get(0, "src")], a.result, {"method": "box", "ksize": _plain(ksize)})


def median_blur(a: Args) -> Observed:
    return Observed("denoise", [a.get(0, "src")], a.result, {"method": "median", "ksize": num(a.get(1, "ksize"))})


def bilateral(a: Args) -> Observed:
    params = {"method": "bilateral", "d": num(a.get(1, "d")), "strength": num(a.get(2, "sigmaColor"))}
    return Observed("denoise", [a.get(0, "src")], a.result, params)


def nl_means(a: Args) -> Observed:
    params = {"method": "nl_means", "strength": num(a.get(2, "h", 3))}
    return Observed("denoise", [a.get(0, "src")], a.result, params)


def edges(method: str) -> Any:
    def describe(a: Args) -> Observed:
        params: dict[str, Any] = {"method": method}
        if method == "canny":
            params.update(low=num(a.get(1, "threshold1")), high=num(a.get(2, "threshold2")))
        return Observed("edge_detect", [a.get(0, "src")], a.result, params)

    return describe


def clahe_apply(a: Args) -> Observed:
    clahe = a.args[0]
    params = {"method": "clahe", "clip_limit": num(clahe.getClipLimit()), "tiles": list(clahe.getTilesGridSize())}
    return Observed("equalize", [a.get(1, "src")], a.result, params)


def convert_scale_abs(a: Args) -> Observed:
    alpha, beta = float(a.get(2, "alpha", 1.0)), float(a.get(3, "beta", 0.0))
    if alpha != 1.0:
        params = {"kind": "contrast", "factor": round(alpha, 4), "offset": round(beta, 4)}
    else:
        params = {"kind": "brightness", "factor": 1.0, "offset": round(beta, 4)}
    return Observed("enhance", [a.get(0, "src")], a.result, params)


def add_weighted(a: Args) -> Observed:
    first, alpha, second, beta = a.get(0, "src1"), float(a.get(1, "alpha")), a.get(2, "src2"), float(a.get(3, "beta"))
    if beta < 0 < alpha:
        params = {"method": "unsharp_mask", "amount": round(alpha - 1.0, 4)}
        return Observed("sharpen", [first, second], a.result, params)
    return Observed("composite", [first, second], a.result, {"method": "add_weighted", "alpha": alpha, "beta": beta})


def normalize(a: Args) -> Observed:
    norm = int(a.get(4, "norm_type", 4))
    op = "autocontrast" if norm == 32 else "other"
    params = {"cutoff": 0, "low": num(a.get(2, "alpha", 1)), "high": num(a.get(3, "beta", 0))} if norm == 32 else {}
    return Observed(op, [a.get(0, "src")], a.result, params)


def cv_resize(a: Args) -> Observed:
    return resize_obs(a.get(0, "src"), a.result, interpolation=num(a.get(5, "interpolation", 1)))


def cv_rotate(a: Args) -> Observed:
    return rotate_obs(a.get(0, "src"), a.result, _ROTATE_CODES.get(int(a.get(1, "rotateCode")), 0.0), True)


def cv_flip(a: Args) -> Observed:
    code = int(a.get(1, "flipCode"))
    direction = "vertical" if code == 0 else "horizontal" if code > 0 else "both"
    return flip_obs(a.get(0, "src"), a.result, direction)


def warp_affine(a: Args) -> Observed:
    import numpy as np  # loaded: cv2 needs it

    source, matrix = a.get(0, "src"), np.asarray(a.get(1, "M"), dtype=float)
    forward = (matrix[0, 0], matrix[0, 1], matrix[0, 2], matrix[1, 0], matrix[1, 1], matrix[1, 2])
    geometry = _invert(forward)
    scale = math.hypot(matrix[0, 0], matrix[0, 1])
    angle = math.degrees(math.atan2(matrix[0, 1], matrix[0, 0]))
    if abs(angle) < 1e-6:
        return Observed("other", [source], a.result, {"method": "affine"}, geometry)
    expand = size_of(a.result) != size_of(source) if a.result is not None else False
    params = {"angle": round(angle, 4), "expand": expand, "scale": round(scale, 4)}
    return Observed("rotate", [source], a.result, params, geometry, approximate=not is_right_angle(angle))


def _invert(m: Affine) -> Affine | None:
    a, b, c, d, e, f = m
    det = a * e - b * d
    if abs(det) < 1e-12:
        return None
    return (e / det, -b / det, (b * f - c * e) / det, -d / det, a / det, (c * d - a * f) / det)


def make_border(a: Args) -> Observed:
    top, left = int(a.get(1, "top")), int(a.get(3, "left"))
    params = {"method": "pad", "top": top, "bottom": num(a.get(2, "bottom")), "left": left}
    return Observed("other", [a.get(0, "src")], a.result, params, crop_map(-left, -top))


def pyramid(direction: str) -> Any:
    def describe(a: Args) -> Observed:
        return resize_obs(a.get(0, "src"), a.result, method=f"pyr_{direction}")

    return describe


def filter_2d(a: Args) -> Observed:
    op, params = classify_kernel(a.get(2, "kernel"))
    return Observed(op, [a.get(0, "src")], a.result, params)


_REDUCED_FACTORS = {16: 2, 32: 4, 64: 8}  # IMREAD_REDUCED_*_2/4/8 (colour when bit 0 is set)


def imread(a: Args) -> Observed | list[Observed]:
    """A read; flags that transform the image are recorded as what they do.

    ``IMREAD_REDUCED_*_N`` is a read then a 1/N resize; ``IMREAD_GRAYSCALE`` (and a reduced
    grayscale read) is a read then a grayscale conversion, when the result has one channel.
    """
    result = image_or_none(a.result)
    opened = {"action": "open", "path": str(a.get(0, "filename"))}
    flags = a.get(1, "flags")
    if result is None or flags is None or isinstance(flags, bool):
        return Observed("io", [], result, opened, None)
    flags = int(flags)
    factor = _REDUCED_FACTORS.get(flags & 0x70, 1) if flags > 0 else 1
    gray = flags >= 0 and not flags & 1 and not flags & 4 and len(result.shape) == 2
    if factor == 1 and not gray:
        return Observed("io", [], result, opened, None)
    w, h = size_of(result)
    # The read's pixels are the reduced ones: root boxes are in the reduced image's pixels (the same
    # 0-1000 boxes as the full image's), and a task input the I/O layer named while loading stays the root.
    chain = [Observed("io", [], Virtual((w, h), of=result), {**opened, "flags": flags}, None)]
    if factor > 1:
        out = Virtual((w, h)) if gray else result
        params = {"size": [w, h], "scale": [round(1 / factor, 4)] * 2, "method": "imread_reduced"}
        chain.append(Observed("resize", [CHAINED], out, params))
    if gray:
        chain.append(Observed("grayscale", [CHAINED], result, {"method": "imread"}))
    return chain


def imwrite(a: Args) -> Observed:
    return Observed("io", [a.get(1, "img")], None, {"action": "save", "path": str(a.get(0, "filename"))})


def imshow(a: Args) -> Observed:
    return Observed("io", [a.get(1, "mat")], None, {"action": "show"})


def cv_draw(shape: str) -> Any:
    def describe(a: Args) -> Observed:
        canvas = a.get(0, "img")
        return Observed("draw", [canvas], canvas, {"shape": shape})

    return describe


def morphology(method: str) -> Any:
    def describe(a: Args) -> Observed:
        if method == "morphology_ex":
            names = {0: "erode", 1: "dilate", 2: "open", 3: "close", 4: "gradient", 5: "tophat", 6: "blackhat"}
            return Observed("morphology", [a.get(0, "src")], a.result, {"method": names.get(int(a.get(1, "op")), "?")})
        return Observed("morphology", [a.get(0, "src")], a.result, {"method": method})

    return describe


SPECS: list[tuple[str, str, Any]] = [
    ("cv2.cvtColor", "convert", cvt_color),
    ("cv2.threshold", "threshold", threshold),
    ("cv2.adaptiveThreshold", "threshold", adaptive_threshold),
    ("cv2.inRange", "threshold", in_range),
    ("cv2.GaussianBlur", "blur", gaussian_blur),
    ("cv2.blur", "blur", box_blur),
    ("cv2.boxFilter", "blur", simple("blur", method="box")),
    ("cv2.medianBlur", "denoise", median_blur),
    ("cv2.bilateralFilter", "denoise", bilateral),
    ("cv2.fastNlMeansDenoising", "denoise", nl_means),
    ("cv2.fastNlMeansDenoisingColored", "denoise", nl_means),
    ("cv2.Canny", "edge_detect", edges("canny")),
    ("cv2.Sobel", "edge_detect", edges("sobel")),
    ("cv2.Scharr", "edge_detect", edges("scharr")),
    ("cv2.Laplacian", "edge_detect", edges("laplacian")),
    ("cv2.equalizeHist", "equalize", simple("equalize", method="histogram")),
    ("cv2.CLAHE.apply", "equalize", clahe_apply),
    ("cv2.bitwise_not", "invert", simple("invert")),
    ("cv2.convertScaleAbs", "enhance", convert_scale_abs),
    ("cv2.addWeighted", "composite", add_weighted),
    ("cv2.normalize", "autocontrast", normalize),
    ("cv2.resize", "resize", cv_resize),
    ("cv2.pyrDown", "resize", pyramid("down")),
    ("cv2.pyrUp", "resize", pyramid("up")),
    ("cv2.rotate", "rotate", cv_rotate),
    ("cv2.flip", "flip", cv_flip),
    ("cv2.warpAffine", "rotate", warp_affine),
    ("cv2.warpPerspective", "other", simple("other", method="perspective")),
    ("cv2.copyMakeBorder", "other", make_border),
    ("cv2.filter2D", "other", filter_2d),
    ("cv2.detailEnhance", "sharpen", simple("sharpen", method="detail_enhance")),
    ("cv2.dft", "fft", simple("fft", method="dft")),
    ("cv2.idft", "fft", simple("fft", method="idft")),
    ("cv2.LUT", "enhance", simple("enhance", kind="curve")),
    ("cv2.merge", "convert", simple("convert", method="merge")),
    ("cv2.erode", "morphology", morphology("erode")),
    ("cv2.dilate", "morphology", morphology("dilate")),
    ("cv2.morphologyEx", "morphology", morphology("morphology_ex")),
    ("cv2.absdiff", "composite", simple("composite", method="absdiff")),
    ("cv2.bitwise_and", "composite", simple("composite", method="bitwise_and")),
    ("cv2.bitwise_or", "composite", simple("composite", method="bitwise_or")),
    ("cv2.add", "composite", simple("composite", method="add")),
    ("cv2.imread", "io", imread),
    ("cv2.imwrite", "io", imwrite),
    ("cv2.imshow", "io", imshow),
] + [
    (f"cv2.{name}", "draw", cv_draw(shape))
    for name, shape in (
        ("rectangle", "rectangle"),
        ("circle", "circle"),
        ("line", "line"),
        ("arrowedLine", "line"),
        ("ellipse", "ellipse"),
        ("putText", "text"),
        ("polylines", "polygon"),
        ("fillPoly", "polygon"),
        ("drawContours", "contours"),
    )
]

INPLACE = frozenset(f"cv2.{n}" for n in ("rectangle", "circle", "line", "arrowedLine", "ellipse", "putText"))
