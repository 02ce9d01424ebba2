"""One dominant failure mode per failed episode, from process signals, with its evidence.

The seven published modes. The episode is read in order: a run that hit its budget while
repeating itself is an overthinking collapse; otherwise the earliest failed checkpoint (task
order follows the reference solution) decides; when every checkpoint passed, the agent had the
right evidence and misread it.

Infrastructure endings (the agent endpoint, the sandbox or the harness failed, or the episode never
ended) are not the model's failures: they get no label here and are reported apart
(``EpisodeView.infrastructure``). Running out of budget is the model's: often overthinking.
"""

from __future__ import annotations

from collections import Counter

from .results import CheckpointResult, FailureLabel
from .view import EpisodeView

LABELS = (
    "missing_search",
    "bad_search_query",
    "unfaithful_visual_tool_use",
    "missing_visual_tool_use",
    "overthinking_collapse",
    "tool_misexecution",
    "post_visual_perception_deficit",
)
COLLAPSE_OVERTHINK = 1.0
REPEATS_FOR_LOOP = 3


def classify(
    episode: EpisodeView, correct: bool, checkpoints: list[CheckpointResult], overthink: float | None
) -> FailureLabel | None:
    """The failure label of an episode; None when its answer was correct or infrastructure ended it."""
    if correct or episode.infrastructure is not None:
        return None
    collapse = _collapse(episode, overthink)
    if collapse is not None:
        return collapse
    for result in checkpoints:
        label = _from_checkpoint(episode, result)
        if label is not None:
            return label
    errors = [i for i in episode.interactions if not i.ok]
    if not episode.answer.strip() and errors:
        return FailureLabel(
            "tool_misexecution", None, f"no answer; interaction {errors[-1].index} ended {errors[-1].status}"
        )
    return FailureLabel(
        "post_visual_perception_deficit",
        None,
        f"every decided checkpoint passed, yet the answer {episode.answer.strip()[:80]!r} is wrong",
    )


def _collapse(episode: EpisodeView, overthink: float | None) -> FailureLabel | None:
    if episode.termination == "answered":
        return None
    repeats = _repeated_operations(episode)
    if (overthink is not None and overthink >= COLLAPSE_OVERTHINK) or repeats:
        detail = f"ended by {episode.termination!r} after {len(episode.interactions)} interactions"
        if overthink is not None:
            detail += f", Overthink {overthink:.2f}"
        if repeats:
            detail += f"; repeated {repeats}"
        return FailureLabel("overthinking_collapse", None, detail)
    return None


def _repeated_operations(episode: EpisodeView) -> list[str]:
    """Operations run ``REPEATS_FOR_LOOP`` or more times with identical parameters."""
    keys = Counter((t.event.op, repr(sorted(t.event.params.items()))) for t in episode.events if t.event.is_visual)
    return [f"{op} x{n}" for (op, _), n in keys.items() if n >= REPEATS_FOR_LOOP]


def _from_checkpoint(episode: EpisodeView, result: CheckpointResult) -> FailureLabel | None:
    if result.axis == "S" and result.passed is False:
        return _search_label(episode, result)
    if result.axis == "V" and result.tool is False:
        return _tool_label(episode, result)
    if result.axis == "V" and result.true is False:
        return _evidence_label(result)
    return None


def _search_label(episode: EpisodeView, result: CheckpointResult) -> FailureLabel:
    if not episode.searches:
        return FailureLabel("missing_search", result.checkpoint_id, "the agent made no search call")
    queries = [c.query for c in episode.searches][:5]
    reason = result.evidence.get("reason", "")
    return FailureLabel("bad_search_query", result.checkpoint_id, f"queries {queries} did not find it: {reason}")


def _tool_label(episode: EpisodeView, result: CheckpointResult) -> FailureLabel:
    cid = result.checkpoint_id
    wanted = set(result.evidence.get("ops") or ())
    failed = [t.event for t in episode.events if t.event.status == "error" and (not wanted or t.event.op in wanted)]
    if failed:
        error = failed[0].error or {}
        return FailureLabel(
            "tool_misexecution", cid, f"{failed[0].op} raised {error.get('type')}: {error.get('message')}"
        )
    broken = [i for i in episode.interactions if not i.ok and not i.artifacts]
    ran = [t.event for t in episode.events if t.event.status == "ok" and (not wanted or t.event.op in wanted)]
    if not ran and broken:
        return FailureLabel("tool_misexecution", cid, f"interaction {broken[0].index} ended {broken[0].status}")
    if not ran:
        return FailureLabel("missing_visual_tool_use", cid, f"no {sorted(wanted) or 'visual'} operation ran")
    rejected = result.evidence.get("rejected") or [result.evidence.get("reason", "")]
    return FailureLabel("unfaithful_visual_tool_use", cid, f"the operation ran but: {rejected[0]}")


def _evidence_label(result: CheckpointResult) -> FailureLabel:
    reason = str(result.evidence.get("true_reason", ""))
    if "no saved or shown artifact" in reason:
        return FailureLabel("tool_misexecution", result.checkpoint_id, f"missing save: {reason}")
    return FailureLabel(
        "unfaithful_visual_tool_use", result.checkpoint_id, f"the artifact lacks the evidence: {reason}"
    )
