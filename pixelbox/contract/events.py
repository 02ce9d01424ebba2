"""The event schema's constants, shared by the in-kernel recorder and the host-side tracer.

The typed view with validation is :class:`pixelbox.tracer.events.Event`; the schema is documented
in ``docs/events.md``. The operation vocabulary comes from the op table (:mod:`pixelbox.contract.ops`).
Bump ``EVENT_VERSION`` on any incompatible change and describe it in ``docs/events.md``.
"""

from __future__ import annotations

from pixelbox.contract.ops import ALL_OPS, OTHER_KINDS, VISUAL_OPS

EVENT_VERSION = 1

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

__all__ = ["ALL_OPS", "EVENT_FIELDS", "EVENT_VERSION", "OTHER_KINDS", "STATUSES", "VISUAL_OPS"]
