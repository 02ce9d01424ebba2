"""Tracebacks the agent sees show its own code, not the kernel's machinery.

The in-kernel layers run code of their own between the agent's lines (the recorder's
stand-ins, the policy's guards and audit hook, IPython's AST transformers). When an exception
passes through them, their frames would show up in the traceback the agent reads, with host
paths in them. Each layer registers a *filter* with :func:`add_traceback_filter`; the shell's
``showtraceback`` runs every filter on the exception (which unlink frames with
:func:`strip_frames`) before IPython formats it.

IPython's traceback formatter always skips the first frame of the exception it shows (its own
``run_code`` / ``run_cell`` frame, ``tb_offset=1``), so filters keep that head frame in place
with ``keep_head=True`` instead of letting an agent frame become the skipped one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any

FrameTest = Callable[[TracebackType], bool]
"""Whether a traceback entry is to be hidden."""
Filter = Callable[[BaseException], None]
"""Edits an exception's traceback(s) in place before it is shown."""


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or during (``__cause__``/``__context__``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def strip_frames(exc: BaseException, hidden: FrameTest, keep_head: bool = False) -> None:
    """Unlink hidden frames from the tracebacks of ``exc`` and its chain.

    ``keep_head`` keeps the first entry of ``exc``'s own traceback whatever it is (the frame
    IPython skips); chained exceptions are shown whole, so theirs are filtered throughout.
    """
    for index, current in enumerate(chain(exc)):
        current.__traceback__ = unlink(current.__traceback__, hidden, keep_head and index == 0)


def unlink(tb: TracebackType | None, hidden: FrameTest, keep_head: bool = False) -> TracebackType | None:
    """``tb`` without its hidden entries (edited in place); returns the new first entry."""
    if tb is None:
        return None
    head = tb if keep_head else None
    rest = tb.tb_next if keep_head else tb
    while rest is not None and hidden(rest):
        rest = rest.tb_next
    if head is not None:
        head.tb_next = rest
    current = rest
    while current is not None:
        nxt = current.tb_next
        while nxt is not None and hidden(nxt):
            nxt = nxt.tb_next
        current.tb_next = nxt
        current = nxt
    return head if head is not None else rest


def under(*directories: str) -> FrameTest:
    """A frame test: the frame's code lives in one of ``directories`` (resolved paths)."""
    prefixes = tuple(directory.rstrip("/") + "/" for directory in directories)

    def test(tb: TracebackType) -> bool:
        return tb.tb_frame.f_code.co_filename.startswith(prefixes)

    return test


def add_traceback_filter(shell: Any, fn: Filter) -> None:
    """Run ``fn`` on every exception ``shell`` shows, after the filters added before it.

    ``showtraceback`` is wrapped once per shell; a filter that fails is skipped, so a broken
    filter can cost a clean traceback but never the error report itself.
    """
    current = shell.showtraceback
    filters: list[Filter] | None = getattr(current, "pbx_filters", None)
    if filters is None:
        filters = []
        original = current
        active = filters

        def showtraceback(exc_tuple: Any = None, *args: Any, **kwargs: Any) -> Any:
            value = exc_tuple[1] if exc_tuple else sys.exc_info()[1]
            if isinstance(value, BaseException):
                before = value.__traceback__
                for each in list(active):
                    try:
                        each(value)
                    except Exception:
                        continue
                if exc_tuple and exc_tuple[2] is before:
                    exc_tuple = (exc_tuple[0], value, value.__traceback__)
            return original(exc_tuple, *args, **kwargs)

        showtraceback.pbx_filters = filters  # type: ignore[attr-defined]
        shell.showtraceback = showtraceback
    filters.append(fn)


def cell_frame(filename: str, line: int) -> TracebackType | None:
    """A traceback entry that points at ``line`` of the cell compiled as ``filename``.

    For errors found before a cell runs (a policy rejection), so the agent's traceback shows
    the offending line of its own cell, quoted from ``linecache`` like any other cell frame.
    """
    if line < 1:
        return None
    code = compile("\n" * (line - 1) + "raise _PointAt", filename, "exec")
    try:
        exec(code, {"_PointAt": _PointAt})
    except _PointAt as marker:
        tb = marker.__traceback__
        return tb.tb_next if tb is not None else None
    return None  # pragma: no cover - the code always raises


class _PointAt(Exception):
    """Raised once to make :func:`cell_frame`'s traceback entry."""


__all__ = ["Filter", "FrameTest", "add_traceback_filter", "cell_frame", "chain", "strip_frames", "under", "unlink"]
