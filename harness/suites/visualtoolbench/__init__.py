"""VisualToolBench (ScaleAI): 1,204 single- and multi-turn tasks, six tools, rubric-judged, on our sandbox.

The pieces: :mod:`.tasks` (the released parquet, the official downloader's JSON, JSONL), :mod:`.tools`
(the six tool schemas), :mod:`.calculator`, :mod:`.web` (SerpAPI search, page text, weather, with
record/replay), :mod:`.loop` (the official episode loop: up to 20 rounds per turn, earlier turns fed
back with their golden answers, a fresh interpreter per code call), :mod:`.rubrics` (the rubric
judge, ARS and APR) and :mod:`.scoring` (official figures and our process figures). The mode is
``atm``: the model calls tools as functions. ``docs/visualtoolbench.md`` says what is official and
what differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pixelbox.harness.modes import ATOMIC
from pixelbox.harness.suites import DemoResult, EpisodeContext, RunScorer, Suite

if TYPE_CHECKING:
    from pixelbox.harness.agents.base import Agent
    from pixelbox.harness.episode import EpisodeOutcome
    from pixelbox.harness.episode.budgets import BudgetLimits
    from pixelbox.harness.scoring.columns import Column
    from pixelbox.harness.web import WebTools

    from .tasks import VtbTask

MAX_ROUNDS = 20
"""The official ``max_tool_calls``: rounds (model replies with tool calls) per turn."""
REASONING_MODELS = ("o1", "o3", "o4-mini", "gpt-5")
"""Model names the official runner samples at temperature 1 (every other model at 0)."""
EXECUTION_TIMEOUT = 60.0
"""Seconds per code call (the official tool has none: it ``exec``s in the harness process)."""


class VisualToolBench(Suite):
    """VisualToolBench with the official tools, loop and rubric scoring."""

    name = "visualtoolbench"
    title = "VisualToolBench"
    summary = (
        "1,204 single- and multi-turn tasks, six tools, a fresh interpreter per code call, rubric-judged ARS and APR"
    )
    profile = "visualtoolbench"
    modes = (ATOMIC,)
    default_judges = ()
    primary_metric = "apr"
    artifacts_after_inputs = False
    """``transformed_image_0.png`` is the first output whatever the inputs (they are read by path)."""
    stateful = False
    """True keeps one interpreter for the whole episode (an explicit variant; the official tool is stateless)."""

    def metric_columns(self) -> tuple[Column, ...]:
        from .scoring import COLUMNS

        return COLUMNS

    def load_tasks(self, source: str | Path, ids: Iterable[str] | None = None) -> Sequence[VtbTask]:
        import sys

        from .tasks import load_tasks_report

        report = load_tasks_report(source, ids)
        for error in report.errors:
            print(f"pixelbox: skipped a VisualToolBench record: {error}", file=sys.stderr)
        return report.tasks

    def budgets(self) -> BudgetLimits:
        from pixelbox.harness.episode.budgets import BudgetLimits

        return BudgetLimits(max_rounds=MAX_ROUNDS, execution_timeout=EXECUTION_TIMEOUT)

    def tool_schemas(self, mode: str, *, web: bool) -> list[dict[str, Any]]:
        from .tools import tool_schemas

        self.check_mode(mode)
        return tool_schemas(["<the turn's image>"], "<the output directory>", stateful=self.stateful)

    def default_temperature(self, model: str) -> float | None:
        """0, or 1 for the reasoning models the official runner names (o1, o3, o4-mini, gpt-5...), as it samples."""
        return 1.0 if any(marker in model for marker in REASONING_MODELS) else 0.0

    def check_web(self, web: WebTools) -> tuple[list[str], list[str]]:
        from .web import check_providers

        return check_providers(), []

    def run_episode(self, task: Any, agent: Agent, context: EpisodeContext) -> EpisodeOutcome:
        from .loop import LoopSettings, run_vtb_episode

        limits = context.config.budgets
        system = context.config.templates.system
        settings = LoopSettings(
            max_rounds=limits.max_rounds,
            execution_timeout=limits.execution_timeout,
            stateful=self.stateful,
            **({"system_prompt": system} if system is not None else {}),
        )
        return run_vtb_episode(task, agent, context, settings)

    def scorer(self) -> RunScorer:
        from .scoring import score_vtb_run

        return score_vtb_run

    def score_lines(self, scores: dict[str, Any], run_dir: str | Path) -> list[str]:
        from .scoring import score_lines

        return score_lines(scores, run_dir)

    def write_report(self, run_dir: str | Path, include_infrastructure: bool | None = None) -> dict[str, str]:
        from pixelbox.harness.scoring.run import write_report

        from .scoring import add_official_figures

        paths = write_report(run_dir, include_infrastructure=include_infrastructure)
        add_official_figures(Path(run_dir), paths)
        return paths

    def export_run(self, run_dir: str | Path, out: str | Path) -> list[Any]:
        """The official runners' result files and the ``clean_rubrics.json`` the official judge reads."""
        from .export import export_vtb_run

        return export_vtb_run(run_dir, out)

    def run_demo(self, out: str | Path, *, backend: str, concurrency: int, progress: bool) -> DemoResult:
        from .demo import run_demo

        return run_demo(Path(out), self.name, backend=backend, concurrency=concurrency, progress=progress)

    def demo_help(self) -> str:
        from .demo import HELP

        return HELP


class StatefulVisualToolBench(VisualToolBench):
    """The same benchmark with one interpreter kept for the whole episode (not the official setting)."""

    name = "visualtoolbench-stateful"
    title = "VisualToolBench (stateful interpreter)"
    summary = "VisualToolBench with variables kept between code calls (a variant; the official tool is stateless)"
    stateful = True


SUITE = VisualToolBench()
