"""The tracer's static half: what the code says, read without running it (libcst, off the hot path).

- :mod:`pixelbox.tracer.static.parse`: each cell parsed once with libcst, cached by its hash; a
  cell libcst and Python disagree on is :class:`Unreadable` with the reason;
- :mod:`pixelbox.tracer.static.reader`: the operations a cell *writes*, in the canonical
  vocabulary, with positions, literal and computed parameters, names resolved across the
  episode's cells with libcst's scope and qualified-name metadata;
- :mod:`pixelbox.tracer.static.audit`: written operations paired with executed events, and the
  difference with reasons (``written_not_run``) and ways (``run_not_written``);
- :mod:`pixelbox.tracer.static.official`: the official Agentic-MME general runner's reading of a
  code block (which operations it lists, tied to which saved file, in which order), for scoring
  with the official semantics.

Nothing here runs inside ``Sandbox.execute``: readings are made when an audit or the official
reading is asked for.
"""

from pixelbox.tracer.static.audit import Audit, Ran, audit_cell, audit_episode, error_line
from pixelbox.tracer.static.official import (
    OfficialOp,
    OfficialReading,
    OfficialSave,
    official_operations,
    official_reading,
    official_saves,
    official_summary,
    official_tool_arguments,
)
from pixelbox.tracer.static.parse import ParsedCell, Unreadable, parse_cell
from pixelbox.tracer.static.reader import CellReading, EpisodeNames, WrittenOp, read_cell, read_episode

__all__ = [
    "Audit",
    "CellReading",
    "EpisodeNames",
    "OfficialOp",
    "OfficialReading",
    "OfficialSave",
    "ParsedCell",
    "Ran",
    "Unreadable",
    "WrittenOp",
    "audit_cell",
    "audit_episode",
    "error_line",
    "official_operations",
    "official_reading",
    "official_saves",
    "official_summary",
    "official_tool_arguments",
    "parse_cell",
    "read_cell",
    "read_episode",
]
