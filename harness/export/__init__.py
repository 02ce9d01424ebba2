"""Export of runs to the official Agentic-MME output layout (:mod:`.layout`), its conversation and
tool-use files (:mod:`.conversation`, :mod:`.tool_use`), and the official checkpoint semantics
applied to an export (:mod:`.official_vtool`). The format: ``docs/export.md``.
"""

from pixelbox.harness.export.layout import (
    ExportedEpisode,
    ExportError,
    export_episode,
    export_run,
    official_folder,
    path_component,
)

__all__ = ["ExportError", "ExportedEpisode", "export_episode", "export_run", "official_folder", "path_component"]
