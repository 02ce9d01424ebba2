"""Pillow APIs: ``Image`` methods and functions, ``ImageOps``, ``ImageEnhance``, ``ImageFilter``,
``ImageChops`` and ``ImageDraw``."""

from __future__ import annotations

from typing import Any

from pixelbox.contract.geometry import compose, crop_map, scale_map
from pixelbox.kernel.recorder.images import size_of
from pixelbox.kernel.recorder.ops.base import (
    Args,
    Observed,
    crop_obs,
    flip_obs,
    image_or_none,
    num,
    resize_obs,
    rotate_obs,
    simple,
    transpose_obs,
)
from pixelbox.kernel.recorder.ops.kernels import classify_kernel, classify_lut

_ENHANCE_KINDS = {"Brightness": "brightness", "Contrast": "contrast", "Sharpness": "sharpness", "Color": "color"}
_GRAY_MODES = ("L", "LA", "I", "F", "I;16")


def crop(a: Args) -> Observed:
    image = a.args[0]
    box = a.get(1, "box")
    if box is None:
        box = (0, 0, *image.size)
    return crop_obs(image, a.result, tuple(round(float(v)) for v in box))


def resize(a: Args) -> Observed:
    image = a.args[0]
    box = a.get(3, "box")
    if box is None:
        return resize_obs(image, a.result)
    x0, y0, x1, y1 = (float(v) for v in box)
    observed = resize_obs(image, a.result, box_px=[num(v) for v in box])
    region = (round(x1 - x0), round(y1 - y0))
    observed.geometry = compose(crop_map(x0, y0), scale_map(region, size_of(a.result)))
    return observed


def thumbnail(a: Args) -> Observed:
    image = a.args[0]
    observed = Observed("resize", [image], image, {})
    return _inplace_resize(observed, a.before, image)


def _inplace_resize(observed: Observed, before: Any, image: Any) -> Observed:
    in_size = before or size_of(image)
    out_size = size_of(image)
    observed.params = {
        "size": list(out_size),
        "scale": [round(out_size[0] / in_size[0], 4), round(out_size[1] / in_size[1], 4)],
    }
    observed.geometry = scale_map(in_size, out_size)
    return observed


def reduce(a: Args) -> Observed:
    return resize_obs(a.args[0], a.result, factor=num(a.get(1, "factor")))


def rotate(a: Args) -> Observed:
    return rotate_obs(a.args[0], a.result, a.get(1, "angle"), bool(a.get(3, "expand", False)))


_TRANSPOSE_FLIPS = {0: "horizontal", 1: "vertical"}
_TRANSPOSE_ANGLES = {2: 90.0, 3: 180.0, 4: 270.0}
_TRANSPOSE_AXES = {5: "transpose", 6: "transverse"}


def transpose(a: Args) -> Observed:
    image = a.args[0]
    method = int(a.get(1, "method"))
    if method in _TRANSPOSE_FLIPS:
        return flip_obs(image, a.result, _TRANSPOSE_FLIPS[method])
    if method in _TRANSPOSE_ANGLES:
        return rotate_obs(image, a.result, _TRANSPOSE_ANGLES[method], True)
    if method in _TRANSPOSE_AXES:
        return transpose_obs(image, a.result, _TRANSPOSE_AXES[method])
    return Observed("other", [image], a.result, {"method": str(method)}, geometry=None)


def convert(a: Args) -> Observed:
    image = a.args[0]
    mode = a.get(1, "mode")
    if mode in _GRAY_MODES and image.mode not in _GRAY_MODES:
        return Observed("grayscale", [image], a.result, {"mode": mode})
    if mode == "1":
        return Observed("threshold", [image], a.result, {"method": "dither", "mode": "1"})
    return Observed("convert", [image], a.result, {"mode": mode, "from": image.mode})


def image_filter(a: Args) -> Observed:
    image = a.args[0]
    op, params = describe_filter(a.get(1, "filter"))
    return Observed(op, [image], a.result, params)


def describe_filter(f: Any) -> tuple[str, dict[str, Any]]:
    """Canonical op and parameters of a Pillow filter (class or instance)."""
    name = f.__name__ if isinstance(f, type) else type(f).__name__
    fixed = {
        "BLUR": ("blur", {"method": "box5"}),
        "SMOOTH": ("blur", {"method": "smooth"}),
        "SMOOTH_MORE": ("blur", {"method": "smooth"}),
        "SHARPEN": ("sharpen", {"method": "kernel"}),
        "DETAIL": ("sharpen", {"method": "detail"}),
        "EDGE_ENHANCE": ("sharpen", {"method": "edge_enhance"}),
        "EDGE_ENHANCE_MORE": ("sharpen", {"method": "edge_enhance"}),
        "FIND_EDGES": ("edge_detect", {"method": "find_edges"}),
        "CONTOUR": ("edge_detect", {"method": "contour"}),
        "EMBOSS": ("other", {"method": "emboss"}),
    }
    if name in fixed:
        op, params = fixed[name]
        return op, dict(params)
    radius = num(getattr(f, "radius", None))
    size = num(getattr(f, "size", None))
    if name == "GaussianBlur":
        return "blur", {"method": "gaussian", "radius": radius}
    if name == "BoxBlur":
        return "blur", {"method": "box", "radius": radius}
    if name == "UnsharpMask":
        return "sharpen", {"method": "unsharp_mask", "radius": radius, "percent": num(getattr(f, "percent", None))}
    if name in ("MedianFilter", "ModeFilter"):
        return "denoise", {"method": name[: -len("Filter")].lower(), "size": size}
    if name in ("MinFilter", "MaxFilter"):
        return "morphology", {"method": "erode" if name == "MinFilter" else "dilate", "size": size}
    if name == "Kernel":
        _, _, _, weights = f.filterargs
        side = round(len(weights) ** 0.5)
        return classify_kernel(weights, (side, side))
    return "other", {"filter": name}


def point(a: Args) -> Observed:
    image, output = a.args[0], a.result
    if output is None or image.mode not in ("L", "P", "1") or output.mode != "L":
        return Observed("enhance", [image], output, {"kind": "curve"})
    op, params = classify_lut(image.convert("L"), output)
    return Observed(op, [image], output, params)


def save(a: Args) -> Observed:
    return Observed("io", [a.args[0]], None, {"action": "save", "path": _path(a.get(1, "fp"))})


def show(a: Args) -> Observed:
    return Observed("io", [a.args[0]], None, {"action": "show"})


def image_open(a: Args) -> Observed:
    return Observed("io", [], a.result, {"action": "open", "path": _path(a.get(0, "fp"))}, geometry=None)


def _path(fp: Any) -> str | None:
    if isinstance(fp, (str, bytes)) or hasattr(fp, "__fspath__"):
        import os

        return os.fsdecode(fp)
    return getattr(fp, "name", None) if isinstance(getattr(fp, "name", None), str) else None


def paste(a: Args) -> Observed:
    base, other = a.args[0], a.get(1, "im")
    inputs = [base] + ([other] if image_or_none(other) is not None else [])
    return Observed("composite", inputs, base, {"method": "paste"})


def alias(a: Args) -> Observed:
    return Observed("alias", [a.args[0]], a.result)


def fromarray(a: Args) -> Observed:
    return Observed("convert", [a.get(0, "obj")], a.result, {"to": "PIL"})


def composite_fn(method: str) -> Any:
    def describe(a: Args) -> Observed:
        images = [v for v in a.args if image_or_none(v) is not None]
        return Observed("composite", images, a.result, {"method": method})

    return describe


# -- ImageOps ------------------------------------------------------------------------------------


def ops_flip(direction: str) -> Any:
    def describe(a: Args) -> Observed:
        return flip_obs(a.get(0, "image"), a.result, direction)

    return describe


def ops_autocontrast(a: Args) -> Observed:
    return Observed("autocontrast", [a.get(0, "image")], a.result, {"cutoff": num(a.get(1, "cutoff", 0))})


def ops_crop(a: Args) -> Observed:
    image = a.get(0, "image")
    border = a.get(1, "border", 0)
    w, h = image.size
    if isinstance(border, (tuple, list)):
        left, top, right, bottom = (border * 2)[:4] if len(border) == 2 else border
    else:
        left = top = right = bottom = border
    return crop_obs(image, a.result, (left, top, w - right, h - bottom))


def ops_resize_like(method: str) -> Any:
    def describe(a: Args) -> Observed:
        observed = resize_obs(a.get(0, "image"), a.result, method=method)
        if method in ("fit", "pad", "cover"):
            observed.geometry, observed.approximate = None, True
        return observed

    return describe


def ops_scale(a: Args) -> Observed:
    return resize_obs(a.get(0, "image"), a.result, method="scale")


def enhance(a: Args) -> Observed:
    enhancer = a.args[0]
    kind = _ENHANCE_KINDS.get(type(enhancer).__name__, type(enhancer).__name__.lower())
    return Observed("enhance", [enhancer.image], a.result, {"kind": kind, "factor": num(a.get(1, "factor"))})


def draw(a: Args) -> Observed | None:
    image = getattr(a.args[0], "_image", None)
    if image is None:
        return None
    return Observed("draw", [image], image, {"shape": "?"})


def draw_shape(shape: str) -> Any:
    def describe(a: Args) -> Observed | None:
        observed = draw(a)
        if observed is not None:
            observed.params = {"shape": shape}
        return observed

    return describe


SPECS: list[tuple[str, str, Any]] = [
    ("PIL.Image.Image.crop", "crop", crop),
    ("PIL.Image.Image.resize", "resize", resize),
    ("PIL.Image.Image.reduce", "resize", reduce),
    ("PIL.Image.Image.thumbnail", "resize", thumbnail),
    ("PIL.Image.Image.rotate", "rotate", rotate),
    ("PIL.Image.Image.transpose", "flip", transpose),
    ("PIL.Image.Image.convert", "convert", convert),
    ("PIL.Image.Image.filter", "other", image_filter),
    ("PIL.Image.Image.point", "enhance", point),
    ("PIL.Image.Image.save", "io", save),
    ("PIL.Image.Image.show", "io", show),
    ("PIL.Image.Image.paste", "composite", paste),
    ("PIL.Image.Image.copy", "alias", alias),
    ("PIL.Image.Image.quantize", "convert", simple("convert", mode="P")),
    ("PIL.Image.Image.getchannel", "convert", simple("convert", method="channel")),
    ("PIL.Image.Image.effect_spread", "other", simple("other", method="spread")),
    ("PIL.Image.open", "io", image_open),
    ("PIL.Image.fromarray", "convert", fromarray),
    ("PIL.Image.blend", "composite", composite_fn("blend")),
    ("PIL.Image.composite", "composite", composite_fn("composite")),
    ("PIL.Image.alpha_composite", "composite", composite_fn("alpha_composite")),
    ("PIL.ImageOps.flip", "flip", ops_flip("vertical")),
    ("PIL.ImageOps.mirror", "flip", ops_flip("horizontal")),
    ("PIL.ImageOps.grayscale", "grayscale", simple("grayscale")),
    ("PIL.ImageOps.invert", "invert", simple("invert")),
    ("PIL.ImageOps.equalize", "equalize", simple("equalize", method="histogram")),
    ("PIL.ImageOps.autocontrast", "autocontrast", ops_autocontrast),
    ("PIL.ImageOps.crop", "crop", ops_crop),
    ("PIL.ImageOps.fit", "resize", ops_resize_like("fit")),
    ("PIL.ImageOps.pad", "resize", ops_resize_like("pad")),
    ("PIL.ImageOps.contain", "resize", ops_resize_like("contain")),
    ("PIL.ImageOps.cover", "resize", ops_resize_like("cover")),
    ("PIL.ImageOps.scale", "resize", ops_scale),
    ("PIL.ImageOps.expand", "other", simple("other", method="pad")),
    ("PIL.ImageOps.posterize", "other", simple("other", method="posterize")),
    ("PIL.ImageOps.solarize", "other", simple("other", method="solarize")),
    ("PIL.ImageOps.colorize", "convert", simple("convert", method="colorize")),
    ("PIL.ImageOps.exif_transpose", "other", simple("other", method="exif_transpose")),
    ("PIL.ImageEnhance._Enhance.enhance", "enhance", enhance),
    ("PIL.ImageChops.invert", "invert", simple("invert")),
    ("PIL.ImageChops.difference", "composite", composite_fn("difference")),
    ("PIL.ImageChops.add", "composite", composite_fn("add")),
    ("PIL.ImageChops.subtract", "composite", composite_fn("subtract")),
    ("PIL.ImageChops.multiply", "composite", composite_fn("multiply")),
    ("PIL.ImageChops.screen", "composite", composite_fn("screen")),
    ("PIL.ImageChops.lighter", "composite", composite_fn("lighter")),
    ("PIL.ImageChops.darker", "composite", composite_fn("darker")),
] + [
    (f"PIL.ImageDraw.ImageDraw.{shape}", "draw", draw_shape(shape))
    for shape in (
        "rectangle",
        "rounded_rectangle",
        "line",
        "ellipse",
        "polygon",
        "point",
        "arc",
        "pieslice",
        "chord",
        "text",
        "multiline_text",
    )
]

INPLACE = frozenset({"PIL.Image.Image.thumbnail"})
