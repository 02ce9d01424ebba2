"""V_tool: match visual checkpoints one-to-one to executed operations, in chronological order.

An event can satisfy a checkpoint only if it ran (status ``ok``) and produced an image (an
output id), its op is one the checkpoint accepts (with the vocabulary's synonyms), and it acts
on the required input image and region when the checkpoint says so. Each event satisfies at
most one checkpoint. Among the assignments that satisfy the most checkpoints, the one that
satisfies the most ordering constraints wins; ties go to the earliest events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import geometry
from .ordering import OrderVerdict, cannot_pass, check_order, count_passed
from .requirements import Requirement, requirement_of
from .timeline import Step, timeline
from .view import EpisodeView, Interaction

SEARCH_BUDGET = 50_000
"""Nodes explored when looking for the best assignment; past it the best one found so far is kept."""


@dataclass(frozen=True)
class ToolMatch:
    """The verdict on one checkpoint's tool requirement, with the evidence that decided it."""

    checkpoint_id: str
    requirement: Requirement
    step: int | None
    reason: str
    rejected: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        return self.step is not None


@dataclass
class MatchResult:
    """All tool matches of an episode and the ordering verdicts computed from them."""

    steps: list[Step]
    matches: dict[str, ToolMatch]
    hits: dict[str, int | None]
    orders: list[OrderVerdict] = field(default_factory=list)

    def v_tool(self, checkpoint_id: str) -> bool | None:
        """Requirement met and every ordering constraint naming the checkpoint holds; None if no requirement."""
        match = self.matches.get(checkpoint_id)
        if match is None:
            return None
        in_order = all(o.passed for o in self.orders if checkpoint_id in o.sequence)
        return match.found and in_order


def match_checkpoints(
    episode: EpisodeView, fixed_hits: dict[str, int | None], trust_tampered: bool = False
) -> MatchResult:
    """Match every visual checkpoint with a tool part; ``fixed_hits`` holds S and R checkpoint positions.

    Events of an execution the runtime flagged as tampered satisfy nothing unless ``trust_tampered``.
    """
    steps = timeline(episode)
    flagged = {} if trust_tampered else {i.index: i for i in episode.tampered_interactions}
    requirements = [r for r in (_requirement(cp) for cp in episode.task.checkpoints) if r is not None]
    hits = dict(fixed_hits)
    matches: dict[str, ToolMatch] = {}
    for req in (r for r in requirements if not r.consumes_step):
        matches[req.checkpoint_id] = _count_match(req, episode, steps)
        hits[req.checkpoint_id] = matches[req.checkpoint_id].step
    consuming = [r for r in requirements if r.consumes_step]
    candidates = [_candidates(r, episode, steps, flagged) for r in consuming]
    chosen = _assign([c for c, _ in candidates], [r.checkpoint_id for r in consuming], hits, episode)
    for req, (cands, rejected), step in zip(consuming, candidates, chosen, strict=True):
        matches[req.checkpoint_id] = _op_match(req, step, cands, rejected, steps, episode.mode)
        hits[req.checkpoint_id] = step
    orders = [check_order(c, hits) for c in episode.task.ordering_constraints]
    return MatchResult(steps, matches, hits, orders)


def _requirement(checkpoint: dict[str, Any]) -> Requirement | None:
    if checkpoint.get("axis") != "V" or "answer_check" in checkpoint:
        return None
    return requirement_of(checkpoint)


def _candidates(
    req: Requirement, episode: EpisodeView, steps: list[Step], flagged: dict[int, Interaction]
) -> tuple[list[int], list[str]]:
    """Eligible step positions (chronological) and why near misses were turned down."""
    eligible: list[int] = []
    rejected: list[str] = []
    for step in steps:
        why = _ineligible(req, episode, step)
        if why is None and step.traced is not None and step.traced.interaction in flagged:
            why = _tamper_reason(flagged[step.traced.interaction])
        if why is None:
            eligible.append(step.position)
        elif why:
            rejected.append(f"{step.label}: {why}")
    return eligible, rejected


def _ineligible(req: Requirement, episode: EpisodeView, step: Step) -> str | None:
    """None when the step satisfies the requirement; "" when it is unrelated; else the reason."""
    if req.kind == "tool":
        return None if step.search is not None and step.search.tool.lower() in req.tools else ""
    if step.traced is None or step.traced.event.op not in req.ops_for_mode(episode.mode):
        return ""
    event = step.traced.event
    if event.status != "ok":
        return f"the call failed ({(event.error or {}).get('type', 'error')})"
    if event.output is None:
        return "it produced no image"
    events = [t.event for t in episode.events]
    root, box, _ = geometry.event_region(events, event)
    if req.input_root is not None and root != req.input_root:
        return f"it acted on {root or 'an unknown image'}, the checkpoint needs {req.input_root}"
    if req.region is not None:
        return _region_problem(req, box)
    return None


def _tamper_reason(interaction: Interaction) -> str:
    notices = [n for n in interaction.notices if "integrity" in n] or list(interaction.notices)
    detail = f": {notices[0]}" if notices else ""
    return (
        f"interaction {interaction.index} was flagged as tampered{detail}; a flagged execution's events are "
        "untrusted (score with --trust-tampered to accept them)"
    )


def _region_problem(req: Requirement, box: geometry.Box) -> str | None:
    assert req.region is not None
    region = req.region
    iou = geometry.iou(box, region.box)
    cov = geometry.coverage(box, region.box)
    if region.min_iou is not None and iou < region.min_iou:
        return f"region {list(box)} has IoU {iou:.2f} with {list(region.box)}, needs {region.min_iou:.2f}"
    if region.min_coverage is not None and cov < region.min_coverage:
        return f"region {list(box)} covers {cov:.0%} of {list(region.box)}, needs {region.min_coverage:.0%}"
    return None


def _assign(
    candidates: list[list[int]], ids: list[str], fixed: dict[str, int | None], episode: EpisodeView
) -> list[int | None]:
    """Best one-to-one assignment: most checkpoints matched, then most ordering constraints, then earliest."""
    constraints = episode.task.ordering_constraints
    n = len(candidates)
    best: dict[str, Any] = {"score": (-1, -1), "choice": [None] * n}
    budget = [SEARCH_BUDGET]
    current: list[int | None] = []

    def score() -> tuple[int, int]:
        hits = {**fixed, **dict(zip(ids, current, strict=True))}
        return sum(c is not None for c in current), count_passed(constraints, hits)

    def bound(i: int, used: frozenset[int]) -> tuple[int, int]:
        known = {**fixed, **dict(zip(ids, current, strict=False))}
        options = {ids[j]: [c for c in candidates[j] if c not in used] for j in range(i, n)}
        ruled_out = sum(cannot_pass(c, known, options) for c in constraints)
        return sum(c is not None for c in current) + n - i, len(constraints) - ruled_out

    def visit(i: int, used: frozenset[int]) -> None:
        budget[0] -= 1
        if budget[0] < 0 or bound(i, used) <= best["score"]:
            return
        if i == n:
            found = score()
            if found > best["score"]:
                best["score"], best["choice"] = found, list(current)
            return
        for option in [*(c for c in candidates[i] if c not in used), None]:
            current.append(option)
            visit(i + 1, used if option is None else used | {option})
            current.pop()

    visit(0, frozenset())
    return list(best["choice"])


def _op_match(
    req: Requirement, step: int | None, eligible: list[int], rejected: list[str], steps: list[Step], mode: str
) -> ToolMatch:
    if step is not None:
        return ToolMatch(req.checkpoint_id, req, step, f"matched {steps[step].label} ({req.source})", tuple(rejected))
    if eligible:
        reason = f"every eligible step ({len(eligible)}) was claimed by an earlier checkpoint"
    elif rejected:
        reason = f"no eligible step for {req.source}; {len(rejected)} near miss(es)"
    else:
        wanted = sorted(req.ops_for_mode(mode) or req.tools)
        reason = f"no step performed any of {wanted} ({req.source})"
    return ToolMatch(req.checkpoint_id, req, None, reason, tuple(rejected))


def _count_match(req: Requirement, episode: EpisodeView, steps: list[Step]) -> ToolMatch:
    """``require_images:N`` and ``require_metrics:KEY``: checked on the produced files, at the step they appeared."""
    if req.kind == "images":
        produced = sorted(episode.artifacts, key=lambda a: a.index)
        if len(produced) < req.count:
            return ToolMatch(req.checkpoint_id, req, None, f"{len(produced)} images produced, {req.count} required")
        nth = produced[req.count - 1]
        return ToolMatch(req.checkpoint_id, req, _position_after(nth.interaction, steps), f"image {nth.index} produced")
    found = _metrics_file(episode, req.key)
    if found is None:
        return ToolMatch(req.checkpoint_id, req, None, f"no metrics.json with key {req.key!r} next to the artifacts")
    return ToolMatch(req.checkpoint_id, req, _position_after(10**9, steps), f"found {found}")


def _position_after(interaction: int, steps: list[Step]) -> int:
    """Timeline position of the last step in or before ``interaction`` (0 when none)."""
    return max((s.position for s in steps if s.interaction <= interaction), default=0)


def _metrics_file(episode: EpisodeView, key: str | None) -> Path | None:
    for folder in dict.fromkeys(a.path.parent for a in episode.artifacts):
        path = folder / "metrics.json"
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                continue
            if key is None or (isinstance(data, dict) and key in data):
                return path
    return None
