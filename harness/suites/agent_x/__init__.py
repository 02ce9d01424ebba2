"""Agent-X (mbzuai-oryx/Agent-X): 828 tool-using vision tasks (716 image, 112 video) scored step by step.

Loader for ``data.json`` + ``toolmeta.json`` + media with video frames sampled as the official
scripts do (:mod:`.tasks`); two modes (:mod:`.loop`): ``--mode gen`` is the ``official`` single-shot
inference (the model writes its steps and the tools' outputs as JSON), ``--mode atm`` is ``executed``
(the 14 tools really run: :mod:`.tools`); the official judge metrics and deterministic ones from the
trace, with G* over the generative ids (:mod:`.scoring`); the generated demo (:mod:`.demo`).
Documented in docs/agent-x.md.
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
    from pixelbox.harness.suites.agent_x.tasks import AgentXTask


class AgentX(StandardReports, Suite):
    """Agent-X: ``gen`` = the official single-shot inference, ``atm`` = the 14 tools executed."""

    name = "agent-x"
    title = "Agent-X"
    summary = "828 image/video tasks; official single-shot (gen) or executed tools (atm); step-level judge metrics, G*"
    profile = "generic"
    modes = ("gen", "atm")
    primary_metric = "goal_accuracy"
    sandbox_modules = ("sympy", "mpmath")

    def metric_columns(self) -> tuple[Column, ...]:
        from pixelbox.harness.suites.agent_x.scoring import COLUMNS

        return COLUMNS

    def load_tasks(self, source: str | Path, ids: Iterable[str] | None = None) -> list[AgentXTask]:
        from pixelbox.harness.suites.agent_x.tasks import load_tasks

        loaded = load_tasks(source, ids)
        return usable_tasks(loaded.tasks, loaded.errors, source, "Agent-X")

    def budgets(self) -> BudgetLimits:
        """Official: one call. Executed (ours, no official figure): 20 turns, 20 tool calls, 60 s per sandbox run."""
        from pixelbox.harness.episode.budgets import BudgetLimits

        return BudgetLimits(max_rounds=20, max_tool_calls=20, execution_timeout=60.0, episode_seconds=None)

    def tool_schemas(self, mode: str, *, web: bool) -> list[dict[str, Any]]:
        from pixelbox.harness.suites.agent_x.tools import tool_schemas

        return tool_schemas(web=web) if self.check_mode(mode) == "atm" else []

    def run_episode(self, task: Any, agent: Agent, context: EpisodeContext) -> EpisodeOutcome:
        from pixelbox.harness.suites.agent_x.loop import run_agentx_episode

        return run_agentx_episode(task, agent, context)

    def scorer(self) -> RunScorer:
        from pixelbox.harness.suites.agent_x.scoring import score_run

        return score_run

    def score_lines(self, scores: dict[str, Any], run_dir: str | Path) -> list[str]:
        import json

        table, where = super().score_lines(scores, run_dir)
        figures = json.dumps(scores.get("agentx"), default=str)
        return [table, f"G_acc (non-generative) and G* (generative ids) per mode: {figures}", where]

    def export_run(self, run_dir: str | Path, out: str | Path) -> list[Any]:
        """The official prediction file per mode and model (what run_eval_gpt_as_judge.py reads)."""
        from pixelbox.harness.suites.agent_x.export import export_run

        return list(export_run(run_dir, out))

    def run_demo(self, out: str | Path, *, backend: str, concurrency: int, progress: bool) -> DemoResult:
        from pixelbox.harness.suites.agent_x.demo import run_demo

        return run_demo(Path(out), self, backend=backend, concurrency=concurrency, progress=progress)

    def demo_help(self) -> str:
        from pixelbox.harness.suites.agent_x.demo import HELP

        return HELP


SUITE = AgentX()
