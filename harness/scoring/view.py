"""The one view of an episode that scoring reads.

Scoring never parses harness traces directly: ``episode_from_trace`` (or a test) builds an
``EpisodeView`` and every metric reads only that. The fields mirror what the official evaluator
needs (task, answer, tool calls, produced images) plus what it lacks: canonical events with
concrete parameters, in true chronological order, and each artifact's lineage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pixelbox.harness.modes import MODES, Mode
from pixelbox.tracer.events import Event

INFRASTRUCTURE_ENDS = ("agent_error", "runtime_error", "harness_error", "unfinished")
"""Endings that say nothing about the model: its endpoint, the sandbox or the harness failed, or the
episode never ended (the run was killed). ``budget_exhausted`` and ``no_answer`` are the model's own."""
Box = tuple[float, float, float, float]
"""``(x1, y1, x2, y2)`` in 0-1000 coordinates of a root image, (0, 0) top-left."""


class EpisodeFormatError(ValueError):
    """A task or episode record is missing something scoring needs; the message names it."""


@dataclass(frozen=True)
class TaskSpec:
    """The parts of an Agentic-MME task file that scoring uses."""

    task_id: str
    level: int
    prompt: str
    golden_answer: dict[str, Any]
    process_evaluation: dict[str, Any] = field(default_factory=dict)
    category: str | None = None
    """The task's category or domain when the task file gives one (reports group by it)."""

    @property
    def checkpoints(self) -> list[dict[str, Any]]:
        return list(self.process_evaluation.get("checkpoints") or [])

    @property
    def ordering_constraints(self) -> list[dict[str, Any]]:
        return list(self.process_evaluation.get("ordering_constraints") or [])

    @property
    def reference_calls(self) -> int | None:
        """Tool calls in the human reference solution, when the task states them."""
        value = (self.process_evaluation.get("efficiency") or {}).get("reference_tool_calls")
        return None if value is None else int(value)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TaskSpec:
        """Read a task in the official JSON layout (``task_id``, ``input.prompt``, ``meta.level``...)."""
        if "task_id" not in raw:
            raise EpisodeFormatError("task has no 'task_id'; is this an Agentic-MME json/NNNN.json file?")
        golden = raw.get("golden_answer")
        if not isinstance(golden, dict) or "value" not in golden:
            raise EpisodeFormatError(f"task {raw['task_id']}: 'golden_answer' must be an object with a 'value'")
        return cls(
            task_id=str(raw["task_id"]),
            level=int((raw.get("meta") or {}).get("level", 0)),
            prompt=str((raw.get("input") or {}).get("prompt", "")),
            golden_answer=dict(golden),
            process_evaluation=dict(raw.get("process_evaluation") or {}),
            category=category_of(raw),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> TaskSpec:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


CATEGORY_FIELDS = ("meta.category", "meta.domain", "category", "domain", "prompt_category", "meta.subject")
"""Where suites keep a task's category, in the order they are looked up."""


def category_of(raw: dict[str, Any]) -> str | None:
    """The first category field :data:`CATEGORY_FIELDS` finds (the first item of a list), or None."""
    for dotted in CATEGORY_FIELDS:
        node: Any = raw
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, list):
            node = node[0] if node else None
        if isinstance(node, (str, int)) and str(node).strip():
            return str(node).strip()
    return None


@dataclass(frozen=True)
class Interaction:
    """One action of the agent: an executed code block (``kind="code"``) or a tool call (``kind="tool"``)."""

    index: int
    kind: Literal["code", "tool"]
    name: str
    arguments: dict[str, Any]
    status: str
    artifacts: tuple[int, ...] = ()
    observation: str = ""
    tampered: bool = False
    """The runtime flagged this execution's trace as interfered with (details in ``notices``)."""
    notices: tuple[str, ...] = ()
    audit: dict[str, Any] | None = None
    """What the code block says beside what ran (``Execution.audit``), when the trace has it."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class TracedEvent:
    """A canonical tracer event and the interaction it ran in."""

    interaction: int
    event: Event


@dataclass(frozen=True)
class Artifact:
    """An image the agent produced, with where its pixels come from.

    ``box_root`` is the region of the root image the artifact shows (0-1000 of the root), or
    None when lineage does not know; ``event_seq`` is the seq of the save/capture event that
    made it, which ties it to the operations upstream.
    """

    index: int
    path: Path
    sha256: str
    width: int
    height: int
    interaction: int
    root: str | None = None
    box_root: Box | None = None
    approximate: bool = False
    event_seq: int | None = None


@dataclass(frozen=True)
class SearchCall:
    """A web tool call and the text it returned to the agent."""

    interaction: int
    tool: str
    arguments: dict[str, Any]
    payload: str
    status: str = "ok"

    @property
    def query(self) -> str:
        args = self.arguments
        return str(args.get("query") or args.get("url") or args.get("image_ref") or args.get("image_index") or "")


@dataclass(frozen=True)
class EpisodeView:
    """Everything scoring needs from one episode (see the module docstring)."""

    task: TaskSpec
    mode: Mode
    answer: str
    interactions: tuple[Interaction, ...]
    events: tuple[TracedEvent, ...]
    artifacts: tuple[Artifact, ...]
    searches: tuple[SearchCall, ...]
    root_images: tuple[Path, ...]
    termination: str = "answered"
    model: str = ""
    end_reason: str = ""
    conversation: tuple[dict[str, Any], ...] = ()
    """What was said, in order (see ``conversation.conversation_of``); reports show it, scoring does not read it."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What ran the episode (endpoint, backend, runtime, suite, start time, pixelbox version; ``runmeta``)."""

    def __post_init__(self) -> None:
        seqs = [traced.event.seq for traced in self.events]
        if seqs != sorted(seqs):
            raise EpisodeFormatError("events must be in chronological order (increasing seq)")
        if self.mode not in MODES:
            raise EpisodeFormatError(f"mode must be 'gen' or 'atm', got {self.mode!r}")

    @property
    def episode_id(self) -> str:
        base = f"{self.task.task_id}-{self.mode}"
        return f"{self.model}-{base}" if self.model else base

    @property
    def infrastructure(self) -> str | None:
        """Why the episode says nothing about the model (``status: reason``), or None when it does."""
        if self.termination not in INFRASTRUCTURE_ENDS:
            return None
        return f"{self.termination}: {self.end_reason}" if self.end_reason else self.termination

    @property
    def tampered_interactions(self) -> tuple[Interaction, ...]:
        """Interactions whose execution the runtime flagged (trace integrity notices)."""
        return tuple(i for i in self.interactions if i.tampered)

    def artifact(self, index: int) -> Artifact | None:
        return next((a for a in self.artifacts if a.index == index), None)

    def root_path(self, root: str | None) -> Path | None:
        """Path of a root id like ``input:1``; None when unknown."""
        if root is None or not root.startswith("input:"):
            return None
        k = int(root.split(":", 1)[1])
        return self.root_images[k] if 0 <= k < len(self.root_images) else None


def episode_to_dict(episode: EpisodeView) -> dict[str, Any]:
    """A JSON record of the episode for reports (what the HTML pages show; the scorer adds ``expected_regions``)."""
    return {
        "episode_id": episode.episode_id,
        "task": {
            "task_id": episode.task.task_id,
            "level": episode.task.level,
            "category": episode.task.category,
            "prompt": episode.task.prompt,
            "golden_answer": episode.task.golden_answer,
        },
        "conversation": list(episode.conversation),
        "facts": dict(episode.facts),
        "mode": episode.mode,
        "model": episode.model,
        "answer": episode.answer,
        "termination": episode.termination,
        "end_reason": episode.end_reason,
        "infrastructure": episode.infrastructure,
        "interactions": [
            {
                "index": i.index,
                "kind": i.kind,
                "name": i.name,
                "arguments": i.arguments,
                "status": i.status,
                "artifacts": list(i.artifacts),
                "observation": i.observation,
                "tampered": i.tampered,
                "notices": list(i.notices),
                "audit": i.audit,
            }
            for i in episode.interactions
        ],
        "events": [{"interaction": t.interaction, **t.event.to_dict()} for t in episode.events],
        "artifacts": [
            {
                "index": a.index,
                "path": str(a.path),
                "sha256": a.sha256,
                "width": a.width,
                "height": a.height,
                "interaction": a.interaction,
                "root": a.root,
                "box_root": a.box_root,
                "event_seq": a.event_seq,
            }
            for a in episode.artifacts
        ],
        "searches": [
            {
                "interaction": s.interaction,
                "tool": s.tool,
                "arguments": s.arguments,
                "payload": s.payload,
                "status": s.status,
            }
            for s in episode.searches
        ],
        "root_images": [str(p) for p in episode.root_images],
    }
