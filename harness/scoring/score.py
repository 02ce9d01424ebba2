"""Score one episode: Acc, S, V (V_tool and V_true), calls, Overthink and the failure label."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pixelbox.harness.suites import DEFAULT_SUITE
from pixelbox.tracer.replay import CONSISTENT_AT

from .answers import check_answer, check_golden
from .judges.base import Judge
from .judges.cache import JudgeCache
from .judges.chat import ChatEndpoint
from .matching import MatchResult, match_checkpoints
from .overthink import overthink
from .results import CheckpointResult, EpisodeScore, fraction
from .search import SearchVerdict, judge_searches
from .taxonomy import classify
from .timeline import timeline
from .view import EpisodeView
from .vtrue import Replayer, TrueVerdict, judge_checkpoint


@dataclass(frozen=True)
class ScoringOptions:
    """How much of the trace scoring trusts (the defaults are the strict reading).

    ``trust_tampered``: let events of executions the runtime flagged satisfy V_tool checkpoints.
    ``replay``: verify each artifact V_true judges by replaying its chain; ``replay_threshold`` is
    the similarity below which an artifact is not counted as evidence.
    """

    trust_tampered: bool = False
    replay: bool = True
    replay_threshold: float = CONSISTENT_AT


def score_episode(
    episode: EpisodeView,
    judges: list[Judge],
    search_endpoint: ChatEndpoint | None = None,
    cache: JudgeCache | None = None,
    options: ScoringOptions | None = None,
) -> EpisodeScore:
    """Every metric of one episode (judges are called here; results are cached by the judges)."""
    options = options or ScoringOptions()
    acc = check_golden(episode.answer, episode.task.golden_answer)
    searches = {v.checkpoint_id: v for v in judge_searches(episode, search_endpoint, cache)}
    steps = timeline(episode)
    end = len(steps)
    fixed: dict[str, int | None] = {cid: _search_position(v, steps) for cid, v in searches.items()}
    answers = {}
    for cp in episode.task.checkpoints:
        if "answer_check" in cp:
            answers[str(cp["id"])] = check_answer(episode.answer, cp["answer_check"])
            fixed[str(cp["id"])] = end if answers[str(cp["id"])].correct else None
    match = match_checkpoints(episode, fixed, trust_tampered=options.trust_tampered)
    replayer = Replayer(episode, options.replay_threshold) if options.replay else None
    results = [_result(cp, episode, match, searches, answers, judges, replayer) for cp in episode.task.checkpoints]
    visual = [r for r in results if r.axis == "V"]
    ratio = overthink(episode)
    return EpisodeScore(
        episode_id=episode.episode_id,
        task_id=episode.task.task_id,
        level=episode.task.level,
        mode=episode.mode,
        model=episode.model,
        acc=acc.correct,
        acc_reason=f"{acc.match_type}: {acc.reason} (answer {acc.got!r}, expected {acc.expected!r})",
        s=fraction([r.passed for r in results if r.axis == "S"]),
        v=fraction([r.passed for r in visual]),
        v_tool=fraction([r.tool for r in visual]),
        v_true=fraction([r.true for r in visual]),
        calls=len(episode.interactions),
        overthink=ratio,
        checkpoints=tuple(results),
        orders=tuple(asdict(o) for o in match.orders),
        failure=classify(episode, acc.correct, results, ratio),
        termination=episode.termination,
        infrastructure=episode.infrastructure,
        tamper=tuple(
            {"interaction": i.index, "notices": list(i.notices), "trusted": options.trust_tampered}
            for i in episode.tampered_interactions
        ),
        category=episode.task.category,
        suite=str(episode.facts.get("suite") or DEFAULT_SUITE),
    )


def _search_position(verdict: SearchVerdict, steps: list[Any]) -> int | None:
    if not verdict.passed or verdict.call is None:
        return None
    return next((s.position for s in steps if s.search is verdict.call), None)


def _result(
    cp: dict[str, Any],
    episode: EpisodeView,
    match: MatchResult,
    searches: dict[str, SearchVerdict],
    answers: dict[str, Any],
    judges: list[Judge],
    replayer: Replayer | None,
) -> CheckpointResult:
    cid, axis, description = str(cp.get("id", "")), str(cp.get("axis", "")), str(cp.get("description", ""))
    if cid in answers:
        verdict = answers[cid]
        return CheckpointResult(
            cid,
            "R",
            description,
            verdict.correct,
            verdict.correct,
            None,
            match.hits.get(cid),
            {"reason": verdict.reason},
        )
    if axis == "S":
        s = searches[cid]
        evidence = {
            "method": s.method,
            "reason": s.reason,
            "judge_answer": s.answer,
            "query": s.call.query if s.call else None,
        }
        return CheckpointResult(cid, axis, description, s.passed, s.passed, None, match.hits.get(cid), evidence)
    if axis == "V":
        return _visual_result(cp, episode, match, judges, replayer)
    return CheckpointResult(cid, axis, description, None, evidence={"reason": f"unknown axis {axis!r}"})


def _visual_result(
    cp: dict[str, Any], episode: EpisodeView, match: MatchResult, judges: list[Judge], replayer: Replayer | None
) -> CheckpointResult:
    cid = str(cp.get("id", ""))
    tool_match = match.matches.get(cid)
    step = tool_match.step if tool_match else None
    seq = match.steps[step].traced.event.seq if step is not None and match.steps[step].traced else None  # type: ignore[union-attr]
    true = judge_checkpoint(cp, episode, seq, judges, replayer)
    tool = match.v_tool(cid)
    decided = [v for v in (tool, true.passed if true else None) if v is not None]
    evidence = {"matched_seq": seq, **_visual_evidence(tool_match, match, cid, true)}
    return CheckpointResult(
        cid,
        "V",
        str(cp.get("description", "")),
        all(decided) if decided else None,
        tool,
        true.passed if true else None,
        step,
        evidence,
    )


def _visual_evidence(tool_match: Any, match: MatchResult, cid: str, true: TrueVerdict | None) -> dict[str, Any]:
    evidence: dict[str, Any] = {}
    if tool_match is not None:
        evidence.update(
            reason=tool_match.reason,
            rejected=list(tool_match.rejected[:8]),
            ops=sorted(tool_match.requirement.ops),
            source=tool_match.requirement.source,
        )
        broken = [o.reason for o in match.orders if cid in o.sequence and not o.passed]
        if broken:
            evidence["order"] = broken
    if true is not None:
        evidence.update(
            true_reason=true.reason, judged_artifacts=list(true.artifacts), judges=[asdict(v) for v in true.verdicts]
        )
        if true.replays:
            evidence["replay"] = [dict(r) for r in true.replays]
    return evidence
