"""The host-side entry point: ``instrument(code) -> Instrumented``, cached by code hash."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from pixelbox.contract.wire import ORIGINAL_SOURCE_METADATA_KEY
from pixelbox.tracer.dynamic.cache import LRUCache
from pixelbox.tracer.dynamic.rewrite import mask_magics, reserved_uses, rewrite


@dataclass(frozen=True)
class Instrumented:
    """One cell ready to send to the kernel.

    ``code`` is what to execute. When ``syntax_error`` is set, ``code`` is the original so the
    kernel reports the error itself with the agent's own line numbers (and nothing is recorded).
    When ``reserved`` is non-empty the cell names pixelbox's reserved ``__pbx*`` identifiers and
    the runtime must refuse it: ``refusal`` is the message to show the agent.
    """

    code: str
    original: str
    code_hash: str
    syntax_error: str | None = None
    reserved: tuple[str, ...] = ()
    untraced_lines: tuple[int, ...] = ()
    """Lines whose code runs untraced: IPython magics and shell escapes (``%time ...``, ``!cmd``,
    ``x = !cmd``), and f-string fields that could not be instrumented safely (Python < 3.12)."""

    @property
    def traced(self) -> bool:
        """True when ``code`` carries instrumentation (parsable and not refused)."""
        return self.syntax_error is None and not self.reserved

    @property
    def refusal(self) -> str | None:
        if not self.reserved:
            return None
        return "This code was not run: " + "; ".join(self.reserved) + ". Rename those identifiers and run it again."


_CACHE: LRUCache[Instrumented] = LRUCache()


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def instrument(code: str) -> Instrumented:
    """Instrument one cell of agent code for the recorder; pure, cached by the hash of ``code``."""
    if not isinstance(code, str):
        raise TypeError(f"instrument() takes the cell source as str, got {type(code).__name__}")
    key = code_hash(code)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    result = _instrument_uncached(code, key)
    _CACHE.put(key, result)
    return result


def _instrument_uncached(code: str, key: str) -> Instrumented:
    reserved = tuple(reserved_uses(code))
    if reserved:
        return Instrumented(code=code, original=code, code_hash=key, reserved=reserved)
    try:
        rewritten, skipped = rewrite(code)
    except SyntaxError as exc:
        return Instrumented(code=code, original=code, code_hash=key, syntax_error=_describe(exc))
    except (ValueError, RecursionError) as exc:
        # Source Python accepts but we cannot rewrite safely: run it as is, but never silently.
        raise InstrumentationError(f"could not instrument this cell ({exc}); it was not run") from exc
    return Instrumented(code=rewritten, original=code, code_hash=key, untraced_lines=tuple(sorted(set(skipped))))


class InstrumentationError(RuntimeError):
    """The cell parses but could not be instrumented; the runtime should refuse it (a pixelbox bug)."""


def _describe(exc: SyntaxError) -> str:
    where = f"line {exc.lineno}" if exc.lineno else "unknown line"
    return f"{type(exc).__name__}: {exc.msg} ({where})"


def cache_info() -> dict[str, int]:
    """Hits, misses and size of the instrumentation cache (for benchmarks and diagnostics)."""
    return {"hits": _CACHE.hits, "misses": _CACHE.misses, "size": len(_CACHE)}


def clear_cache() -> None:
    _CACHE.clear()


__all__ = [
    "ORIGINAL_SOURCE_METADATA_KEY",
    "InstrumentationError",
    "Instrumented",
    "cache_info",
    "clear_cache",
    "code_hash",
    "instrument",
    "mask_magics",
]
