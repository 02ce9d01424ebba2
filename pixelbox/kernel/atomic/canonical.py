"""Canonical implementations of the 14 atomic image tools, shared by atomic mode and replay.

Each tool validates its arguments (with errors that say what to pass instead), computes the
new image with Pillow/OpenCV, and records the same event that equivalent agent code would:
the parameters are built by the same helpers the operation table uses, so an atomic crop and
a code crop of the same region give equal events apart from ``src`` and ``api``.

``apply(op, params, image)`` re-runs one recorded event from its parameters (replay).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import cv2
import numpy as np
from PIL import Image, ImageEnhance, ImageFilter, ImageOps

from pixelbox.contract.wire import TOOL_API_PREFIX as API_PREFIX
from pixelbox.kernel.recorder.ops.base import Observed, crop_obs, flip_obs, resize_obs, rotate_obs

THRESHOLD_MODES = {
    "binary": cv2.THRESH_BINARY,
    "binary_inv": cv2.THRESH_BINARY_INV,
    "trunc": cv2.THRESH_TRUNC,
    "tozero": cv2.THRESH_TOZERO,
    "tozero_inv": cv2.THRESH_TOZERO_INV,
}
EDGE_METHODS = ("canny", "sobel", "simple")
FLIP_DIRECTIONS = ("horizontal", "vertical", "both")


class ToolError(ValueError):
    """Bad arguments to an atomic tool; the message says what to pass instead."""


# -- pure operations (no recording) --------------------------------------------------------------


def crop_box(size: tuple[int, int], bbox_2d: Any) -> tuple[int, int, int, int]:
    """Pixel box for a 0-1000 ``bbox_2d``, clamped to the image (as the released tools do)."""
    if not isinstance(bbox_2d, (list, tuple)) or len(bbox_2d) != 4:
        raise ToolError(f"bbox_2d must be [x1, y1, x2, y2] in 0-1000 coordinates, got {bbox_2d!r}")
    x1, y1, x2, y2 = (float(v) for v in bbox_2d)
    if x2 <= x1 or y2 <= y1:
        raise ToolError(f"bbox_2d {list(bbox_2d)} is empty: x2 must exceed x1 and y2 must exceed y1")
    w, h = size
    box = [round(x1 / 1000 * w), round(y1 / 1000 * h), round(x2 / 1000 * w), round(y2 / 1000 * h)]
    box = [min(max(box[0], 0), w - 1), min(max(box[1], 0), h - 1), min(max(box[2], 1), w), min(max(box[3], 1), h)]
    box[2], box[3] = max(box[2], box[0] + 1), max(box[3], box[1] + 1)
    return box[0], box[1], box[2], box[3]


def gray(image: Image.Image) -> Image.Image:
    return image if image.mode == "L" else image.convert("L")


def threshold_image(image: Image.Image, value: float, mode: str) -> Image.Image:
    if mode not in THRESHOLD_MODES:
        raise ToolError(f"threshold mode must be one of {sorted(THRESHOLD_MODES)}, got {mode!r}")
    _, out = cv2.threshold(np.asarray(gray(image)), float(value), 255, THRESHOLD_MODES[mode])
    return Image.fromarray(out)


def denoise_image(image: Image.Image, strength: float) -> Image.Image:
    array = np.asarray(image.convert("RGB") if image.mode not in ("L", "RGB") else image)
    if array.ndim == 2:
        return Image.fromarray(cv2.fastNlMeansDenoising(array, None, float(strength)))
    return Image.fromarray(cv2.fastNlMeansDenoisingColored(array, None, float(strength), float(strength)))


def edge_image(image: Image.Image, method: str, low: float = 100, high: float = 200) -> Image.Image:
    if method == "canny":
        return Image.fromarray(cv2.Canny(np.asarray(gray(image)), low, high))
    if method == "sobel":
        g = np.asarray(gray(image)).astype(np.float64)
        magnitude = np.hypot(cv2.Sobel(g, cv2.CV_64F, 1, 0), cv2.Sobel(g, cv2.CV_64F, 0, 1))
        return Image.fromarray(np.clip(magnitude, 0, 255).astype(np.uint8))
    if method == "simple":
        return gray(image).filter(ImageFilter.FIND_EDGES)
    if method == "find_edges":
        return image.filter(ImageFilter.FIND_EDGES)
    raise ToolError(f"edge_detect method must be one of {EDGE_METHODS}, got {method!r}")


def _enhance(image: Image.Image, kind: str, factor: float) -> Image.Image:
    classes = {
        "brightness": ImageEnhance.Brightness,
        "contrast": ImageEnhance.Contrast,
        "sharpness": ImageEnhance.Sharpness,
        "color": ImageEnhance.Color,
    }
    if kind == "gamma":
        return image.point(lambda v: 255 * (v / 255) ** factor)
    return classes[kind](image).enhance(factor)


def apply(op: str, params: dict[str, Any], image: Image.Image) -> Image.Image | None:
    """Re-run one recorded operation on ``image``; ``None`` when its parameters cannot say how."""
    handler = REPLAY.get(op)
    if handler is None:
        return None
    try:
        return handler(image, params)
    except (KeyError, TypeError, ValueError):
        return None


def _apply_crop(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    return image.crop(tuple(p["box_px"]))


def _apply_rotate(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    return image.rotate(p["angle"], resample=Image.Resampling.BICUBIC, expand=p.get("expand", False))


def _apply_flip(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    direction = p["direction"]
    if direction in ("horizontal", "both"):
        image = ImageOps.mirror(image)
    if direction in ("vertical", "both"):
        image = ImageOps.flip(image)
    return image


def _apply_blur(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    if p.get("method") == "box":
        ksize = p.get("ksize") or [5]
        return image.filter(ImageFilter.BoxBlur(int(ksize[0]) // 2))
    return image.filter(ImageFilter.GaussianBlur(float(p.get("radius") or 2)))


def _apply_sharpen(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    if p.get("method") == "unsharp_mask" and p.get("radius"):
        return image.filter(ImageFilter.UnsharpMask(p["radius"], int(p.get("percent") or 150)))
    return image.filter(ImageFilter.SHARPEN)


def _apply_denoise(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    if p.get("method") == "median":
        return image.filter(ImageFilter.MedianFilter(int(p.get("size") or p.get("ksize") or 3)))
    return denoise_image(image, float(p.get("strength") or 10))


def _apply_equalize(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    if p.get("method") == "clahe":
        clahe = cv2.createCLAHE(
            clipLimit=float(p.get("clip_limit") or 2.0), tileGridSize=tuple(p.get("tiles") or (8, 8))
        )
        return Image.fromarray(clahe.apply(np.asarray(gray(image))))
    return ImageOps.equalize(image)


def _apply_threshold(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    return threshold_image(image, float(p["value"]), p.get("mode", "binary"))


def _apply_edges(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    return edge_image(image, p.get("method", "canny"), p.get("low") or 100, p.get("high") or 200)


def _apply_convert(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    mode = p.get("mode")
    return image.convert(mode) if isinstance(mode, str) else image


_AXIS_SWAPS = {"transpose": Image.Transpose.TRANSPOSE, "transverse": Image.Transpose.TRANSVERSE}


def _apply_other(image: Image.Image, p: dict[str, Any]) -> Image.Image:
    """Only axis swaps (``transpose``/``transverse`` without an odd ``axes`` order) can be re-run."""
    if "axes" in p:
        raise KeyError("axes")
    return image.transpose(_AXIS_SWAPS[p["method"]])


REPLAY: dict[str, Any] = {
    "crop": _apply_crop,
    "rotate": _apply_rotate,
    "flip": _apply_flip,
    "resize": lambda image, p: image.resize(tuple(p["size"]), Image.Resampling.LANCZOS),
    "enhance": lambda image, p: _enhance(image, p["kind"], float(p["factor"])),
    "grayscale": lambda image, p: gray(image),
    "autocontrast": lambda image, p: ImageOps.autocontrast(image, cutoff=p.get("cutoff") or 0),
    "invert": lambda image, p: ImageOps.invert(image.convert("RGB") if image.mode == "RGBA" else image),
    "equalize": _apply_equalize,
    "threshold": _apply_threshold,
    "blur": _apply_blur,
    "sharpen": _apply_sharpen,
    "denoise": _apply_denoise,
    "edge_detect": _apply_edges,
    "convert": _apply_convert,
    "other": _apply_other,
    "io": lambda image, p: image,
}
"""How each replayable op (:data:`pixelbox.contract.ops.REPLAYABLE`) is re-run from its recorded parameters."""


# -- atomic tools (compute, then record) ---------------------------------------------------------


def _record(tool: str, observed: Observed, t0: float) -> None:
    from pixelbox.kernel.recorder import current

    current()._observe(lambda: observed, API_PREFIX + tool, None, None, t0)


def _pil(image: Any) -> Image.Image:
    if not isinstance(image, Image.Image):
        raise ToolError(f"atomic tools take a PIL image, got {type(image).__name__}")
    return image


def crop(image: Image.Image, bbox_2d: Any, zoom_scale: float = 1.0) -> Image.Image:
    """Crop a 0-1000 ``bbox_2d`` region, then zoom it by ``zoom_scale`` (0.5-5.0)."""
    image = _pil(image)
    if not 0.5 <= float(zoom_scale) <= 5.0:
        raise ToolError(f"zoom_scale must be between 0.5 and 5.0, got {zoom_scale}")
    t0 = time.perf_counter()
    box = crop_box(image.size, bbox_2d)
    out = image.crop(box)
    _record("crop", crop_obs(image, out, box), t0)
    if float(zoom_scale) != 1.0:
        t0 = time.perf_counter()
        size = (max(1, round(out.width * zoom_scale)), max(1, round(out.height * zoom_scale)))
        zoomed = out.resize(size, Image.Resampling.LANCZOS)
        _record("crop", resize_obs(out, zoomed), t0)
        out = zoomed
    return out


def rotate(image: Image.Image, angle: float, expand: bool = True) -> Image.Image:
    """Rotate counterclockwise by ``angle`` degrees."""
    image, t0 = _pil(image), time.perf_counter()
    out = image.rotate(float(angle), resample=Image.Resampling.BICUBIC, expand=bool(expand))
    _record("rotate", rotate_obs(image, out, float(angle), bool(expand)), t0)
    return out


def flip(image: Image.Image, direction: str = "horizontal") -> Image.Image:
    if direction not in FLIP_DIRECTIONS:
        raise ToolError(f"flip direction must be one of {FLIP_DIRECTIONS}, got {direction!r}")
    image, t0 = _pil(image), time.perf_counter()
    out = _apply_flip(image, {"direction": direction})
    _record("flip", flip_obs(image, out, direction), t0)
    return out


def resize(
    image: Image.Image, width: int | None = None, height: int | None = None, scale: float | None = None
) -> Image.Image:
    """Resize to ``width`` x ``height`` pixels (one may be omitted to keep the aspect), or by ``scale``."""
    image, t0 = _pil(image), time.perf_counter()
    w, h = image.size
    if scale is not None:
        if float(scale) <= 0:
            raise ToolError(f"scale must be positive, got {scale}")
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
    elif width or height:
        size = (int(width or round(w * height / h)), int(height or round(h * width / w)))  # type: ignore[operator]
    else:
        raise ToolError("resize needs width and/or height in pixels, or scale")
    out = image.resize(size, Image.Resampling.LANCZOS)
    _record("resize", resize_obs(image, out), t0)
    return out


def enhance(image: Image.Image, brightness: float = 1.0, contrast: float = 1.0, sharpness: float = 1.0) -> Image.Image:
    """Apply each factor that differs from 1.0, in the order brightness, contrast, sharpness."""
    out = _pil(image)
    for kind, factor in (("brightness", brightness), ("contrast", contrast), ("sharpness", sharpness)):
        if float(factor) < 0:
            raise ToolError(f"{kind} factor must be >= 0 (1.0 leaves the image unchanged), got {factor}")
        if float(factor) != 1.0:
            t0 = time.perf_counter()
            result = _enhance(out, kind, float(factor))
            _record("enhance", Observed("enhance", [out], result, {"kind": kind, "factor": float(factor)}), t0)
            out = result
    return out


def _simple_tool(tool: str, image: Image.Image, out: Image.Image, params: dict[str, Any], t0: float) -> Image.Image:
    _record(tool, Observed(tool, [image], out, params), t0)
    return out


def grayscale(image: Image.Image) -> Image.Image:
    image, t0 = _pil(image), time.perf_counter()
    return _simple_tool("grayscale", image, ImageOps.grayscale(image), {}, t0)


def autocontrast(image: Image.Image, cutoff: float = 0) -> Image.Image:
    image, t0 = _pil(image), time.perf_counter()
    return _simple_tool("autocontrast", image, ImageOps.autocontrast(image, cutoff=cutoff), {"cutoff": cutoff}, t0)


def invert(image: Image.Image) -> Image.Image:
    image, t0 = _pil(image), time.perf_counter()
    return _simple_tool("invert", image, REPLAY["invert"](image, {}), {}, t0)


def equalize(image: Image.Image) -> Image.Image:
    image, t0 = _pil(image), time.perf_counter()
    return _simple_tool("equalize", image, ImageOps.equalize(image), {"method": "histogram"}, t0)


def threshold(image: Image.Image, value: float = 128, mode: str = "binary") -> Image.Image:
    if not 0 <= float(value) <= 255:
        raise ToolError(f"threshold value must be in 0-255, got {value}")
    image, t0 = _pil(image), time.perf_counter()
    params = {"value": value, "maxval": 255, "mode": mode, "method": "fixed"}
    return _simple_tool("threshold", image, threshold_image(image, value, mode), params, t0)


def blur(image: Image.Image, radius: int = 2) -> Image.Image:
    if float(radius) < 0:
        raise ToolError(f"blur radius must be >= 0, got {radius}")
    image, t0 = _pil(image), time.perf_counter()
    out = image.filter(ImageFilter.GaussianBlur(radius))
    return _simple_tool("blur", image, out, {"method": "gaussian", "radius": radius}, t0)


def sharpen(image: Image.Image) -> Image.Image:
    image, t0 = _pil(image), time.perf_counter()
    return _simple_tool("sharpen", image, image.filter(ImageFilter.SHARPEN), {"method": "kernel"}, t0)


def denoise(image: Image.Image, strength: float = 10) -> Image.Image:
    if not 1 <= float(strength) <= 30:
        raise ToolError(f"denoise strength must be between 1 and 30, got {strength}")
    image, t0 = _pil(image), time.perf_counter()
    params = {"method": "nl_means", "strength": strength}
    return _simple_tool("denoise", image, denoise_image(image, strength), params, t0)


def edge_detect(image: Image.Image, method: str = "canny") -> Image.Image:
    image, t0 = _pil(image), time.perf_counter()
    out = edge_image(image, method)
    params: dict[str, Any] = {"method": method if method != "simple" else "find_edges"}
    if method == "canny":
        params.update(low=100, high=200)
    return _simple_tool("edge_detect", image, out, params, t0)


TOOLS: dict[str, Callable[..., Image.Image]] = {
    "crop": crop,
    "rotate": rotate,
    "flip": flip,
    "resize": resize,
    "enhance": enhance,
    "grayscale": grayscale,
    "autocontrast": autocontrast,
    "invert": invert,
    "equalize": equalize,
    "threshold": threshold,
    "blur": blur,
    "sharpen": sharpen,
    "denoise": denoise,
    "edge_detect": edge_detect,
}
"""The atomic tools by name (:data:`pixelbox.contract.ops.TOOL_SPECS` says which there are and what they take)."""
