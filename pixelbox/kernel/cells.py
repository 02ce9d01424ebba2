"""Hooks around each top-level cell: the base of the kernel layers that act before and after a cell.

IPython runs a cell inside a cell for cell magics (``%%capture`` runs its body as a cell while its
capture is in place), and ``pre_run_cell``/``post_run_cell`` fire for both; a layer that restores
or sets process state must act once, around the outermost cell only. Standard library only.
"""

from __future__ import annotations

from typing import Any


class OutermostCell:
    """Calls :meth:`before` and :meth:`after` around each outermost cell of ``shell``."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.depth = 0

    def install(self) -> None:
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)

    def pre_run_cell(self, info: Any = None) -> None:
        self.depth += 1
        if self.depth == 1:
            self.before()

    def post_run_cell(self, result: Any = None) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth == 0:
            self.after()

    def before(self) -> None:
        """What to do before an outermost cell runs."""

    def after(self) -> None:
        """What to do after an outermost cell ran."""
