"""The event schema constants shared by the in-kernel recorder and the host-side tracer.

Kept here (in the in-kernel package) so that there is one copy: the host imports it from
``pixelbox.tracer.events``. Bump ``EVENT_VERSION`` on any incompatible change and describe it
in ``docs/events.md``.
"""

from __future__ import annotations

EVENT_VERSION = 1

VISUAL_OPS = (
    "crop",
    "rotate",
    "flip",
    "resize",
    "enhance",
    "grayscale",
    "autocontrast",
    "invert",
    "equalize",
    "threshold",
    "blur",
    "sharpen",
    "denoise",
    "edge_detect",
    "fft",
)
"""Operations a process checkpoint can ask for."""

OTHER_KINDS = ("io", "convert", "draw", "morphology", "composite", "other")
"""Recorded for lineage and audit, never counted as one of the visual operations."""

ALL_OPS = VISUAL_OPS + OTHER_KINDS

STATUSES = ("ok", "error")

EVENT_FIELDS = (
    "v",
    "seq",
    "exec",
    "op",
    "status",
    "api",
    "src",
    "inputs",
    "output",
    "params",
    "artifact",
    "error",
    "t_ms",
)
