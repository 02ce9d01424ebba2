"""V_true: does an artifact tied to the matched operation really show the evidence?

Only artifacts whose lineage runs through the matched event (the event's own output, or
anything derived from it later) are judged; a checkpoint with no tool part judges every
produced artifact that went through at least one visual operation. The untouched original is
never judged. Any artifact passing any applicable judge passes the checkpoint.

Before an artifact is judged, its recorded chain is replayed from the root input image with the
canonical implementations (``pixelbox.tracer.replay``): an artifact the chain does not reproduce
(similarity below the threshold) is not evidence, whatever it shows. Chains with ops that cannot
be re-run (``unverifiable``) are judged on their pixels alone, with the verdict noted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from pixelbox.tracer.events import Event
from pixelbox.tracer.lineage import chain_for
from pixelbox.tracer.replay import CONSISTENT_AT, verify

from .judges.base import Judge, JudgeVerdict, VisualQuestion
from .requirements import requirement_of
from .view import Artifact, EpisodeView


@dataclass(frozen=True)
class TrueVerdict:
    """The V_true verdict on one checkpoint; ``passed`` is None when no judge applies."""

    checkpoint_id: str
    passed: bool | None
    reason: str
    artifacts: tuple[int, ...] = ()
    verdicts: tuple[JudgeVerdict, ...] = field(default_factory=tuple)
    replays: tuple[dict[str, Any], ...] = ()
    """Replay verification of each candidate artifact: ``{artifact, verdict, score, reason}``."""


class Replayer:
    """Replay verification of an episode's artifacts, each verified once (``threshold`` decides)."""

    def __init__(self, episode: EpisodeView, threshold: float = CONSISTENT_AT) -> None:
        self.episode = episode
        self.threshold = threshold
        self._events = [t.event for t in episode.events]
        self._by_seq = {e.seq: e for e in self._events}
        self._done: dict[int, dict[str, Any]] = {}

    def check(self, artifact: Artifact) -> dict[str, Any]:
        """``{artifact, verdict, score, reason}``; verdict ``consistent``, ``inconsistent`` or ``unverifiable``."""
        if artifact.index not in self._done:
            self._done[artifact.index] = {"artifact": artifact.index, **self._verify(artifact)}
        return self._done[artifact.index]

    def _full_chain(self, artifact: Artifact) -> tuple[list[Event], str | None]:
        """The artifact's chain back to a task input, through earlier artifacts (``artifact:N`` ids), and its root."""
        chain = _chain_of(artifact, self._events, self._by_seq)
        seen = {artifact.index}
        while chain:
            first = chain[0]
            root = first.inputs[0] if first.inputs else first.output
            earlier = _artifact_index(root)
            source = self.episode.artifact(earlier) if earlier is not None and earlier not in seen else None
            if source is None:
                return chain, root
            seen.add(source.index)
            chain = [*_chain_of(source, self._events, self._by_seq), *chain]
        return chain, None

    def _verify(self, artifact: Artifact) -> dict[str, Any]:
        chain, root_id = self._full_chain(artifact)
        if not chain:
            return {"verdict": "unverifiable", "score": None, "reason": "no recorded event made this artifact"}
        root_path = self.episode.root_path(root_id)
        if root_path is None or not root_path.is_file():
            why = f"root image {root_id} is not a task input" if root_path is None else f"{root_path} is missing"
            return {"verdict": "unverifiable", "score": None, "reason": why}
        if not Path(artifact.path).is_file():
            return {"verdict": "unverifiable", "score": None, "reason": f"{artifact.path} is missing"}
        with Image.open(root_path) as raw_root, Image.open(artifact.path) as raw_artifact:
            root = _loaded(raw_root)
            image = _loaded(raw_artifact)
        result = verify(image, root, chain, threshold=self.threshold)
        reason = result.reason or f"the chain from {root_id} reproduces the artifact"
        return {"verdict": result.verdict, "score": result.score, "reason": reason}


def _artifact_index(image_id: str | None) -> int | None:
    """``N`` of an ``artifact:N`` id (an earlier artifact loaded again), else None."""
    if image_id is None or not image_id.startswith("artifact:"):
        return None
    tail = image_id.split(":", 1)[1]
    return int(tail) if tail.isdigit() else None


def _loaded(image: Image.Image) -> Image.Image:
    """The image decoded in a mode every canonical op accepts (palette images become RGB/RGBA)."""
    if image.mode in ("RGB", "RGBA", "L"):
        return image.copy()
    return image.convert("RGBA" if "A" in image.mode or "transparency" in image.info else "RGB")


def question_of(checkpoint: dict[str, Any]) -> VisualQuestion | None:
    """The judges' view of a checkpoint's ``visual_check`` (None when it has none)."""
    check = checkpoint.get("visual_check")
    if not isinstance(check, dict):
        return None
    evidence = check.get("evidence") or {}
    region = (checkpoint.get("constraints") or {}).get("region") or {}
    box = evidence.get("bbox_2d") or region.get("bbox_2d")
    image = evidence.get("input_image", (checkpoint.get("constraints") or {}).get("input_image", 0))
    return VisualQuestion(
        checkpoint_id=str(checkpoint.get("id", "")),
        question=str(check.get("question", "")),
        expected=str(check.get("expected_answer", "")),
        evidence_box=None if box is None else (float(box[0]), float(box[1]), float(box[2]), float(box[3])),
        root=image if isinstance(image, str) else f"input:{int(image)}",
        min_side_px=float(evidence.get("min_side_px", 32)),
        min_coverage=float(evidence.get("min_coverage", 0.9)),
        text=check.get("ocr_text"),
    )


def candidate_artifacts(episode: EpisodeView, event_seq: int | None) -> list[Artifact]:
    """Artifacts derived from event ``event_seq``; with None, every artifact that went through a visual op."""
    events = [t.event for t in episode.events]
    by_seq = {e.seq: e for e in events}
    chosen = []
    for artifact in episode.artifacts:
        chain = _chain_of(artifact, events, by_seq)
        derived = any(e.is_visual for e in chain) if event_seq is None else event_seq in {e.seq for e in chain}
        if derived:
            chosen.append(artifact)
    return chosen


def _chain_of(artifact: Artifact, events: list[Event], by_seq: dict[int, Event]) -> list[Event]:
    save = by_seq.get(artifact.event_seq) if artifact.event_seq is not None else None
    if save is None:
        return []
    return [*chain_for(events, save.inputs[0]), save] if save.inputs else [save]


def judge_checkpoint(
    checkpoint: dict[str, Any],
    episode: EpisodeView,
    matched_seq: int | None,
    judges: list[Judge],
    replayer: Replayer | None = None,
) -> TrueVerdict | None:
    """V_true for one checkpoint (None when it has no visual_check).

    With a ``replayer``, artifacts whose recorded chain does not reproduce them are not judged.
    """
    question = question_of(checkpoint)
    if question is None:
        return None
    cid = question.checkpoint_id
    has_tool_part = requirement_of(checkpoint) is not None
    if has_tool_part and matched_seq is None:
        return TrueVerdict(cid, False, "no matched operation, so no artifact can carry the evidence")
    applicable = [j for j in judges if j.applies(question)]
    if not applicable:
        return TrueVerdict(cid, None, "no configured judge applies to this check")
    artifacts = candidate_artifacts(episode, matched_seq if has_tool_part else None)
    if not artifacts:
        return TrueVerdict(cid, False, "no saved or shown artifact derives from the matched operation")
    if replayer is None:
        return _any_pass(question, episode, artifacts, applicable)
    replays = tuple(replayer.check(a) for a in artifacts)
    trusted = [a for a, r in zip(artifacts, replays, strict=True) if r["verdict"] != "inconsistent"]
    if not trusted:
        scores = ", ".join(f"artifact {r['artifact']}: {r['score']}" for r in replays)
        why = (
            f"no artifact is explained by its recorded operations (replay similarity {scores}, "
            f"needs {replayer.threshold:.2f}), so none counts as evidence"
        )
        return TrueVerdict(cid, False, why, tuple(a.index for a in artifacts), (), replays)
    verdict = _any_pass(question, episode, trusted, applicable)
    excluded = [r for r in replays if r["verdict"] == "inconsistent"]
    reason = verdict.reason
    if excluded:
        reason += "; not counted (replay does not reproduce them): " + ", ".join(
            f"artifact {r['artifact']} (similarity {r['score']})" for r in excluded
        )
    return TrueVerdict(cid, verdict.passed, reason, tuple(a.index for a in artifacts), verdict.verdicts, replays)


def _any_pass(
    question: VisualQuestion, episode: EpisodeView, artifacts: list[Artifact], judges: list[Judge]
) -> TrueVerdict:
    verdicts: list[JudgeVerdict] = []
    indices = tuple(a.index for a in artifacts)
    for artifact in artifacts:
        for judge in judges:
            verdict = judge.judge(question, artifact, episode.root_path(artifact.root or question.root))
            verdicts.append(verdict)
            if verdict.passed:
                why = f"{verdict.judge} passed artifact {artifact.index}: {verdict.answer[:120]!r}"
                return TrueVerdict(question.checkpoint_id, True, why, indices, tuple(verdicts))
    return TrueVerdict(
        question.checkpoint_id, False, f"no judge passed any of artifacts {list(indices)}", indices, tuple(verdicts)
    )
