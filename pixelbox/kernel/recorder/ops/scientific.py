"""SciPy (``scipy.ndimage``), scikit-image and matplotlib image APIs.

These libraries are optional in the kernel: their entries are resolved only once the agent's
code has imported them.
"""

from __future__ import annotations

from typing import Any

from pixelbox.kernel.recorder.ops.base import Args, Observed, image_or_none, num, resize_obs, rotate_obs, simple


def param(op: str, index: int, name: str, key: str, **fixed: Any) -> Any:
    """An op on the first argument whose one interesting parameter is argument ``index``/``name``."""

    def describe(a: Args) -> Observed:
        params = dict(fixed)
        value = a.get(index, name)
        params[key] = [num(v) for v in value] if isinstance(value, (tuple, list)) else num(value)
        return Observed(op, [a.args[0] if a.args else a.first_image()], image_or_none(a.result), params)

    return describe


def ndi_rotate(a: Args) -> Observed:
    axes = tuple(a.get(2, "axes", (1, 0)))
    sign = 1.0 if axes in ((1, 0), (-1, -2), (1, -2)) else -1.0
    return rotate_obs(a.get(0, "input"), a.result, sign * float(a.get(1, "angle")), bool(a.get(3, "reshape", True)))


def sk_rotate(a: Args) -> Observed:
    return rotate_obs(a.get(0, "image"), a.result, float(a.get(1, "angle")), bool(a.get(2, "resize", False)))


def resize_any(method: str) -> Any:
    def describe(a: Args) -> Observed:
        return resize_obs(a.args[0] if a.args else a.first_image(), a.result, method=method)

    return describe


def imread(a: Args) -> Observed:
    return Observed("io", [], image_or_none(a.result), {"action": "open", "path": str(a.get(0, "fname"))}, None)


def imsave(a: Args) -> Observed:
    return Observed("io", [a.get(1, "arr")], None, {"action": "save", "path": str(a.get(0, "fname"))})


def imshow(a: Args) -> Observed | None:
    image = a.first_image()
    return Observed("io", [image], None, {"action": "show"}) if image is not None else None


def savefig(a: Args) -> Observed:
    target = a.args[-1] if a.args and isinstance(a.args[-1], str) else a.kwargs.get("fname")
    return Observed("io", [], None, {"action": "save", "path": str(target) if target is not None else None})


_NDI = "scipy.ndimage"
_SK = "skimage"
_MORPH = ("binary_erosion", "binary_dilation", "binary_opening", "binary_closing", "grey_erosion", "grey_dilation")

SPECS: list[tuple[str, str, Any]] = [
    (f"{_NDI}.gaussian_filter", "blur", param("blur", 1, "sigma", "radius", method="gaussian")),
    (f"{_NDI}.uniform_filter", "blur", param("blur", 1, "size", "size", method="box")),
    (f"{_NDI}.median_filter", "denoise", param("denoise", 1, "size", "size", method="median")),
    (f"{_NDI}.sobel", "edge_detect", simple("edge_detect", method="sobel")),
    (f"{_NDI}.prewitt", "edge_detect", simple("edge_detect", method="prewitt")),
    (f"{_NDI}.laplace", "edge_detect", simple("edge_detect", method="laplacian")),
    (f"{_NDI}.gaussian_laplace", "edge_detect", simple("edge_detect", method="laplacian_of_gaussian")),
    (f"{_NDI}.rotate", "rotate", ndi_rotate),
    (f"{_NDI}.zoom", "resize", resize_any("zoom")),
    (f"{_NDI}.shift", "other", simple("other", method="shift")),
    (f"{_NDI}.fourier_gaussian", "fft", simple("fft", method="fourier_gaussian")),
    *[(f"{_NDI}.{name}", "morphology", simple("morphology", method=name)) for name in _MORPH],
    (f"{_SK}.filters.gaussian", "blur", param("blur", 1, "sigma", "radius", method="gaussian")),
    (f"{_SK}.filters.sobel", "edge_detect", simple("edge_detect", method="sobel")),
    (f"{_SK}.filters.scharr", "edge_detect", simple("edge_detect", method="scharr")),
    (f"{_SK}.filters.prewitt", "edge_detect", simple("edge_detect", method="prewitt")),
    (f"{_SK}.filters.roberts", "edge_detect", simple("edge_detect", method="roberts")),
    (f"{_SK}.filters.laplace", "edge_detect", simple("edge_detect", method="laplacian")),
    (f"{_SK}.filters.median", "denoise", simple("denoise", method="median")),
    (f"{_SK}.filters.unsharp_mask", "sharpen", param("sharpen", 1, "radius", "radius", method="unsharp_mask")),
    (f"{_SK}.feature.canny", "edge_detect", param("edge_detect", 1, "sigma", "sigma", method="canny")),
    (f"{_SK}.exposure.equalize_hist", "equalize", simple("equalize", method="histogram")),
    (f"{_SK}.exposure.equalize_adapthist", "equalize", simple("equalize", method="clahe")),
    (f"{_SK}.exposure.rescale_intensity", "autocontrast", simple("autocontrast", cutoff=0)),
    (f"{_SK}.exposure.adjust_gamma", "enhance", param("enhance", 1, "gamma", "factor", kind="gamma")),
    (f"{_SK}.exposure.adjust_sigmoid", "enhance", simple("enhance", kind="contrast")),
    (f"{_SK}.color.rgb2gray", "grayscale", simple("grayscale")),
    (f"{_SK}.color.gray2rgb", "convert", simple("convert", method="gray2rgb")),
    (f"{_SK}.color.rgb2hsv", "convert", simple("convert", method="rgb2hsv")),
    (f"{_SK}.transform.rotate", "rotate", sk_rotate),
    (f"{_SK}.transform.resize", "resize", resize_any("resize")),
    (f"{_SK}.transform.rescale", "resize", resize_any("rescale")),
    (f"{_SK}.restoration.denoise_tv_chambolle", "denoise", param("denoise", 1, "weight", "strength", method="tv")),
    (f"{_SK}.restoration.denoise_bilateral", "denoise", simple("denoise", method="bilateral")),
    (f"{_SK}.restoration.denoise_nl_means", "denoise", simple("denoise", method="nl_means")),
    (f"{_SK}.util.invert", "invert", simple("invert")),
    (f"{_SK}.io.imread", "io", imread),
    (f"{_SK}.io.imsave", "io", imsave),
    ("matplotlib.pyplot.imread", "io", imread),
    ("matplotlib.pyplot.imsave", "io", imsave),
    ("matplotlib.pyplot.imshow", "io", imshow),
    ("matplotlib.axes.Axes.imshow", "io", imshow),
    ("matplotlib.pyplot.savefig", "io", savefig),
]
