"""Tracer: instrumentation of agent code, the event schema, lineage and replay verification.

The host side of tracing. The recorder that runs inside the kernel, the operation table and
the canonical implementations live in ``pixelbox.kernel.recorder`` (one copy for both sides).
"""

from pixelbox.tracer.events import Event, EventFormatError, parse_events, same_operation
from pixelbox.tracer.instrumented import (
    ORIGINAL_SOURCE_METADATA_KEY,
    InstrumentationError,
    Instrumented,
    cache_info,
    clear_cache,
    instrument,
)

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
