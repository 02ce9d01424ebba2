"""The tracer's static half: what the code says, read without running it.

- :mod:`pixelbox.tracer.static.official`: the official Agentic-MME general runner's reading of a
  code block (which operations it lists, tied to which saved file, in which order), for scoring
  with the official semantics.
"""

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

__all__ = [
    "OfficialOp",
    "OfficialReading",
    "OfficialSave",
    "official_operations",
    "official_reading",
    "official_saves",
    "official_summary",
    "official_tool_arguments",
]
