"""Benchmark suites: what makes a benchmark runnable and scorable on pixelbox, one module each.

A suite brings its dataset loader, its image I/O profile (the sandbox conventions its models were
trained on), its tools with their official names and schemas, its episode loop, its scoring, and
a few bundled demo tasks. ``pixelbox run|score|report|export|demo --suite NAME`` picks one; the
run directory, resumption, sharding, concurrency, traces, sandboxes, agents and web providers are
shared by all.

To add a suite, add a module (or package) to this package that defines ``SUITE``, an instance of
a :class:`Suite` subclass. :data:`SUITES` finds it on first use: no list elsewhere names suites,
and every ``--suite`` choice is read from here. Keep the module's top level light (import the
suite's machinery inside its methods) so that ``pixelbox --help`` stays quick.
Agentic-MME (:mod:`.agentic_mme`) is the first suite and the default.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pixelbox.registry import Registry

if TYPE_CHECKING:
    from pixelbox.harness.agents.base import Agent
    from pixelbox.harness.episode import EpisodeConfig, EpisodeOutcome
    from pixelbox.harness.episode.budgets import BudgetLimits
    from pixelbox.harness.episode.codemode import CodeBlocks
    from pixelbox.harness.scoring.columns import Column
    from pixelbox.harness.traces import TraceWriter
    from pixelbox.harness.web import WebTools

DEFAULT_SUITE = "agentic-mme"
"""The suite of ``pixelbox run`` and friends when ``--suite`` is not given."""


class SuiteError(ValueError):
    """A suite cannot do what was asked (a mode it lacks, an export it has no layout for)."""


class SuiteTask(Protocol):
    """What the shared machinery needs of any suite's task: an id, its input images, a JSON form."""

    @property
    def task_id(self) -> str: ...

    @property
    def images(self) -> tuple[Path, ...]: ...

    def to_dict(self) -> dict[str, Any]: ...


SandboxFactory = Callable[[Any], Any]
"""Makes the started sandbox of one task (its images as inputs, the run's options and profile)."""


@dataclass(frozen=True)
class EpisodeContext:
    """What the runner hands a suite for one episode: how to start the task's sandbox, the episode's
    settings, the trace to write, where to keep image copies, the web tools (if on), the run
    directory, and whether the run is being stopped (the episode then ends unfinished)."""

    make_sandbox: SandboxFactory
    config: EpisodeConfig
    writer: TraceWriter
    images_dir: Path
    web: WebTools | None = None
    run_root: Path | None = None
    should_stop: Callable[[], bool] = field(default=lambda: False)

    def kwargs(self) -> dict[str, Any]:
        """The fields as keyword arguments (``pixelbox.harness.episode.run_episode`` takes them so)."""
        return {item.name: getattr(self, item.name) for item in fields(self)}


class RunScorer(Protocol):
    """Scores every episode traced under ``run_dir`` with ``judges``; writes and returns ``scores.json``.

    ``options`` are the Agentic-MME scorer's :class:`~pixelbox.harness.scoring.options.ScoringOptions`
    (other suites' scorers take and ignore them); ``include_infrastructure`` puts infrastructure
    failures in the summary rows.
    """

    def __call__(
        self, run_dir: str | Path, judges: Sequence[str], *, progress: bool, options: Any, include_infrastructure: bool
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class DemoResult:
    """What ``pixelbox demo --suite NAME`` prints (``lines``) and what went wrong (``failures``)."""

    out: Path
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class Suite(ABC):
    """One benchmark: its tasks, sandbox conventions, tools, episode loop, scoring and demo.

    Class attributes: ``name`` (``--suite``), ``title`` (prose), ``summary`` (one line for help
    and docs), ``profile`` (the image I/O profile its sandboxes use, from
    ``pixelbox.runtime.profiles``), ``modes`` (the interaction modes it runs; the first is its
    default), ``default_judges`` (``--judge`` specs used when none are given) and
    ``primary_metric`` (the key of the metric that says whether an episode passed: charts by
    category and level, ``pixelbox compare``'s default ``--metric``; one of :meth:`metric_columns`).
    ``artifacts_after_inputs``: with several input images, the sandbox numbers artifacts after the
    last input (Agentic-MME's one index per image); False keeps the profile's own first index
    (AgentVista's ``tool_image_1``, VisualToolBench's ``transformed_image_0``) whatever the inputs.
    ``code_blocks``: which ``<code>`` blocks of a code-mode turn run by default (``all``, or ``first``
    where the official runner runs only the first closed one; ``--code-blocks`` overrides it).
    ``sandbox_modules``: modules beyond the policy's allow-list that the suite's tools import in the
    sandbox (Agent-X's Solver: sympy), given to every sandbox of its episodes.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    summary: ClassVar[str]
    profile: ClassVar[str]
    modes: ClassVar[tuple[str, ...]]
    default_judges: ClassVar[tuple[str, ...]] = ()
    primary_metric: ClassVar[str] = ""
    artifacts_after_inputs: ClassVar[bool] = True
    code_blocks: ClassVar[CodeBlocks] = "all"
    sandbox_modules: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def load_tasks(self, source: str | Path, ids: Iterable[str] | None = None) -> Sequence[SuiteTask]:
        """The tasks at ``source`` in the suite's released formats (only ``ids``, in source order, if given).

        A bad record is a ``ValueError`` naming the file, the record and the field.
        """

    def metric_columns(self) -> tuple[Column, ...]:
        """The metrics of one scored episode, in the order reports show them.

        Each :class:`~pixelbox.harness.scoring.columns.Column` has a key, a label, a kind (``rate``:
        a fraction shown as a percentage; ``number``) and which way is better. Reports, their
        charts, ``pixelbox compare`` and the docs read them; a score record names its ``suite``
        and holds the values as fields or as ``metrics`` (``{key: value}``, None where a metric
        does not apply).
        """
        return ()

    def budgets(self) -> BudgetLimits:
        """The suite's official episode budgets (rounds, tool calls, seconds per code run)."""
        from pixelbox.harness.episode.budgets import BudgetLimits

        return BudgetLimits()

    @abstractmethod
    def tool_schemas(self, mode: str, *, web: bool) -> list[dict[str, Any]]:
        """The function-calling schemas offered in ``mode``, with the official names (``web``: web tools on)."""

    @abstractmethod
    def run_episode(self, task: Any, agent: Agent, context: EpisodeContext) -> EpisodeOutcome:
        """Play one episode to its end, writing its trace; always closes the sandbox it made."""

    @abstractmethod
    def scorer(self) -> RunScorer:
        """The function that scores a run of this suite (:meth:`score_run` calls it); imported when asked,
        so that loading the suite stays light."""

    def score_run(
        self,
        run_dir: str | Path,
        judges: Sequence[str],
        *,
        progress: bool = True,
        options: Any = None,
        include_infrastructure: bool = False,
    ) -> dict[str, Any]:
        """Score every episode under ``run_dir`` from its traces; writes and returns the scores."""
        score = self.scorer()
        return score(run_dir, judges, progress=progress, options=options, include_infrastructure=include_infrastructure)

    def score_lines(self, scores: dict[str, Any], run_dir: str | Path) -> list[str]:
        """What ``pixelbox score`` prints about ``scores`` (the result of :meth:`score_run`)."""
        import json

        return [json.dumps(scores.get("summary", scores), indent=1, default=str)]

    @abstractmethod
    def write_report(self, run_dir: str | Path, include_infrastructure: bool | None = None) -> dict[str, str]:
        """Write the reports of a scored run; returns their paths by kind."""

    def export_run(self, run_dir: str | Path, out: str | Path) -> list[Any]:
        """Write the run in the benchmark's official output layout, where it has one."""
        raise SuiteError(f"{self.title} has no official output layout to export to")

    @abstractmethod
    def run_demo(self, out: str | Path, *, backend: str, concurrency: int, progress: bool) -> DemoResult:
        """Run the suite's bundled demo tasks offline with recorded solutions, scored, under ``out``."""

    def demo_help(self) -> str:
        """What the demo does and writes under its ``--out`` (``pixelbox demo --help`` shows it)."""
        return ""

    def default_temperature(self, model: str) -> float | None:
        """The temperature the official runner samples ``model`` at when ``--temperature`` is not given
        (None: the endpoint's default)."""
        return None

    def check_web(self, web: WebTools) -> tuple[list[str], list[str]]:
        """``(problems, notes)`` of the web providers this suite's tools use, checked once before a run that
        records their answers (problems stop the run). By default the shared providers' own checks."""
        from pixelbox.harness.web.preflight import check_providers

        found = check_providers(web)
        return found.problems, found.notes

    def check_mode(self, mode: str) -> str:
        """``mode`` when the suite runs it, else :class:`SuiteError` listing its modes."""
        if mode not in self.modes:
            raise SuiteError(f"{self.title} runs in mode(s) {', '.join(self.modes)}, not {mode!r}")
        return mode


SUITES: Registry[Suite] = Registry("suite", discover=(__name__, "SUITE"), name_of=lambda suite: suite.name)
"""Every suite, found in this package's modules."""


__all__ = ["DEFAULT_SUITE", "SUITES", "DemoResult", "EpisodeContext", "RunScorer", "Suite", "SuiteError", "SuiteTask"]
