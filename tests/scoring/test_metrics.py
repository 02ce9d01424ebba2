"""Episode metrics: V_true scoping, Overthink, failure taxonomy, and whole-episode scores in both modes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pixelbox.harness.scoring.judges import ChatEndpoint, GeometricJudge, OcrJudge, VlmJudge
from pixelbox.harness.scoring.overthink import overthink, productive_interactions
from pixelbox.harness.scoring.score import score_episode
from pixelbox.harness.scoring.view import Interaction, TracedEvent
from pixelbox.harness.scoring.vtrue import candidate_artifacts, judge_checkpoint
from tests.harness.servers import ChatCompletionsServer as ChatServer
from tests.scoring.builders import (
    CROP_PARAMS,
    EVIDENCE,
    SIGN_PX,
    atomic_episode,
    code_episode,
    event,
    save_artifact,
    task,
)

SIGN_BOX = [60.0, 700.0, 460.0, 950.0]
SIGN_PARAMS = {"box_px": list(SIGN_PX), "bbox_2d": SIGN_BOX, "bbox_2d_root": SIGN_BOX, "root": "input:0"}


def two_crops_episode(tmp: Path):
    """Block 0 crops the sign and saves it; block 1 crops the red square and saves it."""
    base = code_episode(tmp)
    root = base.root_images[0]
    sign = save_artifact(root, SIGN_PX, tmp / "t1.png", 1, 0, tuple(SIGN_BOX), 1)
    red = save_artifact(root, (600, 100, 900, 300), tmp / "t2.png", 2, 1, tuple(EVIDENCE), 3)
    events = (
        TracedEvent(0, event(0, 0, "crop", ["input:0"], "img:1", SIGN_PARAMS)),
        TracedEvent(0, event(1, 0, "io", ["img:1"], None, {"action": "save"}, artifact={"index": 1})),
        TracedEvent(1, event(2, 1, "crop", ["input:0"], "img:2", CROP_PARAMS)),
        TracedEvent(1, event(3, 1, "io", ["img:2"], None, {"action": "save"}, artifact={"index": 2})),
    )
    interactions = (
        Interaction(0, "code", "python", {"code": "sign crop"}, "ok", (1,)),
        Interaction(1, "code", "python", {"code": "red crop"}, "ok", (2,)),
    )
    return replace(base, events=events, artifacts=(sign, red), interactions=interactions, searches=())


def test_only_artifacts_derived_from_the_matched_event_are_judged(tmp_path: Path) -> None:
    episode = two_crops_episode(tmp_path)
    assert [a.index for a in candidate_artifacts(episode, 0)] == [1]
    assert [a.index for a in candidate_artifacts(episode, 2)] == [2]
    # Code mode autocontrasted the crop later: both the crop and the enhanced crop derive from the crop event.
    (tmp_path / "c").mkdir()
    assert [a.index for a in candidate_artifacts(code_episode(tmp_path / "c"), 1)] == [1, 2]


def test_the_untouched_original_is_never_judged(tmp_path: Path) -> None:
    episode = code_episode(tmp_path)
    root = episode.root_images[0]
    copy = save_artifact(root, (0, 0, 1000, 800), tmp_path / "copy.png", 3, 0, (0.0, 0.0, 1000.0, 1000.0), 1)
    events = (
        TracedEvent(0, event(0, 0, "io", [], "input:0", {"action": "open"})),
        TracedEvent(0, event(1, 0, "io", ["input:0"], None, {"action": "save"}, artifact={"index": 3})),
    )
    plain = replace(episode, events=events, artifacts=(copy,))
    check_only = {
        "id": "Q",
        "axis": "V",
        "visual_check": {
            "question": "What color is the square?",
            "expected_answer": "red",
            "evidence": {"bbox_2d": EVIDENCE},
        },
    }
    verdict = judge_checkpoint(check_only, plain, None, [GeometricJudge()])
    assert verdict is not None and verdict.passed is False and verdict.artifacts == ()
    with_op = {**check_only, "tools": ["crop"]}
    verdict = judge_checkpoint(with_op, plain, None, [GeometricJudge()])
    assert verdict is not None and verdict.passed is False and "no matched operation" in verdict.reason


def test_v_true_with_a_vlm_judges_the_matched_crop_only(
    tmp_path: Path, server: ChatServer, endpoint: ChatEndpoint
) -> None:
    episode = two_crops_episode(tmp_path)
    checkpoints = [
        {
            "id": "V1",
            "axis": "V",
            "tools": ["crop"],
            "visual_check": {"question": "What color is the square?", "expected_answer": "red"},
        }
    ]
    episode = replace(episode, task=task(checkpoints=checkpoints, ordering_constraints=[]), answer="no idea")
    score = score_episode(episode, [VlmJudge(endpoint)])
    result = score.checkpoints[0]
    # Matching is chronological, so V1 takes the first crop (the sign): V_tool passes, V_true fails,
    # and the red crop made later by another event is not judged in its place.
    assert (result.tool, result.true) == (True, False)
    assert result.evidence["judged_artifacts"] == [1]
    assert len(server.bodies()) == 1
    assert score.failure is not None and score.failure.label == "unfaithful_visual_tool_use"


@pytest.mark.parametrize("build", [code_episode, atomic_episode])
def test_whole_episode_scores_in_both_modes(tmp_path: Path, build, server: ChatServer, endpoint: ChatEndpoint) -> None:
    score = score_episode(build(tmp_path), [VlmJudge(endpoint), OcrJudge(), GeometricJudge()])
    assert (score.acc, score.s, score.v, score.v_tool, score.v_true) == (True, 1.0, 1.0, 1.0, 1.0)
    assert score.calls == 3 and score.overthink == 0.0 and score.failure is None
    assert [c.passed for c in score.checkpoints] == [True, True, True, True]


def test_overthink_counts_interactions_that_produced_artifacts(tmp_path: Path) -> None:
    episode = code_episode(tmp_path)
    assert productive_interactions(episode) == 2
    assert overthink(episode) == 0.0
    extra = tuple(Interaction(3 + n, "code", "python", {"code": "again"}, "ok", (3 + n,)) for n in range(4))
    busy = replace(episode, interactions=episode.interactions + extra)
    assert productive_interactions(busy) == 6
    assert overthink(busy) == pytest.approx((6 - 2) / 3)
    no_reference = replace(episode, task=task(efficiency={}))
    assert overthink(no_reference) is None


def label_of(episode) -> str | None:
    score = score_episode(episode, [GeometricJudge()])
    return None if score.failure is None else score.failure.label


def test_failure_taxonomy(tmp_path: Path) -> None:
    wrong = code_episode(tmp_path, answer="about 200 metres")
    assert label_of(code_episode(tmp_path)) is None
    assert label_of(wrong) == "post_visual_perception_deficit"
    assert label_of(replace(wrong, searches=(), interactions=wrong.interactions[:1])) == "missing_search"
    no_ops = replace(wrong, events=wrong.events[:1] + wrong.events[3:4], artifacts=())
    assert label_of(no_ops) == "missing_visual_tool_use"
    error = {"type": "NameError", "message": "name 'img' is not defined"}
    failed = (TracedEvent(0, event(1, 0, "crop", ["input:0"], None, CROP_PARAMS, status="error", error=error)),)
    assert label_of(replace(wrong, events=failed, artifacts=())) == "tool_misexecution"
    sign_crop = tuple(
        TracedEvent(t.interaction, event(1, 0, "crop", ["input:0"], "img:1", SIGN_PARAMS))
        if t.event.op == "crop"
        else t
        for t in wrong.events
    )
    cps = [c for c in task().checkpoints if c["id"] != "V2"]
    unfaithful = replace(wrong, events=sign_crop, task=task(checkpoints=cps, ordering_constraints=[]))
    assert label_of(unfaithful) == "unfaithful_visual_tool_use"
    looping = replace(
        wrong,
        termination="budget",
        interactions=wrong.interactions
        + tuple(Interaction(3 + n, "code", "python", {}, "ok", (9 + n,)) for n in range(6)),
    )
    score = score_episode(looping, [GeometricJudge()])
    assert score.failure is not None and score.failure.label == "overthinking_collapse"
    assert "Overthink 2.00" in score.failure.evidence


def test_bad_search_query_is_decided_by_the_search_judge(tmp_path: Path, endpoint: ChatEndpoint) -> None:
    wrong = code_episode(tmp_path, answer="about 200 metres")
    off_topic = replace(wrong.searches[0], payload="Pixel (smartphone) - reviews and prices")
    episode = replace(wrong, searches=(off_topic,))
    assert score_episode(episode, [GeometricJudge()]).checkpoints[0].passed is None
    score = score_episode(episode, [GeometricJudge()], search_endpoint=endpoint)
    assert score.s == 0.0
    assert score.failure is not None and score.failure.label == "bad_search_query"
    assert "Pixel Tower height" in score.failure.evidence
