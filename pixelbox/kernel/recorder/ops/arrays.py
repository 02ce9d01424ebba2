"""NumPy: functions, array methods, slicing and the operators ``255 - a``, ``~a``, ``a > t``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pixelbox.contract.geometry import crop_map, flip_map, scale_map
from pixelbox.kernel.recorder import libs
from pixelbox.kernel.recorder.images import is_image, size_of
from pixelbox.kernel.recorder.ops.base import (
    CHAINED,
    Args,
    Observed,
    Virtual,
    flip_obs,
    image_or_none,
    num,
    rotate_obs,
    simple,
    transpose_obs,
)

if TYPE_CHECKING:
    import numpy as np


def rot90(a: Args) -> Observed:
    source = a.get(0, "m")
    k = int(a.get(1, "k", 1))
    axes = tuple(a.get(2, "axes", (0, 1)))
    direction = 1 if axes in ((0, 1), (-2, -1), (0, -1)) else -1
    angle = float((90 * k * direction) % 360)
    return rotate_obs(source, a.result, angle, True)


def np_flip(a: Args) -> Observed:
    source, axis = a.get(0, "m"), a.get(1, "axis")
    if axis is None:
        return flip_obs(source, a.result, "both")
    axes = {int(x) % source.ndim for x in (axis if isinstance(axis, (tuple, list)) else (axis,))}
    if axes == {0}:
        return flip_obs(source, a.result, "vertical")
    if axes == {1}:
        return flip_obs(source, a.result, "horizontal")
    if axes == {0, 1}:
        return flip_obs(source, a.result, "both")
    return Observed("convert", [source], a.result, {"method": "channel_reverse"})


def fixed_flip(direction: str) -> Any:
    def describe(a: Args) -> Observed:
        return flip_obs(a.get(0, "m"), a.result, direction)

    return describe


def to_array(a: Args) -> Observed | None:
    source = a.get(0, "object")
    if isinstance(source, libs.pil_image):
        return Observed("convert", [source], image_or_none(a.result), {"to": "ndarray"})
    if isinstance(source, libs.ndarray) and is_image(source):
        return Observed("alias", [source], image_or_none(a.result))
    return None


def alias(a: Args) -> Observed | None:
    source = a.args[0] if a.args else None
    return Observed("alias", [source], image_or_none(a.result)) if is_image(source) else None


def channel_mean(a: Args) -> Observed | None:
    source = a.args[0] if a.args else None
    axis = a.get(1, "axis")
    if is_image(source) and getattr(source, "ndim", 0) == 3 and axis in (2, -1):
        return Observed("grayscale", [source], image_or_none(a.result), {"method": "mean"})
    return None


def stack(a: Args) -> Observed | None:
    parts = a.get(0, "arrays")
    images = [p for p in parts if is_image(p)] if isinstance(parts, (list, tuple)) else []
    if not images:
        return None
    return Observed("composite", images, image_or_none(a.result), {"method": "stack"}, geometry=None)


def np_transpose(a: Args) -> Observed | None:
    """``np.transpose(a, axes)``; ``a.transpose(*axes)`` (self first, then ints, a tuple or nothing)."""
    rest = a.args[1:]
    axes = rest[0] if len(rest) == 1 else (rest or a.kwargs.get("axes"))
    axes = (axes,) if isinstance(axes, (int, libs.integer)) else axes
    return _reordered(a, lambda n: tuple(reversed(range(n))) if axes is None else tuple(int(x) % n for x in axes))


def np_swapaxes(a: Args) -> Observed | None:
    def perm(n: int) -> tuple[int, ...]:
        order = list(range(n))
        i, j = int(a.get(1, "axis1")) % n, int(a.get(2, "axis2")) % n
        order[i], order[j] = order[j], order[i]
        return tuple(order)

    return _reordered(a, perm)


def np_moveaxis(a: Args) -> Observed | None:
    def perm(n: int) -> tuple[int, ...]:
        src, dst = a.get(1, "source"), a.get(2, "destination")
        src = [int(x) % n for x in (src if isinstance(src, (tuple, list)) else (src,))]
        dst = [int(x) % n for x in (dst if isinstance(dst, (tuple, list)) else (dst,))]
        order = [axis for axis in range(n) if axis not in src]
        for dest, axis in sorted(zip(dst, src, strict=False)):
            order.insert(dest, axis)
        return tuple(order)

    return _reordered(a, perm)


def _reordered(a: Args, perm: Any) -> Observed | None:
    """An axis reorder of an image into an image: ``perm(ndim)`` gives the new order of the axes."""
    source = a.args[0] if a.args else a.kwargs.get("a")
    if not is_image(source) or not is_image(a.result):
        return None
    return axes_obs(source, a.result, tuple(perm(a.result.ndim)))


def axes_obs(source: Any, result: Any, perm: tuple[int, ...]) -> Observed:
    """Reordering ``source``'s axes by ``perm`` into ``result``: a swap of the two spatial axes is a
    ``transpose``; spatial axes kept in place is an alias; other image-shaped orders are ``other``
    with unknown geometry."""
    if perm[:2] == (0, 1):
        return Observed("alias", [source], result)
    if perm[:2] == (1, 0):
        return transpose_obs(source, result)
    return Observed("other", [source], result, {"method": "transpose", "axes": list(perm)}, geometry=None)


def axis_permutation(source: Any, view: Any) -> tuple[int, ...] | None:
    """``perm`` with ``view``'s axis ``i`` being ``source``'s axis ``perm[i]``, when ``view`` is a
    view of the same memory whose shapes and strides say so unambiguously; otherwise ``None``."""
    if not isinstance(source, libs.ndarray) or not isinstance(view, libs.ndarray):
        return None
    if source.ndim != view.ndim or source.dtype != view.dtype or _address(source) != _address(view):
        return None
    axes = list(zip(source.shape, source.strides, strict=True))
    perm: list[int] = []
    for axis in zip(view.shape, view.strides, strict=True):
        matches = [j for j, candidate in enumerate(axes) if candidate == axis and j not in perm]
        if len(matches) != 1:
            return None
        perm.append(matches[0])
    return tuple(perm)


def is_transposed_view(source: Any, view: Any) -> bool:
    """Whether ``view`` is ``source`` with its two spatial axes swapped (``source.T`` and kin)."""
    perm = axis_permutation(source, view)
    return perm is not None and perm[:2] == (1, 0) and list(perm[2:]) == list(range(2, len(perm)))


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


SPECS: list[tuple[str, str, Any]] = (
    [
        ("numpy.rot90", "rotate", rot90),
        ("numpy.transpose", "other", np_transpose),
        ("numpy.ndarray.transpose", "other", np_transpose),
        ("numpy.swapaxes", "other", np_swapaxes),
        ("numpy.ndarray.swapaxes", "other", np_swapaxes),
        ("numpy.moveaxis", "other", np_moveaxis),
        ("numpy.flip", "flip", np_flip),
        ("numpy.fliplr", "flip", fixed_flip("horizontal")),
        ("numpy.flipud", "flip", fixed_flip("vertical")),
        ("numpy.invert", "invert", simple("invert")),
        ("numpy.array", "convert", to_array),
        ("numpy.asarray", "convert", to_array),
        ("numpy.asanyarray", "convert", to_array),
        ("numpy.ascontiguousarray", "convert", to_array),
        ("numpy.copy", "alias", alias),
        ("numpy.ndarray.copy", "alias", alias),
        ("numpy.ndarray.astype", "alias", alias),
        ("numpy.mean", "grayscale", channel_mean),
        ("numpy.ndarray.mean", "grayscale", channel_mean),
        ("numpy.clip", "other", simple("other", method="clip")),
        ("numpy.ndarray.clip", "other", simple("other", method="clip")),
        ("numpy.where", "other", simple("other", method="where")),
        ("numpy.stack", "composite", stack),
        ("numpy.hstack", "composite", stack),
        ("numpy.vstack", "composite", stack),
        ("numpy.dstack", "composite", stack),
        ("numpy.concatenate", "composite", stack),
    ]
    + [
        (f"numpy.fft.{name}", "fft", simple("fft", method=name))
        for name in ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2")
    ]
    + [
        # Reordering a spectrum is not another transform: the result keeps the spectrum's id
        (f"numpy.fft.{name}", "alias", alias)
        for name in ("fftshift", "ifftshift")
    ]
)


# -- operators and slicing (called directly by the recorder, not through the table) -------------


def pixel_data(value: Any, labelled: bool) -> bool:
    """Whether an operator's array operand holds an image's pixels, not a computed mask.

    An array shaped like an image is one for ``255 - a`` and ``a > t`` when it descends from an
    image (``labelled``: it has an id), holds 8-bit or boolean data, or is not a centred mask: a
    float array with no image ancestry that is mirror-symmetric about its centre on both axes was
    computed from coordinate grids (``dist <= r ** 2``, ``1 - np.exp(-d2 / s)``, frequency-domain
    masks); a picture is never exactly that symmetric.
    """
    if not is_image(value):
        return False
    return labelled or value.dtype in ("uint8", "bool") or not centred_mask(value)


def centred_mask(value: Any) -> bool:
    """A 2-D array mirror-symmetric about its centre on both axes (either centre convention)."""
    import numpy as np  # loaded: ``value`` is an array

    if value.ndim != 2 or min(value.shape) < 3 or value.dtype.kind not in "fc":
        return False

    def mirrored(axis: int) -> bool:
        inner = value[1:] if axis == 0 else value[:, 1:]
        return any(
            np.allclose(part, np.flip(part, axis), rtol=1e-9, atol=1e-12, equal_nan=True) for part in (value, inner)
        )

    return mirrored(0) and mirrored(1)


def invert_operator(left: Any, right: Any, result: Any, labelled: bool = True) -> Observed | None:
    """``255 - a`` on 8-bit images and ``1 - a`` / ``1.0 - a`` on float images are inversions."""
    if isinstance(right, libs.pil_image) or not pixel_data(right, labelled) or not is_image(result):
        return None
    full = 255 if right.dtype == "uint8" else 1
    if left == full:
        return Observed("invert", [right], result, {"method": f"{left} - x"})
    return None


def bitwise_invert(value: Any, result: Any) -> Observed | None:
    if is_image(value) and not isinstance(value, libs.pil_image) and value.dtype in ("uint8", "bool"):
        return Observed("invert", [value], image_or_none(result), {"method": "~x"})
    return None


def compare(left: Any, right: Any, symbol: str, result: Any, labelled: Any = None) -> Observed | None:
    """``image > t`` (any of > >= < <=, either side) is a binary threshold at ``t``.

    ``labelled(x)`` says whether ``x`` has an image id (see :func:`pixel_data`); without it every
    image-shaped operand counts.
    """
    import numpy as np  # loaded: ``result`` is an array

    def known(x: Any) -> bool:
        return pixel_data(x, labelled is None or labelled(x))

    if not isinstance(left, libs.pil_image) and known(left) and np.isscalar(right) and is_image(result):
        source, value, above = left, right, symbol in (">", ">=")
    elif not isinstance(right, libs.pil_image) and known(right) and np.isscalar(left) and is_image(result):
        source, value, above = right, left, symbol in ("<", "<=")
    else:
        return None
    params = {"value": num(value), "mode": "binary" if above else "binary_inv", "method": "compare"}
    return Observed("threshold", [source], result, params)


def subscript(source: np.ndarray, key: Any, result: Any) -> Observed | list[Observed] | None:
    """Slicing of the two spatial axes is a crop (or a flip or a resize); channel picks are converts."""
    if not is_image(result):
        return None
    items = _expand_key(key, source.ndim)
    if items is None:
        return None
    rows, cols = items[0], items[1]
    if not isinstance(rows, slice) or not isinstance(cols, slice):
        return None
    h, w = source.shape[0], source.shape[1]
    ys, xs = rows.indices(h), cols.indices(w)
    channel_params = _channel_params(items[2:], source)
    full_y, full_x = _is_full(ys, h), _is_full(xs, w)
    if full_y and full_x:
        steps = (xs[2], ys[2])
        if steps == (1, 1):
            if channel_params:
                return Observed("convert", [source], result, channel_params)
            return Observed("alias", [source], result)
    return _crop_then(source, result, xs, ys, channel_params)


def _crop_then(
    source: np.ndarray, result: Any, xs: tuple[int, int, int], ys: tuple[int, int, int], extra: dict[str, Any]
) -> Observed | list[Observed]:
    """A partial slice: a crop of the covered box, then a flip and/or a stride resize if stepped."""
    x0, x1 = _covered(xs)
    y0, y1 = _covered(ys)
    steps = (xs[2], ys[2])
    if steps == (1, 1):
        return Observed("crop", [source], result, {"box_px": [x0, y0, x1, y1], **extra}, crop_map(x0, y0))
    full = (x0, y0, x1, y1) == (0, 0, source.shape[1], source.shape[0])
    region: Any = source if full else Virtual((x1 - x0, y1 - y0))
    chain = (
        [] if full else [Observed("crop", [source], region, {"box_px": [x0, y0, x1, y1], **extra}, crop_map(x0, y0))]
    )
    first_input: Any = source if full else CHAINED
    flipped = {(True, False): "horizontal", (False, True): "vertical", (True, True): "both"}.get(
        (steps[0] < 0, steps[1] < 0)
    )
    strided = abs(steps[0]) != 1 or abs(steps[1]) != 1
    if flipped:
        size = (x1 - x0, y1 - y0)
        output = Virtual(size) if strided else result
        chain.append(Observed("flip", [first_input], output, {"direction": flipped}, flip_map(flipped, size)))
        first_input = CHAINED
    if strided:
        out_size = size_of(result)
        params = {"size": list(out_size), "scale": [round(1 / abs(steps[0]), 4), round(1 / abs(steps[1]), 4)]}
        params.update(method="stride", step=[abs(steps[0]), abs(steps[1])])
        chain.append(Observed("resize", [first_input], result, params, scale_map((x1 - x0, y1 - y0), out_size)))
    return chain


def _expand_key(key: Any, ndim: int) -> list[Any] | None:
    items = list(key) if isinstance(key, tuple) else [key]
    if any(item is None for item in items):
        return None
    if any(item is Ellipsis for item in items):
        at = items.index(Ellipsis)
        fill = ndim - (len(items) - 1)
        items = items[:at] + [slice(None)] * fill + items[at + 1 :]
    items += [slice(None)] * (ndim - len(items))
    return items if len(items) >= 2 else None


def _channel_params(rest: list[Any], source: np.ndarray) -> dict[str, Any]:
    if not rest:
        return {}
    item = rest[0]
    if isinstance(item, slice):
        start, stop, step = item.indices(source.shape[2])
        if (start, stop, step) == (0, source.shape[2], 1):
            return {}
        if step == -1 and start == source.shape[2] - 1 and stop == -1:
            return {"channels": "reversed"}
        return {"channels": list(range(start, stop, step))}
    if isinstance(item, (int, libs.integer)):
        return {"channels": [int(item)]}
    return {"channels": "indexed"}


def _is_full(indices: tuple[int, int, int], n: int) -> bool:
    start, stop, step = indices
    return (start, stop) == (0, n) if step > 0 else (start, stop) == (n - 1, -1)


def _covered(indices: tuple[int, int, int]) -> tuple[int, int]:
    start, stop, step = indices
    if step > 0:
        return start, max(stop, start)
    return stop + 1, max(start + 1, stop + 1)


__all__ = [
    "SPECS",
    "axes_obs",
    "axis_permutation",
    "bitwise_invert",
    "centred_mask",
    "compare",
    "invert_operator",
    "is_transposed_view",
    "pixel_data",
    "size_of",
    "subscript",
]
