"""The tracer's dynamic half: cells instrumented on the host (``ast`` insertion, cached by hash) so
the kernel's recorder reports each executed image operation with concrete parameters.

``instrument(code)`` is the entry point (:mod:`.instrument`); :mod:`.rewrite` holds the insertion
itself and :mod:`.cache` the bounded cache. The static half (libcst: what the code says) is a
sibling package, ``pixelbox.tracer.static``.
"""

from pixelbox.tracer.dynamic.instrument import (
    ORIGINAL_SOURCE_METADATA_KEY,
    InstrumentationError,
    Instrumented,
    cache_info,
    clear_cache,
    instrument,
)

__all__ = [
    "ORIGINAL_SOURCE_METADATA_KEY",
    "InstrumentationError",
    "Instrumented",
    "cache_info",
    "clear_cache",
    "instrument",
]
