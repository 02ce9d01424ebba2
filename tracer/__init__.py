"""Tracer: what agent code did, as canonical events with parameters and image lineage.

Where things are:

- the **event schema**: :mod:`pixelbox.tracer.events` (the typed, validated :class:`Event`); its
  wire constants (version, fields, statuses, the operation vocabulary) are part of the host-kernel
  contract, :mod:`pixelbox.contract.events` and :mod:`pixelbox.contract.ops`, and documented in
  ``docs/events.md``;
- the **dynamic half**: :mod:`pixelbox.tracer.dynamic` instruments cells on the host (``ast``
  insertion, cached by hash); the in-kernel recorder (``pixelbox.kernel.recorder``) records what
  executed;
- **lineage** of images and artifacts on the host: :mod:`pixelbox.tracer.lineage`;
- **replay** verification of recorded chains: :mod:`pixelbox.tracer.replay`.

The tracer knows nothing of sandboxes or agents.
"""

from pixelbox.tracer.dynamic import (
    ORIGINAL_SOURCE_METADATA_KEY,
    InstrumentationError,
    Instrumented,
    cache_info,
    clear_cache,
    instrument,
)
from pixelbox.tracer.events import Event, EventFormatError, parse_events, same_operation

__all__ = [
    "ORIGINAL_SOURCE_METADATA_KEY",
    "Event",
    "EventFormatError",
    "InstrumentationError",
    "Instrumented",
    "cache_info",
    "clear_cache",
    "instrument",
    "parse_events",
    "same_operation",
]
