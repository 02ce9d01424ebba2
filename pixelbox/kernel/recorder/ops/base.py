"""Building blocks of the operation table: call arguments, observations and specs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pixelbox.contract.geometry import (
    IDENTITY,
    Affine,
    crop_map,
    flip_map,
    is_right_angle,
    rotate_map,
    scale_map,
    transpose_map,
)
from pixelbox.kernel.recorder.images import is_image, size_of


class Args:
    """Positional and keyword arguments of one call (``self`` first for methods) and its result.

    ``before`` is the first argument's size before the call, captured only for in-place specs.
    """

    __slots__ = ("args", "before", "kwargs", "result")

    def __init__(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, before: tuple[int, int] | None = None
    ) -> None:
        self.args = args
        self.kwargs = kwargs
        self.result = result
        self.before = before

    def get(self, index: int, name: str, default: Any = None) -> Any:
        if len(self.args) > index:
            return self.args[index]
        return self.kwargs.get(name, default)

    def first_image(self) -> Any:
        for value in self.args:
            if is_image(value):
                return value
        for value in self.kwargs.values():
            if is_image(value):
                return value
        return None


@dataclass
class Observed:
    """What one executed call did, in canonical terms.

    ``geometry`` maps output pixels to input pixels; ``None`` means "not known" (the output
    keeps its input's lineage only if it has the same size, marked approximate).
    """

    op: str
    inputs: list[Any]
    output: Any
    params: dict[str, Any] = field(default_factory=dict)
    geometry: Affine | None = IDENTITY
    approximate: bool = False


class Virtual:
    """An intermediate image that exists only in the description (a crop-then-flip slice).

    ``of`` is the real image it stands for when there is one (a read that a flag then transformed:
    the image I/O layer may have named that object as a task input while it was loaded).
    """

    __slots__ = ("of", "size")

    def __init__(self, size: tuple[int, int], of: Any = None) -> None:
        self.size = size
        self.of = of


class Chained:
    """Input placeholder: the output of the previous observation in the same list."""


CHAINED = Chained()

SpecFn = Callable[[Args], "Observed | list[Observed] | None"]


@dataclass(frozen=True)
class Spec:
    """How to recognise and describe one API: ``describe`` returns ``None`` to record nothing."""

    op: str
    api: str
    describe: SpecFn


# -- helpers shared by the per-library modules --------------------------------------------------


def num(value: Any) -> Any:
    """Plain JSON number for numpy scalars; ``None`` stays ``None``."""
    if value is None:
        return None
    try:
        as_float = float(value)
    except (TypeError, ValueError):
        return value
    return int(as_float) if as_float.is_integer() and not isinstance(value, float) else as_float


def simple(op: str, **params: Any) -> SpecFn:
    """A pixel-wise op on the first image argument whose result is the output image."""

    def describe(a: Args) -> Observed | None:
        source = a.first_image()
        return Observed(op, [source] if source is not None else [], image_or_none(a.result), dict(params))

    return describe


def image_or_none(value: Any) -> Any:
    return value if is_image(value) else None


def crop_obs(source: Any, output: Any, box: tuple[float, ...], **extra: Any) -> Observed:
    x0, y0, x1, y1 = (num(v) for v in box)
    return Observed("crop", [source], output, {"box_px": [x0, y0, x1, y1], **extra}, crop_map(x0, y0))


def resize_obs(source: Any, output: Any, **extra: Any) -> Observed:
    in_size = size_of(source)
    if output is None:  # the call failed: there is no output size to report
        return Observed("resize", [source], None, dict(extra))
    out_size = size_of(output)
    scale = [round(out_size[0] / max(in_size[0], 1), 4), round(out_size[1] / max(in_size[1], 1), 4)]
    params = {"size": list(out_size), "scale": scale, **extra}
    return Observed("resize", [source], output, params, scale_map(in_size, out_size))


def flip_obs(source: Any, output: Any, direction: str) -> Observed:
    return Observed("flip", [source], output, {"direction": direction}, flip_map(direction, size_of(source)))


def transpose_obs(source: Any, output: Any, method: str = "transpose") -> Observed:
    """A swap of the image axes (PIL ``Transpose.TRANSPOSE``/``TRANSVERSE``, ``a.T``, ``np.transpose``).

    Recorded as ``other`` (it is a rotation plus a flip, which no checkpoint asks for as such),
    with its exact geometry so that later boxes still compose back to the root.
    """
    return Observed("other", [source], output, {"method": method}, transpose_map(method, size_of(source)))


def normalize_angle(angle: float) -> float:
    """Degrees in (-180, 180], counterclockwise positive, so 270 and -90 read the same."""
    angle = float(angle) % 360.0
    return angle - 360.0 if angle > 180.0 else angle


def rotate_obs(source: Any, output: Any, angle: float, expand: bool) -> Observed:
    angle = normalize_angle(angle)
    in_size = size_of(source)
    out_size = size_of(output) if output is not None else in_size
    geometry = rotate_map(angle, in_size, out_size)
    params = {"angle": round(angle, 4), "expand": bool(expand)}
    return Observed("rotate", [source], output, params, geometry, approximate=not is_right_angle(angle))


__all__ = [
    "CHAINED",
    "IDENTITY",
    "Args",
    "Observed",
    "Spec",
    "SpecFn",
    "Virtual",
    "crop_obs",
    "flip_obs",
    "image_or_none",
    "num",
    "resize_obs",
    "rotate_obs",
    "simple",
    "transpose_obs",
]
