"""Adapter from a harness episode trace (``pixelbox.harness.traces``) to ``EpisodeView``.

Reads ``episode_start`` (task, model, mode), each ``action`` with its ``observation`` (an
``Execution`` for code and kernel-run tools, a web ``ToolResult`` for searches), budget hits and
``episode_end``. Lineage (the root box each artifact shows) is recomputed from the events.

Artifact files are read from the run directory's copies (the observation's ``images[].stored``,
relative to the run directory) when the harness kept them, because a sandbox's workspace (the
artifact's ``host_path``) is deleted when the sandbox closes. The task is the recorded ``raw``
official JSON, else it is read again from its ``source`` file, else rebuilt from the summary.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pixelbox.harness.modes import MODE_CHOICES, parse_mode
from pixelbox.harness.traces.episode import NotAnEpisodeTrace, Step, episode_records
from pixelbox.harness.traces.store import Trace, find_traces, read_trace

from . import geometry
from .conversation import conversation_of
from .runmeta import episode_facts
from .view import (
    INFRASTRUCTURE_ENDS,
    Artifact,
    EpisodeFormatError,
    EpisodeView,
    Interaction,
    SearchCall,
    TaskSpec,
    TracedEvent,
)

RECORD_KEYS = frozenset({"v", "seq", "t", "kind", "round", "action_id", "type", "name"})

__all__ = ["DAMAGED", "damaged_episode", "episode_from_trace", "find_traces"]


def episode_from_trace(path: str | Path) -> EpisodeView:
    """Read one harness trace into the view scoring reads.

    A damaged line raises ``TraceFormatError``; a record that lacks what scoring needs raises
    ``EpisodeFormatError``; both name the file.
    """
    trace = read_trace(path)
    try:
        return _episode(path, trace)
    except EpisodeFormatError as exc:
        if str(path) in str(exc):
            raise
        raise EpisodeFormatError(f"{path}: {exc}") from exc
    except NotAnEpisodeTrace as exc:
        raise EpisodeFormatError(str(exc)) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EpisodeFormatError(
            f"{path}: a record does not have the layout docs/traces.md describes ({type(exc).__name__}: {exc}); "
            "was it written by this version of pixelbox?"
        ) from exc


DAMAGED = "damaged_trace"
"""How an episode ends in scoring when its trace's steps could not be read: a failure of the episode."""


def damaged_episode(path: str | Path, problem: str) -> EpisodeView | None:
    """The view of an episode whose steps scoring could not read: no answer, no steps, ``damaged_trace``.

    Built from the start record alone (task, mode, model); None when even that is unreadable.
    """
    try:
        trace = read_trace(path)
        start = next(iter(trace.of_kind("episode_start")))
        task = start.get("task") or {}
        mode = parse_mode(start.get("mode"))
        if mode is None:
            return None
        return EpisodeView(
            task=TaskSpec.from_dict(_task_raw(task)),
            mode=mode,
            answer="",
            interactions=(),
            events=(),
            artifacts=(),
            searches=(),
            root_images=tuple(Path(p) for p in task.get("images") or ()),
            termination=DAMAGED,
            model=str(start.get("model") or ""),
            end_reason="scoring could not read this episode's trace, so it counts as failed: "
            + problem.replace(f"{path}: ", ""),
            conversation=(),
            facts=episode_facts(start, Path(path).resolve().parent.parent),
        )
    except Exception:  # a start record that breaks the reader leaves the episode unscored
        return None


def _episode(path: str | Path, trace: Trace) -> EpisodeView:
    records = episode_records(path, trace)
    start = records.start
    task = start.get("task") or {}
    mode = parse_mode(start.get("mode"))
    if mode is None:
        raise EpisodeFormatError(f"{path}: unknown mode {start.get('mode')!r}; expected one of {sorted(MODE_CHOICES)}")
    parts = _Parts(Path(path).resolve().parent.parent)
    for step in records.steps:
        parts.add(step)
    end = records.end
    termination = _termination(trace, end)
    return EpisodeView(
        task=TaskSpec.from_dict(_task_raw(task)),
        mode=mode,
        answer=str((end or {}).get("answer") or ""),
        interactions=tuple(parts.interactions),
        events=tuple(parts.events),
        artifacts=tuple(parts.linked_artifacts()),
        searches=tuple(parts.searches),
        root_images=tuple(Path(p) for p in task.get("images") or ()),
        termination=termination,
        model=str(start.get("model") or ""),
        end_reason=_end_reason(trace, end, termination),
        conversation=conversation_of(trace),
        facts=episode_facts(start, Path(path).resolve().parent.parent),
    )


class _Parts:
    """Interactions, events, artifacts and searches collected step by step."""

    def __init__(self, run_root: Path) -> None:
        self.run_root = run_root
        self.interactions: list[Interaction] = []
        self.events: list[TracedEvent] = []
        self.artifacts: list[Artifact] = []
        self.searches: list[SearchCall] = []

    def add(self, step: Step) -> None:
        n, action, observation = step.index, step.action, step.observation
        execution = step.execution
        result = step.tool_result
        kind: Literal["code", "tool"] = "code" if step.is_code else "tool"
        arguments = {k: v for k, v in action.items() if k not in RECORD_KEYS}
        produced: list[int] = []
        if execution is not None:
            self.events.extend(TracedEvent(n, event) for event in step.events)
            stored = {int(i["index"]): str(i["stored"]) for i in observation.get("images") or [] if i.get("stored")}
            produced = self._add_artifacts(n, execution.get("artifacts") or [], stored)
        if result is not None and execution is None:
            status = "ok" if result.get("ok") else "error"
            self.searches.append(
                SearchCall(
                    n,
                    str(result.get("tool") or action.get("name")),
                    dict(result.get("args") or arguments),
                    str(result.get("text") or ""),
                    status,
                )
            )
        status = str(execution.get("status")) if execution else ("ok" if result and result.get("ok") else "error")
        text = _observation_text(execution, result)
        tampered = bool(execution.get("tampered")) if execution else False
        notices = tuple(str(x) for x in (execution.get("notices") or [])) if execution else ()
        self.interactions.append(
            Interaction(
                n,
                kind,
                str(action.get("name") or kind),
                arguments,
                status,
                tuple(produced),
                text,
                tampered,
                notices,
                execution.get("audit") if execution else None,
            )
        )

    def _add_artifacts(self, n: int, raw: list[dict[str, Any]], stored: dict[int, str]) -> list[int]:
        for record in raw:
            copy = self.run_root / stored[int(record["index"])] if int(record["index"]) in stored else None
            self.artifacts.append(
                Artifact(
                    index=int(record["index"]),
                    path=copy
                    if copy is not None and copy.is_file()
                    else Path(record.get("host_path") or record["path"]),
                    sha256=str(record["sha256"]),
                    width=int(record["width"]),
                    height=int(record["height"]),
                    interaction=n,
                )
            )
        return [int(r["index"]) for r in raw]

    def linked_artifacts(self) -> list[Artifact]:
        """Artifacts with the save/capture event that made them and the root region they show."""
        events = [t.event for t in self.events]
        linked = []
        for artifact in self.artifacts:
            save = next(
                (
                    e
                    for e in events
                    if isinstance(e.artifact, dict) and e.artifact.get("index") == artifact.index and e.inputs
                ),
                None,
            )
            if save is None:
                linked.append(artifact)
                continue
            root, box, approximate = geometry.image_region(events, save.inputs[0])
            known = root.startswith("input:")
            linked.append(
                replace(
                    artifact,
                    event_seq=save.seq,
                    root=root if known else None,
                    box_root=box if known else None,
                    approximate=approximate,
                )
            )
        return linked


def _task_raw(task: dict[str, Any]) -> dict[str, Any]:
    """The task's official JSON: recorded, else reloaded from its source file, else rebuilt from the summary."""
    raw = task.get("raw")
    if isinstance(raw, dict) and raw:
        return raw
    source = task.get("source")
    if source and Path(str(source)).is_file() and task.get("task_id") is not None:
        from pixelbox.harness.tasks import load_tasks

        try:
            return load_tasks(str(source), ids=[str(task["task_id"])])[0].raw
        except (ValueError, OSError):
            pass
    if isinstance(task.get("answer"), dict) and "golden_answer" not in task:
        level = {"level": task["level"]} if task.get("level") is not None else {}
        return {
            "task_id": task.get("task_id"),
            "input": {"prompt": task.get("prompt", "")},
            "meta": level,
            "golden_answer": task["answer"],
        }
    return task


def _observation_text(execution: dict[str, Any] | None, result: dict[str, Any] | None) -> str:
    if execution is not None:
        error = execution.get("error") or {}
        tail = f"\n{error.get('ename')}: {error.get('evalue')}" if error else ""
        return f"{execution.get('stdout') or ''}{execution.get('stderr') or ''}{tail}".strip()
    return str((result or {}).get("text") or "")


def _termination(trace: Trace, end: dict[str, Any] | None) -> str:
    """How the episode ended: ``answered``, or the ``episode_end`` status (``unfinished`` without one)."""
    status = str((end or {}).get("status") or "")
    if status in INFRASTRUCTURE_ENDS:
        return status
    if trace.of_kind("budget_hit"):
        return "budget_exhausted"
    if end is None:
        return "unfinished"
    if end.get("answer"):
        return "answered"
    return status or "ended"


def _end_reason(trace: Trace, end: dict[str, Any] | None, termination: str) -> str:
    """The recorded reason of the ending (the last ``error`` record's message when the end gives none)."""
    if end is None:
        torn = " (its last line was cut off)" if trace.torn else ""
        return f"the trace has no episode_end record{torn}: the run was killed or is still running"
    reason = str(end.get("reason") or "")
    errors = trace.of_kind("error")
    if not reason and errors and termination in INFRASTRUCTURE_ENDS:
        last = errors[-1]
        reason = f"{last.get('where')}: {last.get('type') or 'error'}: {last.get('message')}"
    return reason
