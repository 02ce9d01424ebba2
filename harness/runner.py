"""Running many tasks: a resumable run directory, a thread pool, a progress bar, one sandbox per episode.

``run_tasks`` is the one entry point (the CLI, the demo and the tests call it). Finished episodes
(a trace with ``episode_end``) are not redone, so a killed run is resumed by calling it again
with the same settings; an unfinished trace is kept aside as ``.partial-N`` and its task rerun.
With ``retry_failed`` the episodes that ended in an infrastructure status (``agent_error``,
``runtime_error``, ``harness_error``) are set aside the same way and run again.

An agent (or web tools) that cannot be built is a configuration error, not an episode: the agent of
the first task to run is built before any episode starts and a failure raises :class:`RunSetupError`
with nothing run or marked finished. Every episode gets a fresh sandbox that is closed whatever
happens, and a failure in one episode (agent, sandbox, even a harness bug) is recorded in its trace
and never stops the others.
"""

from __future__ import annotations

import sys
import threading
import traceback
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from pixelbox.harness.agents.base import Agent
from pixelbox.harness.episode import RETRYABLE_STATUSES, EpisodeAborted, EpisodeConfig, EpisodeOutcome
from pixelbox.harness.episode.budgets import BudgetLimits
from pixelbox.harness.episode.codemode import CodeBlocks
from pixelbox.harness.episode.loop import TurnRules
from pixelbox.harness.episode.prompts import PromptTemplates
from pixelbox.harness.modes import Mode
from pixelbox.harness.preflight import check_services
from pixelbox.harness.streak import FailureStreak
from pixelbox.harness.suites import DEFAULT_SUITE, SUITES, EpisodeContext, Suite, SuiteTask
from pixelbox.harness.traces import RunDirectory, TraceBuffer, select_shard
from pixelbox.harness.web import CacheMode, WebCache, WebTools
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.profiles import PROFILES

AgentFactory = Callable[[SuiteTask], Agent]
WebFactory = Callable[[SuiteTask], WebTools]


class RunSetupError(ValueError):
    """The agent or the web tools cannot be built from the run's settings; no episode was started."""


class EpisodeSetupError(RuntimeError):
    """The agent or the web tools of one task cannot be built; the task is left unfinished (redone on resume)."""


@dataclass(frozen=True)
class WebConfig:
    """Web tools from the real providers (keys from the environment) with a per-task record/replay cache.

    ``cache_root`` holds one directory per task; ``cache_mode`` is ``auto``, ``record``, ``replay``
    (offline: answers only from the cache) or ``off``. The URLs point the providers elsewhere
    (tests serve them locally); they are trusted configuration. The URLs the *model* chooses
    (``download_image``, ``fetch_webpage``, ``google_lens_search`` by ``image_url``) must lead to
    public internet addresses unless ``allow_private_urls`` is set (tests and local setups only).
    """

    cache_root: str | Path | None = None
    cache_mode: CacheMode = "auto"
    serper_url: str | None = None
    jina_url: str | None = None
    imgbb_url: str | None = None
    allow_private_urls: bool = False
    timeout: float | None = None
    """Seconds per provider call (None: each provider's default); not part of the run's configuration."""

    def tools_for(self, task: SuiteTask) -> WebTools:
        """The web tools of one task."""
        cache = (
            WebCache.for_task(self.cache_root, task.task_id, self.cache_mode)
            if self.cache_root is not None and self.cache_mode != "off"
            else None
        )
        urls: dict[str, Any] = {
            k: v
            for k, v in (("serper_url", self.serper_url), ("jina_url", self.jina_url), ("imgbb_url", self.imgbb_url))
            if v
        }
        return WebTools.from_env(cache, allow_private_urls=self.allow_private_urls, timeout=self.timeout, **urls)

    def to_dict(self) -> dict[str, Any]:
        view: dict[str, Any] = {
            "cache_root": str(self.cache_root) if self.cache_root else None,
            "cache_mode": self.cache_mode,
        }
        if self.allow_private_urls:  # only when set, so run directories made before the option still resume
            view["allow_private_urls"] = True
        return view


@dataclass
class RunSummary:
    """What a run (or a resumption) achieved.

    ``counts`` is the number of episodes per final status over every selected task that is
    finished now (including ones finished by earlier attempts); ``ran`` are the episodes this call
    played, ``skipped`` those already finished; ``failed`` lists harness failures that left an
    episode unfinished (it will be redone on the next resume). ``infrastructure`` counts finished
    episodes whose status says the run, not the model, failed (``agent_error``, ``runtime_error``,
    ``harness_error``): ``run_tasks(..., retry_failed=True)`` runs them again. ``stopped`` is set when
    too many infrastructure failures in a row stopped the run (see :class:`FailureStreak`): the failures
    and the tasks not started.
    """

    out_dir: Path
    total: int
    ran: int
    skipped: int
    counts: dict[str, int] = field(default_factory=dict)
    episodes: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    stopped: dict[str, Any] | None = None

    @property
    def finished(self) -> int:
        """Selected tasks with a finished episode."""
        return sum(self.counts.values())

    @property
    def infrastructure(self) -> int:
        """Finished episodes that ended in ``agent_error``, ``runtime_error`` or ``harness_error``."""
        return sum(self.counts.get(status, 0) for status in RETRYABLE_STATUSES)

    def task_ids(self, status: str) -> list[str]:
        """The selected tasks whose finished episode ended in ``status``, in task-id order."""
        return [str(e.get("task_id")) for e in self.episodes if e.get("finished") and e.get("status") == status]

    def to_dict(self) -> dict[str, Any]:
        return {
            "out_dir": str(self.out_dir),
            "total": self.total,
            "ran": self.ran,
            "skipped": self.skipped,
            "finished": self.finished,
            "counts": dict(self.counts),
            "infrastructure": self.infrastructure,
            "failed": list(self.failed),
            "stopped": self.stopped,
            "episodes": list(self.episodes),
        }


def run_tasks(
    tasks: Sequence[SuiteTask],
    *,
    agent_factory: AgentFactory,
    mode: Mode,
    out_dir: str | Path,
    sandbox_options: SandboxOptions | None = None,
    budgets: BudgetLimits | None = None,
    web: WebFactory | WebConfig | None = None,
    profile: str | None = None,
    concurrency: int = 1,
    shard: tuple[int, int] | None = None,
    progress: bool = True,
    templates: PromptTemplates | None = None,
    retry_failed: bool = False,
    suite: str | Suite = DEFAULT_SUITE,
    preflight: bool = False,
    max_consecutive_failures: int = 0,
    executor: EpisodeExecutor | None = None,
    code_blocks: CodeBlocks | None = None,
    turn_rules: TurnRules = "pixelbox",
) -> RunSummary:
    """Run ``tasks`` (or shard ``(i, n)`` of them) in ``mode``, writing traces under ``out_dir``; resumable.

    ``agent_factory(task)`` makes a fresh agent per episode. ``web`` is a :class:`WebConfig` or a
    function giving each task its :class:`WebTools` (None: no web tools are offered).
    ``retry_failed`` also reruns finished episodes that ended in ``agent_error``, ``runtime_error``
    or ``harness_error`` (their traces are set aside as ``.partial-N``). ``suite`` (a name or a
    :class:`~pixelbox.harness.suites.Suite`) plays the episodes; ``profile`` defaults to its profile.
    ``preflight`` checks the
    agent's endpoint (and the web providers in record mode) once before the first episode.
    ``max_consecutive_failures`` (0: never) stops scheduling episodes after that many infrastructure
    failures in a row; the summary's ``stopped`` says so, and calling again resumes. ``executor`` says
    where episodes play (default: a :class:`ThreadExecutor` of ``concurrency`` threads on this host;
    ``pixelbox.ray.RayExecutor`` spreads them over a Ray cluster); whichever it is, this process alone
    writes the traces. ``code_blocks`` (code mode) says which ``<code>`` blocks of a turn run; default: the suite's.
    ``turn_rules`` says how a turn's ``<answer>`` is taken (:attr:`EpisodeConfig.turn_rules`).

    Raises :class:`RunSetupError` (before any episode starts, nothing marked finished) when the
    agent or the web tools of the first task to run cannot be built, and
    :class:`~pixelbox.harness.preflight.PreflightError` when the check finds a service unusable.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    player_suite = SUITES.get(suite) if isinstance(suite, str) else suite
    player_suite.check_mode(mode)
    profile = profile or player_suite.profile
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES.names())}, got {profile!r}")
    config = EpisodeConfig(
        mode=mode,
        profile=profile,
        budgets=budgets or BudgetLimits(),
        templates=templates or PromptTemplates(),
        code_blocks=code_blocks or player_suite.code_blocks,
        turn_rules=turn_rules,
    )
    options = sandbox_options or SandboxOptions()
    selected = select_shard(tasks, *shard) if shard is not None else list(tasks)
    run = RunDirectory.open(out_dir, _run_config(config, options, web, concurrency, shard, player_suite.name))
    retry = RETRYABLE_STATUSES if retry_failed else ()
    web_factory = web.tools_for if isinstance(web, WebConfig) else web
    player = Player(run, EpisodeSpec(config, options, agent_factory, web_factory, player_suite))
    first = next((task for task in selected if run.needs_run(task.task_id, retry)), None)
    if first is not None:
        player.prepare_first(first, preflight)  # RunSetupError / PreflightError before anything is started
    pending = run.pending(selected, retry)
    streak = FailureStreak(max_consecutive_failures)
    played = _play_all(player, pending, executor or ThreadExecutor(concurrency), progress, streak)
    summary = _summary(run, selected, len(pending), played)
    summary.stopped = streak.to_dict(played.not_started)
    return summary


# -- one episode ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EpisodeSpec:
    """Everything but the task and the trace that one episode needs; picklable (given picklable
    factories), so an episode can be played in another process or on another machine."""

    config: EpisodeConfig
    options: SandboxOptions
    agent_factory: AgentFactory
    web_factory: WebFactory | None
    suite: Suite

    def build(self, task: SuiteTask) -> tuple[Agent, WebTools | None]:
        """The task's agent and web tools; :class:`EpisodeSetupError` when either cannot be built."""
        what = "the agent"
        try:
            agent = self.agent_factory(task)
            what = "the web tools"
            web = self.web_factory(task) if self.web_factory is not None else None
        except Exception as exc:
            raise EpisodeSetupError(
                f"building {what} for task {task.task_id!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
        return agent, web

    def play(
        self,
        task: SuiteTask,
        writer: Any,
        images_dir: Path,
        run_root: Path,
        should_stop: Callable[[], bool],
        built: tuple[Agent, WebTools | None] | None = None,
    ) -> EpisodeOutcome:
        """Play ``task`` into ``writer``, keeping image copies in ``images_dir`` (paths relative to ``run_root``)."""
        agent, web = built if built is not None else self.build(task)
        context = EpisodeContext(self.make_sandbox, self.config, writer, images_dir, web, run_root, should_stop)
        return self.suite.run_episode(task, agent, context)

    def make_sandbox(self, task: SuiteTask) -> Any:
        """A fresh sandbox with the task's images and the image I/O layer in the run's profile."""
        from pixelbox.runtime.sandbox import Sandbox

        options = episode_options(self.options, self.config, len(task.images), self.suite.artifacts_after_inputs)
        if self.suite.sandbox_modules:
            modules = tuple(dict.fromkeys((*options.allow_modules, *self.suite.sandbox_modules)))
            options = options.with_(allow_modules=modules)
        return Sandbox(options, inputs=list(task.images))


@dataclass
class DetachedEpisode:
    """An episode played away from the run directory: its trace records and where its images are.

    ``staging`` stands in for the run directory: the records name images relative to it
    (``episodes/<task_id>.images/...``), as they will be relative to the run directory once landed.
    """

    task_id: str
    outcome: EpisodeOutcome
    records: list[dict[str, Any]]
    staging: Path
    images: list[str] = field(default_factory=list)
    """Image files under ``staging``, relative to it."""


def play_detached(spec: EpisodeSpec, task: SuiteTask, staging: str | Path) -> DetachedEpisode:
    """Play one episode with its trace in memory and its images under ``staging`` (a scratch directory).

    What a remote worker runs; :meth:`Player.land` writes the result into the run directory.
    """
    root = Path(staging)
    images_dir = root / "episodes" / f"{task.task_id}.images"
    buffer = TraceBuffer(root / "episodes" / f"{task.task_id}.jsonl")
    outcome = spec.play(task, buffer, images_dir, root, lambda: False)
    buffer.close()
    found = images_dir.rglob("*") if images_dir.is_dir() else iter(())
    images = sorted(str(p.relative_to(root)) for p in found if p.is_file())
    return DetachedEpisode(task.task_id, outcome, buffer.records, root, images)


class Player:
    """Plays the episodes of a run (thread-safe: every episode has its own objects) and lands those
    played elsewhere; the only writer of the run's traces."""

    def __init__(self, run: RunDirectory, spec: EpisodeSpec) -> None:
        self.run, self.spec = run, spec
        self.config, self.suite = spec.config, spec.suite
        self.stop = threading.Event()
        """Set when the run is interrupted: episodes stop at their next step, unfinished."""
        self.halt = threading.Event()
        """Set when infrastructure failures stopped the run: no new episode starts, running ones finish."""
        self._prepared: dict[str, tuple[Agent, WebTools | None]] = {}
        self._landing = threading.Lock()

    def prepare_first(self, task: SuiteTask, preflight: bool = False) -> None:
        """Build the first task's agent and web tools now (and check their services when ``preflight``);
        :class:`RunSetupError` or :class:`~pixelbox.harness.preflight.PreflightError` when that fails."""
        try:
            self._prepared[task.task_id] = self.spec.build(task)
            if preflight:
                check_services(*self._prepared[task.task_id], self.suite.check_web)
        except EpisodeSetupError as exc:
            raise RunSetupError(
                f"cannot start the run: {exc}. No episode was started and nothing was marked finished; "
                "fix the agent settings (for pixelbox run: --agent and its recording path, the API key "
                "variable, --base-url) or the web settings, then run the same command again"
            ) from exc.__cause__

    def play(self, task: SuiteTask) -> EpisodeOutcome | None:
        """Run one task here to a finished trace and its summary file (None when the run was stopped first).

        An agent or web tools that cannot be built raise :class:`EpisodeSetupError` before the trace
        is created, so the task stays unfinished and is redone on resume.
        """
        if self.stopping():
            return None
        prepared = self._prepared.pop(task.task_id, None)
        built = prepared if prepared is not None else self.spec.build(task)
        writer = self.run.start_episode(task.task_id)
        try:
            images = self.run.images_dir(task.task_id)
            outcome = self.spec.play(task, writer, images, self.run.root, self.stop.is_set, built)
        finally:
            writer.close()
        self.run.finish(task.task_id)
        return outcome

    def stopping(self) -> bool:
        """Whether no new episode may start (interrupted, or halted after failures in a row)."""
        return self.stop.is_set() or self.halt.is_set()

    def land(self, episode: DetachedEpisode, place_images: Callable[[str, Path], None]) -> EpisodeOutcome | None:
        """Write an episode played elsewhere into the run: images first (``place_images(relative, target)``
        puts each file), then the trace, then its summary. The task's identity decides: when its trace
        is already finished (a duplicate delivery), nothing is written and None is returned."""
        task_id = episode.task_id
        with self._landing:
            if not self.run.needs_run(task_id):
                return None
            self.run.set_aside(task_id)
            for relative in episode.images:
                place_images(relative, self.run.root / relative)
            with self.run.start_episode(task_id) as writer:
                writer.append_records(episode.records)
            self.run.finish(task_id)
        return episode.outcome


def episode_options(
    options: SandboxOptions, config: EpisodeConfig, input_count: int, after_inputs: bool = True
) -> SandboxOptions:
    """``options`` with the I/O layer on in the episode's profile, the execution deadline from the budget
    and background audits on.

    With several inputs and ``after_inputs`` (the suite's ``artifacts_after_inputs``), artifacts are
    numbered after the last input so every image has one index.
    """
    io = {"enabled": True, "profile": config.profile, **dict(options.io)}
    if after_inputs and input_count > PROFILES.get(config.profile).spec.first_index:
        io.setdefault("first_index", input_count)
    # audit: each code cell is read statically in the background, so the trace's audit is ready at once
    return options.with_(io=io, timeout=config.budgets.execution_timeout, audit=True)


# -- many episodes ---------------------------------------------------------------------------------------


@dataclass
class _Played:
    """What :func:`_play_all` did: harness failures that left episodes unfinished, tasks never started."""

    failed: list[dict[str, str]] = field(default_factory=list)
    not_started: list[str] = field(default_factory=list)


Settle = Callable[[SuiteTask, Callable[[], "EpisodeOutcome | None"]], None]
"""``settle(task, result)``: ``result()`` gives the episode's outcome (None: not played, or a duplicate)
or raises what went wrong; settle records it, updates the progress bar and the failure streak."""


class EpisodeExecutor(ABC):
    """Where a run's episodes play. It calls ``settle(task, result)`` once per task it was given, from
    any thread; ``result`` is called inside settle, so a failure in it is counted like an episode's."""

    @abstractmethod
    def play_all(self, player: Player, tasks: list[SuiteTask], settle: Settle) -> None:
        """Play ``tasks`` (in order of submission), settling each; return when all are settled."""


class ThreadExecutor(EpisodeExecutor):
    """``concurrency`` episodes at a time in threads of this process (``pixelbox run --concurrency``)."""

    def __init__(self, concurrency: int = 1) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.concurrency = concurrency

    def play_all(self, player: Player, tasks: list[SuiteTask], settle: Settle) -> None:
        def one(task: SuiteTask) -> None:
            settle(task, lambda: player.play(task))

        if self.concurrency == 1:
            for task in tasks:
                one(task)
            return
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="pixelbox-episode")
        try:
            for future in as_completed([pool.submit(one, task) for task in tasks]):
                future.result()
        except KeyboardInterrupt:
            player.stop.set()  # running episodes stop at their next step, unfinished; resume redoes them
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def _play_all(
    player: Player, tasks: list[SuiteTask], executor: EpisodeExecutor, progress: bool, streak: FailureStreak
) -> _Played:
    played = _Played()
    lock = threading.Lock()
    bar = tqdm(
        total=len(tasks), disable=not progress, desc=f"episodes ({player.config.mode})", unit="ep", file=sys.stderr
    )

    def settle(task: SuiteTask, result: Callable[[], EpisodeOutcome | None]) -> None:
        failure: str | None = None
        try:
            outcome = result()
            if outcome is None:
                if player.halt.is_set():
                    with lock:
                        played.not_started.append(task.task_id)
                return
            line = _status_line(outcome)
            if outcome.status in RETRYABLE_STATUSES:
                failure = f"{outcome.status}: {outcome.reason}"
        except EpisodeAborted:
            return
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}"
            with lock:
                played.failed.append(
                    {"task_id": task.task_id, "error": failure, "traceback": traceback.format_exc()[-2000:]}
                )
            kind = "setup failure" if isinstance(exc, EpisodeSetupError) else "harness failure"
            line = f"{task.task_id}: {kind} ({failure}); it will be redone on resume"
        with lock:
            if streak.note(task.task_id, failure):
                player.halt.set()
                line += f"\n{streak.limit} infrastructure failures in a row: no new episode will start"
            if progress:
                bar.write(line, file=sys.stderr)
            bar.update(1)

    try:
        executor.play_all(player, tasks, settle)
    finally:
        bar.close()
    played.not_started.sort(key=[t.task_id for t in tasks].index)
    return played


def _status_line(outcome: EpisodeOutcome) -> str:
    answer = f" answer={outcome.answer!r}" if outcome.answer is not None else ""
    reason = f" ({outcome.reason})" if outcome.reason and outcome.status != "answered" else ""
    counts = f"{outcome.rounds} rounds, {outcome.tool_calls} actions, {outcome.images} images"
    return f"{outcome.task_id}: {outcome.status}{reason}{answer} [{counts}]"


def _summary(run: RunDirectory, selected: Sequence[SuiteTask], pending: int, played: _Played) -> RunSummary:
    """``pending`` tasks were to run now; those ``played`` did not start are neither run nor already done."""
    wanted = {task.task_id for task in selected}
    episodes = [s for s in run.summaries() if s.get("task_id") in wanted]
    counts = dict(Counter(str(s.get("status")) for s in episodes if s.get("finished")))
    return RunSummary(
        out_dir=run.root,
        total=len(selected),
        ran=pending - len(played.not_started),
        skipped=len(selected) - pending,
        counts=counts,
        episodes=episodes,
        failed=played.failed,
    )


def _run_config(
    config: EpisodeConfig,
    options: SandboxOptions,
    web: WebFactory | WebConfig | None,
    concurrency: int,
    shard: tuple[int, int] | None,
    suite: str,
) -> dict[str, Any]:
    sandbox = options.to_dict()
    web_view: Any = web.to_dict() if isinstance(web, WebConfig) else ("custom" if web is not None else None)
    named = {"suite": suite} if suite != DEFAULT_SUITE else {}  # absent for the default, so older runs resume
    return {
        **named,
        **config.to_dict(),
        "sandbox": sandbox,
        "web": web_view,
        "concurrency": concurrency,
        "shard": list(shard) if shard is not None else None,
    }
