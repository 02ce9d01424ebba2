"""Agentic-MME: 418 visual tasks with step checkpoints, in code mode (``gen``) and atomic mode (``atm``).

The suite wires the harness's Agentic-MME pieces together: tasks in the dataset layout or JSONL
(``pixelbox.harness.tasks``), the ``agentic-mme`` image I/O profile, the 14 atomic image tools
and the four web tools (``pixelbox.harness.tools``), the episode loop
(``pixelbox.harness.episode``), process-verified scoring (``pixelbox.harness.scoring``), the
official output layout (``pixelbox.harness.export``) and the generated demo tasks
(``pixelbox.harness.demo``). Budgets are the released runner's (15 rounds, 15 tool calls, 180 s
per code run). As the official general runners, a code-mode turn runs only its first closed
``<code>`` block (``--code-blocks all`` runs every block).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pixelbox.harness.modes import MODES
from pixelbox.harness.suites import DemoResult, EpisodeContext, RunScorer, Suite
from pixelbox.harness.suites.shared import StandardReports

if TYPE_CHECKING:
    from pixelbox.harness.agents.base import Agent
    from pixelbox.harness.episode import EpisodeOutcome
    from pixelbox.harness.export import ExportedEpisode
    from pixelbox.harness.scoring.columns import Column
    from pixelbox.harness.tasks import Task


class AgenticMME(StandardReports, Suite):
    """Agentic-MME (the paper's Gen and Atm modes; official task and output layouts)."""

    name = "agentic-mme"
    title = "Agentic-MME"
    summary = "418 tasks, code mode and atomic mode, checkpoints scored as Acc, V_tool, V_true, S, Overthink"
    profile = "agentic-mme"
    modes = MODES
    default_judges = ("ocr", "geometric")
    primary_metric = "acc"
    code_blocks = "first"

    def metric_columns(self) -> tuple[Column, ...]:
        from pixelbox.harness.scoring.results import METRIC_COLUMNS

        return METRIC_COLUMNS

    def load_tasks(self, source: str | Path, ids: Iterable[str] | None = None) -> list[Task]:
        from pixelbox.harness.tasks import load_tasks

        return load_tasks(source, ids)

    def tool_schemas(self, mode: str, *, web: bool) -> list[dict[str, Any]]:
        from pixelbox.harness.tools import offered_tools

        return offered_tools(self.check_mode(mode), web=web)

    def run_episode(self, task: Any, agent: Agent, context: EpisodeContext) -> EpisodeOutcome:
        from pixelbox.harness.episode import run_episode

        return run_episode(task, agent, **context.kwargs())

    def scorer(self) -> RunScorer:
        from pixelbox.harness.scoring.run import score_run

        return score_run

    def export_run(self, run_dir: str | Path, out: str | Path) -> list[ExportedEpisode]:
        from pixelbox.harness.export import export_run

        return export_run(run_dir, out)

    def run_demo(self, out: str | Path, *, backend: str, concurrency: int, progress: bool) -> DemoResult:
        from pixelbox.harness.demo.run import run_demo, summary_table, where_lines

        outcome = run_demo(out, backend=backend, concurrency=concurrency, progress=progress)
        agree = sum(1 for row in outcome.comparison if row["ours"] == row["official"])
        lines = [
            summary_table(outcome.summary),
            f"V_tool vs official checkpoint semantics: {agree}/{len(outcome.comparison)} checkpoints agree",
            *where_lines(outcome.out),
        ]
        return DemoResult(outcome.out, lines, list(outcome.failures))

    def demo_help(self) -> str:
        from pixelbox.harness.demo.run import help_text

        return help_text()


SUITE = AgenticMME()
