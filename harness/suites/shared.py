"""Pieces several suites' own loops, scoring and demos use alike, written once.

- :class:`StandardReports`: ``score_lines`` and ``write_report`` for suites whose score records have
  the shared shape (a mixin, so ``harness.suites`` itself imports nothing of scoring at load time);
- :class:`TaskRecordError` and :class:`LoadedTasks`: a loader's usable tasks and its bad records;
- :func:`usable_tasks`: report bad records on stderr, fail when none is usable;
- :func:`play_and_end` and :func:`in_sandbox`: an episode played to its end in its own sandbox;
- :func:`run_traces`, :func:`score_each` and :func:`write_scores`: a suite's run scored episode by episode
  into ``scores.json`` in the shared layout;
- :func:`cache_dir`: pixelbox's cache for material derived from datasets (``PIXELBOX_CACHE``);
- :func:`write_recordings`, :func:`replay_run` and :func:`judged_wrong`: a demo's recorded run and its check;
- :func:`json_object_in`: the JSON object in a model's reply;
- :func:`judge_spec`: the ``--judge`` spec a suite's LLM judge uses, or None for the offline rule.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from pixelbox.harness.agents.base import Agent
    from pixelbox.harness.episode import EpisodeOutcome
    from pixelbox.harness.episode.budgets import Budget
    from pixelbox.harness.modes import Mode
    from pixelbox.harness.suites import EpisodeContext, Suite
    from pixelbox.harness.traces import TraceWriter


T = TypeVar("T")


class TaskRecordError(ValueError):
    """One record is unusable: the message names the file, the record and the field."""


@dataclass
class LoadedTasks(Generic[T]):
    """The usable tasks of a source and one error per record that could not be used."""

    tasks: list[T] = field(default_factory=list)
    errors: list[TaskRecordError] = field(default_factory=list)

    def add(self, make: Callable[[], T], where: str) -> None:
        """Keep ``make()``'s task, or its :class:`TaskRecordError` prefixed with ``where`` (file and record)."""
        try:
            self.tasks.append(make())
        except TaskRecordError as exc:
            self.errors.append(TaskRecordError(f"{where}: {exc}"))


class StandardReports:
    """``pixelbox score`` lines and ``pixelbox report`` pages for score records in the shared shape."""

    def score_lines(self, scores: dict[str, Any], run_dir: str | Path) -> list[str]:
        from pixelbox.harness.scoring.report import to_markdown
        from pixelbox.harness.scoring.run import SCORES_FILE

        return [to_markdown(scores["summary"]).removesuffix("\n"), f"scores: {str(run_dir).rstrip('/')}/{SCORES_FILE}"]

    def write_report(self, run_dir: str | Path, include_infrastructure: bool | None = None) -> dict[str, str]:
        from pixelbox.harness.scoring.run import write_report

        return write_report(run_dir, include_infrastructure=include_infrastructure)


def usable_tasks(tasks: list[Any], errors: Sequence[Exception], source: str | Path, title: str) -> list[Any]:
    """``tasks``, after printing each bad record as ``skipped:``; a ``ValueError`` when none is usable."""
    for error in errors:
        print(f"skipped: {error}", file=sys.stderr)
    if not tasks:
        raise ValueError(f"{source}: no usable {title} record ({len(errors)} bad)")
    return tasks


def run_traces(run_dir: str | Path, suite: str) -> tuple[Path, list[Path]]:
    """The run directory and its episode traces; a ``RunDirError`` naming the suite when it holds none."""
    from pixelbox.harness.scoring.run import RunDirError
    from pixelbox.harness.traces.store import find_traces

    root = Path(run_dir)
    traces = find_traces(root)
    if not traces:
        raise RunDirError(f"no episode traces under {root}; is this a `pixelbox run --suite {suite}` directory?")
    return root, traces


def score_each(traces: Sequence[Path], score: Callable[[Path], dict[str, Any]], progress: bool) -> list[dict[str, Any]]:
    """``score(trace)`` for every trace, in order, with a progress bar when ``progress``."""
    from tqdm import tqdm

    return [score(path) for path in tqdm(traces, desc="judging", unit="episode", disable=not progress)]


def write_scores(
    root: Path,
    suite: str,
    judges: list[str],
    records: list[dict[str, Any]],
    include_infrastructure: bool,
    **extra: Any,
) -> dict[str, Any]:
    """``root/scores.json`` in the shared layout (summary over the score records, then ``extra``); returned."""
    from pixelbox.harness.scoring.report import summarize
    from pixelbox.harness.scoring.run import SCORES_FILE

    result = {
        "run_dir": str(root),
        "suite": suite,
        "judges": judges,
        "options": {"include_infrastructure": include_infrastructure},
        "summary": summarize([r["score"] for r in records], include_infrastructure),
        **extra,
        "episodes": records,
    }
    (root / SCORES_FILE).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return result


def episode_view(path: Path, episode_id: str, task_id: str) -> dict[str, Any]:
    """The episode as reports show it (a stub naming the problem when the trace cannot be viewed)."""
    from pixelbox.harness.scoring.from_trace import episode_from_trace
    from pixelbox.harness.scoring.view import episode_to_dict

    try:
        return episode_to_dict(episode_from_trace(path))
    except Exception as exc:
        return {"episode_id": episode_id, "task": {"task_id": task_id}, "view_error": str(exc)}


def cache_dir(*parts: str) -> Path:
    """``$PIXELBOX_CACHE/parts...`` (default ``~/.cache/pixelbox``): images and frames extracted from datasets."""
    root = os.environ.get("PIXELBOX_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "pixelbox")
    return Path(root).joinpath(*parts)


def play_and_end(
    loop: Callable[[], None], writer: TraceWriter, task_id: str, budget: Budget, book: Any, **totals: Any
) -> EpisodeOutcome:
    """Play ``loop`` until the episode ends; write ``episode_end`` with the budget's totals and ``totals``;
    the outcome counts ``book``'s images as they are at the end."""
    from pixelbox.harness.episode import EpisodeOutcome, play_until_end

    status, reason, answer = play_until_end(loop, writer)
    writer.episode_end(status=status, reason=reason, answer=answer, totals={**budget.snapshot(), **totals})
    return EpisodeOutcome(task_id, status, reason, answer, budget.rounds, budget.tool_calls, len(book.entries))


def in_sandbox(
    task: Any, agent: Agent, context: EpisodeContext, play: Callable[[Any], EpisodeOutcome]
) -> EpisodeOutcome:
    """Start the task's sandbox, ``play(sandbox)``, and always close it; a failed start is traced as such."""
    from pixelbox.harness.episode import record_failed_start

    try:
        sandbox = context.make_sandbox(task)
    except Exception as exc:
        return record_failed_start(task, agent.model, context.config, context.writer, "runtime", exc)
    try:
        return play(sandbox)
    finally:
        sandbox.close()


def write_recordings(folder: Path, recordings: dict[str, Any]) -> Path:
    """Each task's recorded model turns as ``folder/TASK_ID.json`` (what :func:`replay_run` plays)."""
    folder.mkdir(parents=True, exist_ok=True)
    for task_id, turns in recordings.items():
        (folder / f"{task_id}.json").write_text(json.dumps(turns, indent=1), encoding="utf-8")
    return folder


def replay_run(
    suite: Suite,
    tasks: Sequence[Any],
    recordings: Path,
    model: str,
    run_dir: Path,
    *,
    mode: Mode,
    backend: str,
    concurrency: int,
    progress: bool,
    web_cache: Path | None = None,
) -> Any:
    """A demo's run: ``tasks`` played by the recorded turns under ``recordings`` (the model named ``model``),
    the web tools answering from ``web_cache`` only (replay) when given; the runner's summary."""
    from pixelbox.harness.agents.replay import ReplayAgent
    from pixelbox.harness.runner import WebConfig, run_tasks
    from pixelbox.runtime.options import SandboxOptions

    return run_tasks(
        tasks,
        agent_factory=lambda task: ReplayAgent.from_file(recordings, task.task_id, model=model),
        mode=mode,
        out_dir=run_dir,
        sandbox_options=SandboxOptions(backend=backend),
        budgets=suite.budgets(),
        web=WebConfig(cache_root=web_cache, cache_mode="replay") if web_cache is not None else None,
        concurrency=concurrency,
        progress=progress,
        suite=suite,
    )


def judged_wrong(scores: dict[str, Any]) -> list[str]:
    """A demo's failures among scored episodes: each one whose accuracy is not 1, with its answer and the gold."""
    return [
        f"{score['task_id']}: judged wrong ({score['prediction']!r} vs {score['gold']!r})"
        for score in (record["score"] for record in scores["episodes"])
        if score["metrics"]["accuracy"] != 1.0
    ]


def json_object_in(reply: str) -> dict[str, Any] | None:
    """The JSON object a model's reply holds (from its first ``{`` to its last ``}``), or None."""
    left, right = reply.find("{"), reply.rfind("}")
    if left < 0 or right <= left:
        return None
    try:
        value = json.loads(reply[left : right + 1])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def judge_spec(specs: Sequence[str], suite: str, accepted: str) -> str | None:
    """The first ``openai:`` spec of ``specs``, or None when only ``match`` (the offline rule) is asked for;
    any other spec is a ``ValueError`` saying which judges ``suite`` takes (``accepted``)."""
    for spec in specs:
        if spec.startswith("openai:"):
            return spec
    unknown = [s for s in specs if s != "match"]
    if unknown:
        raise ValueError(f"{suite} judges are {accepted}, not {', '.join(unknown)}")
    return None
