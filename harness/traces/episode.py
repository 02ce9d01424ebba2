"""One episode trace read back: its records grouped into steps, the one reader of the format.

Steps pair each ``action`` with its ``observation`` and carry its execution's events, renumbered
after a kernel restart so sequence numbers keep increasing; artifacts of the whole episode are
indexed so every visual operation can name the files derived from it (lineage from the tracer
events). The exporter (``pixelbox.harness.export``) and scoring
(``pixelbox.harness.scoring.from_trace``) both read traces through :func:`read_episode`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pixelbox.harness.modes import CODE, parse_mode
from pixelbox.harness.traces.store import Trace, read_trace
from pixelbox.tracer.events import Event
from pixelbox.tracer.lineage import chain_for


class NotAnEpisodeTrace(ValueError):
    """The file is a trace but not of an episode (no ``episode_start``); the message names it."""


def iso_time(t: Any) -> str | None:
    """A trace ``t`` (Unix seconds) as an ISO 8601 UTC timestamp."""
    if not isinstance(t, (int, float)):
        return None
    return datetime.fromtimestamp(float(t), tz=timezone.utc).isoformat()


@dataclass(frozen=True)
class Step:
    """One action the harness took for the model, and what it gave back."""

    index: int
    action: dict[str, Any]
    observation: dict[str, Any]
    events: tuple[Event, ...] = ()

    @property
    def execution(self) -> dict[str, Any] | None:
        found = self.observation.get("execution")
        return found if isinstance(found, dict) else None

    @property
    def tool_result(self) -> dict[str, Any] | None:
        found = self.observation.get("tool_result")
        return found if isinstance(found, dict) else None

    @property
    def artifacts(self) -> list[dict[str, Any]]:
        return list((self.execution or {}).get("artifacts") or [])

    @property
    def round(self) -> int:
        return int(self.action.get("round") or 1)

    @property
    def is_code(self) -> bool:
        return self.action.get("type") == "code"


@dataclass
class EpisodeRecords:
    """A trace's records grouped: the start and end records and the steps between them."""

    path: Path
    trace: Trace
    start: dict[str, Any]
    steps: list[Step]
    end: dict[str, Any] | None
    derived: dict[int, list[int]] = field(default_factory=dict)
    """Event seq -> indices of the artifacts whose lineage runs through that event."""

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every record of the trace, in order."""
        return self.trace.records

    @property
    def task(self) -> dict[str, Any]:
        task = self.start.get("task")
        return task if isinstance(task, dict) else {}

    @property
    def task_id(self) -> str:
        return str(self.task.get("task_id") or self.path.stem)

    @property
    def mode(self) -> str:
        """``gen`` or ``atm`` (``code`` and ``atomic`` are read as those)."""
        mode = str(self.start.get("mode") or CODE)
        return parse_mode(mode) or mode

    @property
    def model(self) -> str:
        return str(self.start.get("model") or "model")

    @property
    def turns(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("kind") == "turn"]

    @property
    def answer(self) -> str:
        return str((self.end or {}).get("answer") or "")

    def stored_images(self) -> dict[int, str]:
        """Image index -> the run's own copy (``observation.images[].stored``, relative to the run directory)."""
        kept: dict[int, str] = {}
        for step in self.steps:
            for image in step.observation.get("images") or []:
                if isinstance(image, dict) and image.get("stored") and image.get("origin") != "input":
                    kept[int(image["index"])] = str(image["stored"])
        return kept

    def all_artifacts(self) -> list[dict[str, Any]]:
        """Every artifact of the episode, in the order the steps produced them."""
        return [a for step in self.steps for a in step.artifacts]


def read_episode(path: str | Path) -> EpisodeRecords:
    """Read a trace into :class:`EpisodeRecords`.

    A damaged line raises ``TraceFormatError``; a trace with no ``episode_start`` raises
    :class:`NotAnEpisodeTrace`; a malformed event raises ``EventFormatError``.
    """
    return episode_records(path, read_trace(path))


def episode_records(path: str | Path, trace: Trace) -> EpisodeRecords:
    """Group an already read ``trace`` (see :func:`read_episode`)."""
    start = next(iter(trace.of_kind("episode_start")), None)
    if start is None:
        raise NotAnEpisodeTrace(f"{path}: no episode_start record; is this a pixelbox episode trace?")
    observations = {o.get("action_id"): o for o in trace.of_kind("observation")}
    steps = [
        Step(n, action, observations.get(action.get("action_id")) or {})
        for n, action in enumerate(trace.of_kind("action"))
    ]
    steps = _with_events(steps)
    end = next(iter(trace.of_kind("episode_end")), None)
    episode = EpisodeRecords(Path(path), trace, start, steps, end)
    episode.derived = _derived_artifacts([e for s in steps for e in s.events])
    return episode


def _with_events(steps: list[Step]) -> list[Step]:
    """Parse each step's events; renumber after a kernel restart so seqs keep increasing, and give the new
    kernel's intermediate image ids (``img:K``, counted from 0 again) a ``#GENERATION`` suffix so they never
    meet the earlier kernel's."""
    offset, last, generation, out = 0, -1, 0, []
    produced: set[str] = set()
    for step in steps:
        parsed = [Event.from_dict(r) for r in (step.execution or {}).get("events") or []]
        restarted = bool(parsed) and parsed[0].seq + offset <= last
        if restarted:
            offset = last + 1 - parsed[0].seq
        outputs = {e.output for e in parsed if e.output is not None and e.output.startswith("img:")}
        if restarted or outputs & produced:  # a kernel numbers its images once: a repeated id is a new kernel
            generation += 1
            produced = set()
        produced |= outputs
        events = tuple(_in_generation(replace(e, seq=e.seq + offset), generation) for e in parsed)
        if events:
            last = events[-1].seq
        out.append(replace(step, events=events))
    return out


def _in_generation(event: Event, generation: int) -> Event:
    if not generation:
        return event

    def rename(image_id: str | None) -> str | None:
        return f"{image_id}#{generation}" if image_id is not None and image_id.startswith("img:") else image_id

    return replace(event, inputs=tuple(rename(i) or i for i in event.inputs), output=rename(event.output))


def _derived_artifacts(events: list[Event]) -> dict[int, list[int]]:
    """For each event seq, the artifacts whose lineage (save event and its upstream chain) includes it."""
    derived: dict[int, list[int]] = {}
    for save in events:
        if not isinstance(save.artifact, dict) or not save.inputs or "index" not in save.artifact:
            continue
        index = int(save.artifact["index"])
        for event in [*chain_for(events, save.inputs[0]), save]:
            derived.setdefault(event.seq, []).append(index)
    return derived
