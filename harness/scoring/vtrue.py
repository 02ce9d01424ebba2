"""V_true: does an artifact tied to the matched operation really show the evidence?

Only artifacts whose lineage runs through the matched event (the event's own output, or
anything derived from it later) are judged; a checkpoint with no tool part judges every
produced artifact that went through at least one visual operation. The untouched original is
never judged. Any artifact passing any applicable judge passes the checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pixelbox.tracer.events import Event
from pixelbox.tracer.lineage import chain_for

from .episode import Artifact, EpisodeView
from .judges.base import Judge, JudgeVerdict, VisualQuestion
from .requirements import requirement_of


@dataclass(frozen=True)
class TrueVerdict:
    """The V_true verdict on one checkpoint; ``passed`` is None when no judge applies."""

    checkpoint_id: str
    passed: bool | None
    reason: str
    artifacts: tuple[int, ...] = ()
    verdicts: tuple[JudgeVerdict, ...] = field(default_factory=tuple)


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
    checkpoint: dict[str, Any], episode: EpisodeView, matched_seq: int | None, judges: list[Judge]
) -> TrueVerdict | None:
    """V_true for one checkpoint (None when it has no visual_check)."""
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
    return _any_pass(question, episode, artifacts, applicable)


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
