"""AgentVista (hkust-nlp/AgentVista): 209 visual research tasks with code, web and image search.

Loader (:mod:`.tasks`), the official image preparation (:mod:`.images`), the four tools
(:mod:`.tools`), the episode loop (:mod:`.loop`), the official judge and our process figures
(:mod:`.scoring`) and the generated demo (:mod:`.demo`). The sandbox uses the ``agentvista``
image I/O profile (``original_image``, ``original_image_1``..., ``image``, ``tool_image_N`` from
1). Documented in docs/agentvista.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pixelbox.harness.suites import DemoResult, EpisodeContext, RunScorer, Suite
from pixelbox.harness.suites.shared import StandardReports, usable_tasks

if TYPE_CHECKING:
    from pixelbox.harness.agents.base import Agent
    from pixelbox.harness.episode import EpisodeOutcome
    from pixelbox.harness.episode.budgets import BudgetLimits
    from pixelbox.harness.scoring.columns import Column
    from pixelbox.harness.suites.agentvista.tasks import VistaTask


class AgentVista(StandardReports, Suite):
    """AgentVista as its official runner plays and scores it."""

    name = "agentvista"
    title = "AgentVista"
    summary = "209 tasks, native function calling (code_interpreter, web_search, image_search, visit), judged accuracy"
    profile = "agentvista"
    modes = ("gen",)
    default_judges = ()  # no --judge: the offline match judge; the official verdicts need --judge openai:MODEL
    primary_metric = "accuracy"
    artifacts_after_inputs = False

    def metric_columns(self) -> tuple[Column, ...]:
        from pixelbox.harness.suites.agentvista.scoring import COLUMNS

        return COLUMNS

    def load_tasks(self, source: str | Path, ids: Iterable[str] | None = None) -> list[VistaTask]:
        """Usable records of ``source``; bad records are reported on stderr and skipped (the rest still run)."""
        from pixelbox.harness.suites.agentvista.official import official_from_env
        from pixelbox.harness.suites.agentvista.tasks import load_tasks

        official_from_env()  # a checkout named but not verified fails here, before any episode
        loaded = load_tasks(source, ids)
        return usable_tasks(loaded.tasks, loaded.errors, source, "AgentVista")

    def budgets(self) -> BudgetLimits:
        """30 turns (run.sh), one tool call per turn, 60 s per code run (30 s without output officially), no clock."""
        from pixelbox.harness.episode.budgets import BudgetLimits

        return BudgetLimits(max_rounds=30, max_tool_calls=30, execution_timeout=60.0, episode_seconds=None)

    def tool_schemas(self, mode: str, *, web: bool) -> list[dict[str, Any]]:
        from pixelbox.harness.suites.agentvista.tools import tool_schemas

        self.check_mode(mode)
        return tool_schemas(web=web)

    def run_episode(self, task: Any, agent: Agent, context: EpisodeContext) -> EpisodeOutcome:
        from pixelbox.harness.suites.agentvista.loop import run_vista_episode

        return run_vista_episode(task, agent, context)

    def scorer(self) -> RunScorer:
        from pixelbox.harness.suites.agentvista.scoring import score_run

        return score_run

    def export_run(self, run_dir: str | Path, out: str | Path) -> list[Any]:
        """The official output layout: OUT/<question_id>/traj.jsonl, results.jsonl, summary_metrics.json."""
        from pixelbox.harness.suites.agentvista.export import export_run

        return export_run(run_dir, out)

    def run_demo(self, out: str | Path, *, backend: str, concurrency: int, progress: bool) -> DemoResult:
        from pixelbox.harness.suites.agentvista.demo import run_demo

        return run_demo(Path(out), backend=backend, concurrency=concurrency, progress=progress)

    def demo_help(self) -> str:
        from pixelbox.harness.suites.agentvista.demo import HELP

        return HELP


SUITE = AgentVista()
