"""The audit of one execution: what the code says beside what ran, and the difference.

Written operations (:mod:`pixelbox.tracer.static.reader`) are paired with executed events by
position (the line and column of the called name, where both halves report it). What is left:

- ``written_not_run``: an operation the code certainly writes that produced no event, with the
  reason when it can be known: the cell raised before it (``exception at line N``), the branch was
  not taken, the loop ran zero times, the function or lambda was never called, the exception
  handler was not entered. The reason is the outermost construct around the operation that shows
  no sign of having run (no event recorded inside it);
- ``run_not_written``: an executed event this cell does not write, with how it was reached: a
  helper defined in cell K, ``getattr``, an alias of a bound method, a callback (``map``,
  ``sorted(key=...)``), or an ``eval``/``exec`` whose code is not traced at all.

A cell the static half cannot read gives an audit with ``available: false`` and the reason; the
execution itself is never affected.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pixelbox.tracer.static.parse import Unreadable
from pixelbox.tracer.static.reader import CellReading, Enclosure, EpisodeNames, WrittenOp, advance, read_cell

__all__ = ["Audit", "Ran", "audit_cell", "audit_episode", "error_line"]

_OWN_API = "pixelbox."
_UNTRACED = re.compile(r"line (\d+): code run through (eval|exec)\(\) is not traced")
_CELL_LINE = re.compile(r"^-*> ?(\d+)\s", re.MULTILINE)
_CELL_AT = re.compile(r"^\s*Cell In\[\d+\], line (\d+)", re.MULTILINE)


@dataclass
class Audit:
    """One execution's audit (JSON view: :meth:`to_dict`)."""

    available: bool
    reason: str = ""
    written: list[dict[str, Any]] = field(default_factory=list)
    written_not_run: list[dict[str, Any]] = field(default_factory=list)
    run_not_written: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape stored in traces and printed by ``pixelbox trace --audit --json``."""
        return {
            "available": self.available,
            "reason": self.reason,
            "written": self.written,
            "written_not_run": self.written_not_run,
            "run_not_written": self.run_not_written,
        }


def error_line(traceback: str) -> int | None:
    """The cell line an error traceback points at (IPython's first ``---> N`` arrow), if any; without
    arrows (an error shown like a syntax error, such as a policy refusal of an import) the line of
    its first ``Cell In[K], line N`` header."""
    lines = [int(m.group(1)) for m in _CELL_LINE.finditer(traceback)]
    lines = lines or [int(m.group(1)) for m in _CELL_AT.finditer(traceback)]
    return lines[0] if lines else None


def _evidence(events: Sequence[dict[str, Any]], enclosure: Enclosure) -> bool:
    """Whether any event of this cell was recorded inside the construct's body."""
    return any(
        (src := e.get("src")) and "cell" not in src and enclosure.holds(src.get("line", 0), src.get("col", 0))
        for e in events
    )


_NOT_ENTERED = {
    "function": ("never_called", "function {name} (line {line}) never called"),
    "lambda": ("never_called", "lambda at line {line} never called"),
    "loop": ("zero_iterations", "loop at line {line} ran zero times"),
    "branch": ("branch_not_taken", "branch at line {line} not taken"),
    "handler": ("branch_not_taken", "exception handler at line {line} not entered"),
    "try": ("exception", "an exception in the try block at line {line} skipped it"),
}
"""Enclosure kind -> (reason kind, reason) when no event was recorded inside the construct."""


def _why_not_run(op: WrittenOp, events: Sequence[dict[str, Any]], raised_at: int | None) -> tuple[str, str]:
    """``(kind, reason)`` for a written operation that produced no event."""
    outside_function = not any(e.kind in ("function", "lambda") for e in op.enclosures)
    if raised_at is not None and outside_function and op.line >= raised_at:
        return "exception", f"exception at line {raised_at}"
    for enclosure in op.enclosures:
        if not _evidence(events, enclosure):
            kind, template = _NOT_ENTERED[enclosure.kind]
            return kind, template.format(name=enclosure.name, line=enclosure.line)
    if raised_at is not None:
        return "exception", f"exception at line {raised_at}"
    return "unknown", "did not run (no construct around it explains why)"


def _same_call(op: WrittenOp, event: dict[str, Any]) -> bool:
    """A certain operation pairs with any event at its position; a possible one only with its own API
    (a subscript at the position of ``ops["mirror"](img)`` is not the mirror)."""
    return op.certain or op.api == event.get("api")


def _how(event: dict[str, Any], reading: CellReading, names: EpisodeNames) -> dict[str, Any]:
    src = event.get("src") or {}
    entry: dict[str, Any] = {"op": event["op"], "api": event.get("api"), "seq": event.get("seq")}
    if not src:
        return {**entry, "how": "no source position (not from the cell's code)"}
    entry["line"] = src.get("line")
    if "cell" in src:
        helper = names.helper_at(src["cell"], src.get("line", 0))
        named = f" ({helper})" if helper else ""
        return {**entry, "how": f"helper defined in cell {src['cell']}{named}", "cell": src["cell"]}
    site = next((s for s in reading.sites if (s.line, s.col) == (src.get("line"), src.get("col"))), None)
    if site is None:
        return {**entry, "how": "a spelling the static reader does not name"}
    return {**entry, "how": site.how, "detail": site.detail}


def audit_cell(
    code: str,
    events: Sequence[dict[str, Any]],
    *,
    names: EpisodeNames | None = None,
    raised_at: int | None = None,
    notices: Sequence[str] = (),
    tampered: bool = False,
) -> Audit:
    """Audit one execution of ``code`` given its executed ``events``.

    ``raised_at`` is the cell line the execution's exception was raised from (:func:`error_line`
    reads it from the traceback text); ``notices`` are the recorder's notices (which name untraced
    ``eval``/``exec`` lines); a ``tampered`` execution has no trustworthy events to audit.
    """
    names = names or EpisodeNames()
    if tampered and not all(_UNTRACED.search(n) for n in notices):
        return Audit(False, reason="the recorder was interfered with: the executed events are incomplete")
    reading = read_cell(code, names)
    if isinstance(reading, Unreadable):
        return Audit(False, reason=reading.reason)
    paired: set[int] = set()
    by_site: dict[tuple[int, int], list[int]] = {}
    for i, op in enumerate(reading.ops):
        by_site.setdefault((op.line, op.col), []).append(i)
    run_not_written: list[dict[str, Any]] = []
    for event in events:
        if str(event.get("api", "")).startswith(_OWN_API):
            continue  # pixelbox's own captures (the I/O layer saving a shown image): not the agent's
        src = event.get("src")
        candidates = by_site.get((src["line"], src["col"]), []) if src and "cell" not in src else []
        hits = [i for i in candidates if _same_call(reading.ops[i], event)]
        if hits:
            paired.update(hits)
        else:
            run_not_written.append(_how(event, reading, names))
    for notice in notices:
        matched = _UNTRACED.search(notice)
        if matched:
            run_not_written.append(
                {
                    "op": None,
                    "line": int(matched.group(1)),
                    "how": "eval/exec",
                    "detail": "the code it ran is not traced",
                }
            )
    written_not_run = []
    for i, op in enumerate(reading.ops):
        if i in paired or not op.certain:
            continue
        kind, reason = _why_not_run(op, events, raised_at)
        written_not_run.append(
            {"op": op.op, "api": op.api, "line": op.line, "col": op.col, "kind": kind, "reason": reason}
        )
    written = [op.to_dict() for i, op in enumerate(reading.ops) if op.certain or i in paired]
    return Audit(True, written=written, written_not_run=written_not_run, run_not_written=run_not_written)


@dataclass(frozen=True)
class Ran:
    """One execution as the audit needs it."""

    code: str
    events: Sequence[dict[str, Any]]
    index: int
    """The kernel's execution index (what ``src.cell`` of a helper's event names)."""
    raised_at: int | None = None
    notices: Sequence[str] = ()
    tampered: bool = False


def audit_episode(executions: Sequence[Ran]) -> list[Audit]:
    """Audit an episode's executions in order, names bound by earlier cells carried across."""
    names = EpisodeNames()
    audits = []
    for ran in executions:
        audits.append(
            audit_cell(
                ran.code, ran.events, names=names, raised_at=ran.raised_at, notices=ran.notices, tampered=ran.tampered
            )
        )
        names = advance(names, read_cell(ran.code, names), ran.index)
    return audits
