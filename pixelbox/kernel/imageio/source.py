"""Where in the model's code a capture or read happened: execution number and line."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CellSite:
    """The cell being executed and the line in it that led to the call (None if unknown)."""

    exec_index: int | None
    line: int | None


def cell_site(shell: Any) -> CellSite:
    """Find the running cell from the call stack.

    The outermost frame compiled from a cell is the cell being executed (a helper defined
    in an earlier cell appears deeper in the stack); its innermost frame gives the line, so
    a save inside a function defined in the same cell points at the save itself.
    """
    cells: dict[str, int] = getattr(getattr(shell, "compile", None), "_filename_map", {})
    frames: list[tuple[int, int]] = []
    frame = sys._getframe(1)
    while frame is not None:
        number = cells.get(frame.f_code.co_filename)
        if number is not None:
            frames.append((number, frame.f_lineno))
        frame = frame.f_back  # type: ignore[assignment]
    if not frames:
        return CellSite(None, None)
    current = frames[-1][0]
    line = next(lineno for number, lineno in frames if number == current)
    return CellSite(current, line)
