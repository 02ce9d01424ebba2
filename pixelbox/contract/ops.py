"""The canonical operations, one table: what the tracer records, what atomic tools offer, what scoring reads.

Each :class:`Op` says whether it is a *visual* operation (one a process checkpoint can ask for),
the checkpoint words it satisfies besides its own name, whether replay can re-run it from its
recorded parameters, and, when it is also an atomic tool, the tool's parameters. Everything else
is derived from this table, never written again:

- the event vocabulary (:data:`VISUAL_OPS`, :data:`OTHER_KINDS`, :data:`ALL_OPS`), validated on
  both sides of the sandbox;
- the atomic tools (:data:`TOOL_SPECS`): the kernel checks calls against them and the harness
  turns them into function-calling schemas (:mod:`pixelbox.contract.tools`);
- the checkpoint vocabulary (:data:`CHECKPOINT_WORDS`), which scoring reads;
- what replay must be able to re-run (:data:`REPLAYABLE`).

The implementations live in the kernel: the recorder's API tables map library calls to these
names (``pixelbox.kernel.recorder.ops``), the canonical tools and replay handlers are registered
by name (``pixelbox.kernel.atomic.canonical``); ``tests/test_registries.py`` checks every name on
every side is in this table and every op that needs an implementation has one. A new op is an
entry here plus its implementation. Standard library only (this runs inside the kernel).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["integer", "number", "boolean", "string", "bbox"]
_REQUIRED: Any = object()


@dataclass(frozen=True)
class Param:
    """One tool parameter: JSON kind, description, default (absent = required), range or choices."""

    name: str
    kind: Kind
    description: str
    default: Any = _REQUIRED
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        """Whether the model must pass it."""
        return self.default is _REQUIRED

    def describe(self) -> str:
        """Short human form, e.g. ``zoom_scale: number 0.5-5.0, default 1.0``."""
        kind = "[x1, y1, x2, y2] in 0-1000" if self.kind == "bbox" else self.kind
        text = f"{self.name}: {kind}"
        if self.choices:
            text += " (" + " | ".join(self.choices) + ")"
        elif self.kind != "bbox" and self.maximum is not None:
            text += f" {format_number(self.minimum)}-{format_number(self.maximum)}"
        elif self.kind != "bbox" and self.minimum is not None:
            text += f" >= {format_number(self.minimum)}"
        if not self.required and self.default is not None:
            text += f", default {json.dumps(self.default)}"
        return text


@dataclass(frozen=True)
class ToolSpec:
    """One atomic tool: its name, what it does, and its own parameters (besides image_index and label)."""

    name: str
    description: str
    params: tuple[Param, ...] = ()
    at_least_one_of: tuple[str, ...] = field(default=())

    def all_params(self) -> tuple[Param, ...]:
        """image_index first, then the tool's own parameters, then label."""
        return (IMAGE_INDEX, *self.params, LABEL)

    def signature(self) -> str:
        """The call in one line, for error messages."""
        return f"{self.name}(" + "; ".join(p.describe() for p in self.all_params()) + ")"


@dataclass(frozen=True)
class Op:
    """One canonical operation.

    ``visual``: a process checkpoint can ask for it (the others are recorded for lineage and audit).
    ``words``: checkpoint words it satisfies besides its own name (``zoom`` -> ``crop``).
    ``replay``: replay re-runs it from its recorded parameters (``pixelbox.kernel.atomic.canonical``).
    ``tool``: its atomic tool, when the model can call it as a function in atomic mode.
    """

    name: str
    summary: str
    visual: bool = True
    words: tuple[str, ...] = ()
    replay: bool = True
    tool: ToolSpec | None = None


IMAGE_INDEX = Param(
    "image_index",
    "integer",
    "Index of the image to work on: 0 is the first input image, every new image gets the next index.",
    minimum=0,
)
LABEL = Param("label", "string", "Optional short note of what this operation is for.", default=None)
_FACTOR = "Factor, 1.0 leaves the image unchanged."
_ENHANCE = "enhance"
_CONTRAST = ("contrast", "brightness")

OPS: tuple[Op, ...] = (
    Op(
        "crop",
        "a region cut out (PIL crop, NumPy slicing, cv2 ROI)",
        words=("zoom", "zoom_in", "magnify"),
        tool=ToolSpec(
            "crop",
            "Cut out a region given in 0-1000 normalized coordinates ((0,0) is the top-left corner, (1000,1000) "
            "the bottom-right) and optionally zoom it. Boxes reaching past the image edge are clamped to it.",
            (
                Param("bbox_2d", "bbox", "The region as [x1, y1, x2, y2], each in 0-1000, x2 > x1 and y2 > y1."),
                Param("zoom_scale", "number", "Zoom applied after cutting.", 1.0, 0.5, 5.0),
            ),
        ),
    ),
    Op(
        "rotate",
        "rotation by any angle, counterclockwise positive",
        words=("rotation",),
        tool=ToolSpec(
            "rotate",
            "Rotate the image; positive angles turn it counterclockwise.",
            (
                Param("angle", "number", "Angle in degrees, counterclockwise.", minimum=-360, maximum=360),
                Param("expand", "boolean", "Grow the canvas so no corner is cut off.", True),
            ),
        ),
    ),
    Op(
        "flip",
        "mirror left-right, top-bottom or both",
        words=("mirror",),
        tool=ToolSpec(
            "flip",
            "Mirror the image.",
            (
                Param(
                    "direction",
                    "string",
                    "Which way to flip.",
                    "horizontal",
                    choices=("horizontal", "vertical", "both"),
                ),
            ),
        ),
    ),
    Op(
        "resize",
        "scaling to a new size",
        words=("magnify", "scale", "upscale"),
        tool=ToolSpec(
            "resize",
            "Resize to a width and/or height in pixels (one alone keeps the aspect ratio), or by a scale factor.",
            (
                Param("width", "integer", "New width in pixels.", None, 1, 16384),
                Param("height", "integer", "New height in pixels.", None, 1, 16384),
                Param("scale", "number", "Factor for both sides (instead of width/height).", None, 0.01, 10),
            ),
            at_least_one_of=("width", "height", "scale"),
        ),
    ),
    Op(
        "enhance",
        "brightness, contrast, sharpness, colour or gamma changed by a factor",
        words=_CONTRAST,
        tool=ToolSpec(
            "enhance",
            "Change brightness, contrast and/or sharpness (applied in that order).",
            (
                Param("brightness", "number", _FACTOR, 1.0, 0, 10),
                Param("contrast", "number", _FACTOR, 1.0, 0, 10),
                Param("sharpness", "number", _FACTOR, 1.0, 0, 10),
            ),
        ),
    ),
    Op(
        "grayscale",
        "conversion to one gray channel",
        words=(_ENHANCE, "gray", "greyscale"),
        tool=ToolSpec("grayscale", "Convert to grayscale."),
    ),
    Op(
        "autocontrast",
        "the histogram stretched to the full range",
        words=(_ENHANCE, *_CONTRAST),
        tool=ToolSpec(
            "autocontrast",
            "Stretch the histogram to the full range.",
            (Param("cutoff", "number", "Percent of the lightest and darkest pixels to ignore.", 0, 0, 49),),
        ),
    ),
    Op("invert", "the negative", words=(_ENHANCE,), tool=ToolSpec("invert", "Invert the colors (negative).")),
    Op(
        "equalize",
        "histogram equalization (global or CLAHE)",
        words=(_ENHANCE, *_CONTRAST, "histogram_equalization", "clahe"),
        tool=ToolSpec("equalize", "Equalize the histogram."),
    ),
    Op(
        "threshold",
        "fixed, Otsu or adaptive thresholds, inRange, comparisons, two-level point maps",
        words=(_ENHANCE, "binarize", "binarization"),
        tool=ToolSpec(
            "threshold",
            "Threshold the grayscale image.",
            (
                Param("value", "number", "Threshold level.", 128, 0, 255),
                Param(
                    "mode",
                    "string",
                    "What happens above/below the level.",
                    "binary",
                    choices=("binary", "binary_inv", "trunc", "tozero"),
                ),
            ),
        ),
    ),
    Op(
        "blur",
        "Gaussian, box or other smoothing kernels",
        words=("smooth", "gaussian_blur"),
        tool=ToolSpec("blur", "Gaussian blur.", (Param("radius", "integer", "Blur radius in pixels.", 2, 0, 50),)),
    ),
    Op(
        "sharpen",
        "sharpening kernels, unsharp mask, addWeighted with a negative weight",
        words=(_ENHANCE,),
        tool=ToolSpec("sharpen", "Sharpen edges."),
    ),
    Op(
        "denoise",
        "median, bilateral, non-local means, total variation",
        words=("smooth", "median"),
        tool=ToolSpec(
            "denoise",
            "Remove noise (non-local means).",
            (Param("strength", "number", "Filter strength.", 10, 1, 30),),
        ),
    ),
    Op(
        "edge_detect",
        "Canny, Sobel, Scharr, Laplacian, FIND_EDGES, zero-sum kernels",
        words=("edge", "edges", "canny", "sobel"),
        tool=ToolSpec(
            "edge_detect",
            "Find edges.",
            (Param("method", "string", "Edge detector.", "canny", choices=("canny", "sobel", "simple")),),
        ),
    ),
    Op("fft", "a Fourier transform and its inverse", words=("fourier", "frequency", "dft"), replay=False),
    Op("io", "open, save, show, capture", visual=False),
    Op("convert", "mode or colour-space changes other than to gray, channel picks, conversions", visual=False),
    Op("draw", "drawing on an image", visual=False, replay=False),
    Op("morphology", "erosion, dilation, opening, closing", visual=False, replay=False),
    Op("composite", "images pasted, blended or stacked together", visual=False, replay=False),
    Op(
        "generate",
        "an image made by an image-generation model from a prompt (and the image it restyles)",
        visual=False,
        replay=False,
    ),
    Op(
        "ocr",
        "text read from an image (tesseract, through the kernel's OCR tool); no image out",
        visual=False,
        replay=False,
    ),
    Op("other", "any other image operation (axis swaps are re-run)", visual=False),
    Op(
        "command",
        "a program run in the sandbox beside the kernel (Sandbox.run_command; recorded by the host)",
        visual=False,
        replay=False,
    ),
)
"""Every canonical operation, visual ones first, in the order they are documented and offered."""

HOST_OPS: frozenset[str] = frozenset({"command"})
"""Operations the host records itself (no library call in the kernel produces them)."""

OPS_BY_NAME: dict[str, Op] = {op.name: op for op in OPS}
VISUAL_OPS: tuple[str, ...] = tuple(op.name for op in OPS if op.visual)
"""Operations a process checkpoint can ask for."""
OTHER_KINDS: tuple[str, ...] = tuple(op.name for op in OPS if not op.visual)
"""Recorded for lineage and audit, never counted as one of the visual operations."""
ALL_OPS: tuple[str, ...] = VISUAL_OPS + OTHER_KINDS
TOOL_SPECS: dict[str, ToolSpec] = {op.tool.name: op.tool for op in OPS if op.tool is not None}
"""The atomic tools by name, in the order they are offered to the model."""
REPLAYABLE: frozenset[str] = frozenset(op.name for op in OPS if op.replay)
"""Operations replay re-runs from their recorded parameters."""


def _checkpoint_words() -> dict[str, frozenset[str]]:
    words: dict[str, set[str]] = {}
    for op in OPS:
        for word in op.words:
            words.setdefault(word, set()).add(op.name)
    return {word: frozenset(ops | ({word} if word in OPS_BY_NAME else set())) for word, ops in words.items()}


CHECKPOINT_WORDS: dict[str, frozenset[str]] = _checkpoint_words()
"""Checkpoint words mapped to the visual ops that satisfy them (a word that is itself an op name, such
as ``enhance``, also stands for that op). Op names not listed here stand for themselves only."""


def format_number(value: float | None) -> str:
    """``5`` for 5.0, ``0.5`` for 0.5, ``?`` for no value (ranges in messages and signatures)."""
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


__all__ = [
    "ALL_OPS",
    "CHECKPOINT_WORDS",
    "HOST_OPS",
    "IMAGE_INDEX",
    "LABEL",
    "OPS",
    "OPS_BY_NAME",
    "OTHER_KINDS",
    "REPLAYABLE",
    "TOOL_SPECS",
    "VISUAL_OPS",
    "Op",
    "Param",
    "ToolSpec",
    "format_number",
]
