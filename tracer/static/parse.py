"""Parse a cell once with libcst (cached by its hash), or say why it cannot be read.

The static half must agree with what Python runs. A cell that Python parses but libcst does not
(new syntax libcst does not know yet), or the reverse, cannot be read faithfully: the result is
:class:`Unreadable` with the reason, and whatever asked for the reading (the audit) is marked
unavailable instead of failing.
"""

from __future__ import annotations

import ast
import hashlib
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from threading import Lock

import libcst as cst
from libcst.metadata import MetadataWrapper

_CACHE_SIZE = 512
_cache: OrderedDict[str, ParsedCell | Unreadable] = OrderedDict()
_lock = Lock()


@dataclass(frozen=True)
class ParsedCell:
    """A cell's concrete syntax tree, wrapped for scope, qualified-name and position metadata."""

    code: str
    wrapper: MetadataWrapper


@dataclass(frozen=True)
class Unreadable:
    """Why a cell has no static reading."""

    reason: str


def _python_error(code: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        return f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{where}"
    return None


def _parse(code: str) -> ParsedCell | Unreadable:
    python_error = _python_error(code)
    try:
        module = cst.parse_module(code)
    except Exception as exc:  # libcst raises ParserSyntaxError, and others on odd input
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if python_error is None:
            return Unreadable(f"libcst cannot parse this cell although Python can: {detail}")
        return Unreadable(f"the cell is not valid Python ({python_error})")
    if python_error is not None:
        return Unreadable(f"Python cannot parse this cell although libcst can: {python_error}")
    return ParsedCell(code, MetadataWrapper(module, unsafe_skip_copy=True))


def parse_cell(code: str) -> ParsedCell | Unreadable:
    """The cell parsed (from the cache when the same text was parsed before)."""
    key = hashlib.blake2b(code.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    parsed = _parse(code)
    with _lock:
        _cache[key] = parsed
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return parsed


def clear_parse_cache() -> None:
    """Forget every parsed cell (benchmarks measure the uncached path with it)."""
    with _lock:
        _cache.clear()
