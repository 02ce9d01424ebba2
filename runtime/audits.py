"""The cells a sandbox ran, kept so that each execution can be audited later, off the hot path.

``Sandbox.execute`` only appends what it already has (the agent's source, the events, the error
text) to this log; nothing is parsed there. ``Sandbox.audit(result)`` reads the cells with the
tracer's static half (:mod:`pixelbox.tracer.static`) when asked, carrying names bound by earlier
cells (and dropping them when the kernel lost its state). With ``SandboxOptions(audit=True)`` one
background thread reads each cell right after its execution returns, so the audit is ready (a
cache hit) by the time anyone asks.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pixelbox.runtime.execution import Execution
from pixelbox.tracer.static import EpisodeNames, audit_cell, error_line, read_cell
from pixelbox.tracer.static.reader import advance


@dataclass(frozen=True)
class _Cell:
    """What later readings need of an executed cell (not the whole result: logs live as long as the sandbox)."""

    code: str
    index: int
    state_lost: bool


class AuditLog:
    """Executed cells in order, and the episode's names after each (computed on demand)."""

    def __init__(self, background: bool) -> None:
        self._cells: list[_Cell] = []
        self._names: list[EpisodeNames] = []
        """``_names[i]``: the names cell ``i`` runs with (known for a prefix of the cells)."""
        self._lock = threading.Lock()
        self._fresh = False
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="pixelbox-audit") if background else None

    def note(self, code: str, result: Execution) -> None:
        """Remember an executed agent cell (cheap: no parsing here)."""
        with self._lock:
            self._cells.append(_Cell(code, result.index, result.state_lost or self._fresh))
            self._fresh = False
            position = len(self._cells) - 1
        if self._pool is not None:
            self._pool.submit(self._warm, position)

    def restarted(self) -> None:
        """The kernel was replaced on request: the next cell starts with no names from earlier cells."""
        with self._lock:
            self._fresh = True

    def _names_for(self, position: int) -> EpisodeNames:
        """The names cell ``position`` ran with, reading the cells before it as needed.

        The lock only guards the lists: readings happen outside it, so ``note`` (called by
        ``execute``) never waits for a reading in progress.
        """
        while True:
            with self._lock:
                if len(self._names) > position:
                    return self._names[position]
                i = len(self._names)
                cell = self._cells[i]
                before = (self._cells[i - 1], self._names[i - 1]) if i else None
            if before is None or cell.state_lost:
                names = EpisodeNames()
            else:
                previous, previous_names = before
                names = advance(previous_names, read_cell(previous.code, previous_names), previous.index)
            with self._lock:
                if len(self._names) == i:
                    self._names.append(names)

    def _warm(self, position: int) -> None:
        with self._lock:
            code = self._cells[position].code
        read_cell(code, self._names_for(position))

    def audit(self, result: Execution) -> dict[str, Any]:
        """The audit of ``result`` (one of this log's executions), stored on ``result.audit`` too."""
        with self._lock:
            position = next((i for i, c in enumerate(self._cells) if c.index == result.index), None)
        if position is None:
            report: dict[str, Any] = {
                "available": False,
                "reason": "this execution ran no agent code in this sandbox (a tool call, or refused)",
            }
        else:
            try:
                report = self._audit_at(position, result)
            except Exception as exc:  # a reader bug must never cost the caller its execution or episode
                report = {"available": False, "reason": f"the static reader failed: {type(exc).__name__}: {exc}"}
        result.audit = report
        return report

    def _audit_at(self, position: int, result: Execution) -> dict[str, Any]:
        names = self._names_for(position)
        error = result.error.traceback if result.error is not None else None
        return audit_cell(
            self._cells[position].code,
            result.events,
            names=names,
            raised_at=error_line(error) if error else None,
            notices=result.notices,
            tampered=result.tampered,
        ).to_dict()

    def close(self) -> None:
        """Stop the background reader (pending readings are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
