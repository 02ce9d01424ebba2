"""MMSearch-Plus (mmsearch-plus/MMSearch-Plus): 311 questions that need multimodal web search.

Loader with the official field decryption (:mod:`.tasks`), text and image search with summaries
through the shared providers and record/replay cache (:mod:`.tools`), the episode (:mod:`.loop`),
accuracy against any acceptable answer (:mod:`.scoring`), Set-of-Mark regions and overlay
(:mod:`.som`) and the generated demo (:mod:`.demo`). Two suites: ``mmsearch-plus`` (the paper's full
rollout: text and image search, 20 search rounds) and ``mmsearch-plus-som`` (Set-of-Mark:
``zoom_in(index)``, ``image_search(index)``, ``text_search``; 20 tool calls). Documented in
docs/mmsearch-plus.md, with what we did where the official code is unreleased.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pixelbox.harness.suites import DemoResult, EpisodeContext, RunScorer, Suite
from pixelbox.harness.suites.shared import StandardReports, usable_tasks

if TYPE_CHECKING:
    from pixelbox.harness.agents.base import Agent
    from pixelbox.harness.episode import EpisodeOutcome
    from pixelbox.harness.episode.budgets import BudgetLimits
    from pixelbox.harness.scoring.columns import Column
    from pixelbox.harness.suites.mmsearch_plus.tasks import SearchTask


class MMSearchPlus(StandardReports, Suite):
    """MMSearch-Plus in the paper's full-rollout setting (text and image search)."""

    name = "mmsearch-plus"
    title = "MMSearch-Plus"
    summary = (
        "311 search-heavy image questions: text_search and image_search with summaries, 20 rounds, any-answer accuracy"
    )
    profile = "generic"
    modes = ("atm",)
    primary_metric = "accuracy"
    som: ClassVar[bool] = False

    def metric_columns(self) -> tuple[Column, ...]:
        from pixelbox.harness.suites.mmsearch_plus.scoring import COLUMNS

        return COLUMNS

    def load_tasks(self, source: str | Path, ids: Iterable[str] | None = None) -> list[SearchTask]:
        """Usable records of ``source``; bad ones are reported on stderr and skipped."""
        from pixelbox.harness.suites.mmsearch_plus.tasks import load_tasks

        loaded = load_tasks(source, ids)
        return usable_tasks(loaded.tasks, loaded.errors, source, "MMSearch-Plus")

    def budgets(self) -> BudgetLimits:
        """20 search rounds (or 20 tool calls with Set-of-Mark), two more turns to answer, 60 s per sandbox call."""
        from pixelbox.harness.episode.budgets import BudgetLimits

        return BudgetLimits(max_rounds=22, max_tool_calls=20, execution_timeout=60.0, episode_seconds=None)

    def tool_schemas(self, mode: str, *, web: bool) -> list[dict[str, Any]]:
        from pixelbox.harness.suites.mmsearch_plus.tools import tool_schemas

        self.check_mode(mode)
        return tool_schemas(som=self.som, web=web)

    def run_episode(self, task: Any, agent: Agent, context: EpisodeContext) -> EpisodeOutcome:
        from pixelbox.harness.suites.mmsearch_plus.loop import run_search_episode

        return run_search_episode(task, agent, context, som=self.som)

    def scorer(self) -> RunScorer:
        from functools import partial

        from pixelbox.harness.suites.mmsearch_plus.scoring import score_run

        return partial(score_run, suite=self.name)

    def run_demo(self, out: str | Path, *, backend: str, concurrency: int, progress: bool) -> DemoResult:
        from pixelbox.harness.suites.mmsearch_plus.demo import run_demo

        return run_demo(Path(out), self, backend=backend, concurrency=concurrency, progress=progress)

    def demo_help(self) -> str:
        from pixelbox.harness.suites.mmsearch_plus.demo import HELP

        return HELP


SUITE = MMSearchPlus()
