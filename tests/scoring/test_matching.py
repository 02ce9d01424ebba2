"""V_tool matching: one-to-one, chronological, ordering, region and input constraints, official verifiers."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pixelbox.harness.scoring.matching import match_checkpoints
from pixelbox.harness.scoring.ordering import cannot_pass
from pixelbox.harness.scoring.requirements import CheckpointError, requirement_of
from pixelbox.harness.scoring.timeline import timeline
from pixelbox.harness.scoring.view import EpisodeView, TracedEvent
from tests.scoring.builders import CROP_PARAMS, EVIDENCE, atomic_episode, code_episode, event, task

SIGN = [60.0, 700.0, 460.0, 950.0]


def crop_params(box: list[float]) -> dict[str, Any]:
    px = [round(box[0]), round(box[1] * 0.8), round(box[2]), round(box[3] * 0.8)]
    return {"box_px": px, "bbox_2d": box, "bbox_2d_root": box, "root": "input:0"}


def with_checkpoints(episode: EpisodeView, checkpoints: list[dict], orders: list[dict] | None = None) -> EpisodeView:
    return replace(episode, task=task(checkpoints=checkpoints, ordering_constraints=orders or []))


def crops_episode(tmp: Path, boxes: list[list[float]]) -> EpisodeView:
    """Code mode, one block cropping each box in turn from the root."""
    events = tuple(
        TracedEvent(0, event(n, 0, "crop", ["input:0"], f"img:{n + 1}", crop_params(box)))
        for n, box in enumerate(boxes)
    )
    return replace(code_episode(tmp), events=events, artifacts=())


def crop_cp(cid: str, **constraints: Any) -> dict[str, Any]:
    cp: dict[str, Any] = {"id": cid, "axis": "V", "code_check": {"verifier": "verify_crop_ast"}}
    if constraints:
        cp["constraints"] = constraints
    return cp


@pytest.mark.parametrize("build", [code_episode, atomic_episode])
def test_both_modes_match_the_same_checkpoints(tmp_path: Path, build: Any) -> None:
    episode = build(tmp_path)
    result = match_checkpoints(episode, {})
    steps = timeline(episode)
    assert steps[result.hits["V1"]].traced.event.op == "crop"  # type: ignore[union-attr]
    enhancement = {"gen": "autocontrast", "atm": "enhance"}[episode.mode]
    assert steps[result.hits["V2"]].traced.event.op == enhancement  # type: ignore[union-attr]
    assert result.v_tool("V1") and result.v_tool("V2")
    assert [o.passed for o in result.orders] == [True]


def test_code_mode_timeline_interleaves_searches_between_blocks(tmp_path: Path) -> None:
    kinds = [(s.kind, s.traced.event.op if s.traced else s.search.tool) for s in timeline(code_episode(tmp_path))]  # type: ignore[union-attr]
    assert kinds == [("event", "crop"), ("search", "google_search"), ("event", "autocontrast")]


def test_one_event_satisfies_one_checkpoint(tmp_path: Path) -> None:
    episode = with_checkpoints(crops_episode(tmp_path, [EVIDENCE]), [crop_cp("A"), crop_cp("B")])
    result = match_checkpoints(episode, {})
    assert [result.v_tool("A"), result.v_tool("B")] == [True, False]
    assert "claimed by an earlier checkpoint" in result.matches["B"].reason
    two = with_checkpoints(crops_episode(tmp_path, [EVIDENCE, SIGN]), [crop_cp("A"), crop_cp("B")])
    assert [match_checkpoints(two, {}).v_tool(c) for c in "AB"] == [True, True]


def test_assignment_leaves_the_constrained_event_to_the_checkpoint_that_needs_it(tmp_path: Path) -> None:
    region = {"bbox_2d": EVIDENCE, "min_iou": 0.8}
    episode = with_checkpoints(
        crops_episode(tmp_path, [EVIDENCE, SIGN]), [crop_cp("ANY"), crop_cp("RED", region=region)]
    )
    result = match_checkpoints(episode, {})
    assert result.v_tool("ANY") and result.v_tool("RED")
    assert result.hits == {"ANY": 1, "RED": 0}


def test_region_iou_and_coverage(tmp_path: Path) -> None:
    wide = [500.0, 50.0, 1000.0, 450.0]
    cps = [
        crop_cp("IOU", region={"bbox_2d": EVIDENCE, "min_iou": 0.5}),
        crop_cp("COV", region={"bbox_2d": EVIDENCE, "min_coverage": 0.95}),
    ]
    result = match_checkpoints(with_checkpoints(crops_episode(tmp_path, [wide]), cps), {})
    assert result.v_tool("IOU") is False and result.v_tool("COV") is True
    assert "IoU 0.38" in result.matches["IOU"].rejected[0]
    elsewhere = match_checkpoints(with_checkpoints(crops_episode(tmp_path, [SIGN]), cps[1:]), {})
    assert elsewhere.v_tool("COV") is False
    assert "covers 0%" in elsewhere.matches["COV"].rejected[0]


def test_region_of_a_non_crop_op_is_the_region_its_input_shows(tmp_path: Path) -> None:
    cp = {"id": "E", "axis": "V", "tools": ["enhance"], "constraints": {"region": {"bbox_2d": SIGN, "min_iou": 0.5}}}
    result = match_checkpoints(with_checkpoints(code_episode(tmp_path), [cp]), {})
    assert result.v_tool("E") is False
    assert "IoU 0.00" in result.matches["E"].rejected[0]


def test_input_image_constraint(tmp_path: Path) -> None:
    episode = crops_episode(tmp_path, [EVIDENCE])
    assert match_checkpoints(with_checkpoints(episode, [crop_cp("A", input_image=0)]), {}).v_tool("A")
    other = match_checkpoints(with_checkpoints(episode, [crop_cp("A", input_image=1)]), {})
    assert other.v_tool("A") is False
    assert "needs input:1" in other.matches["A"].rejected[0]


def test_failed_calls_and_ops_without_output_never_match(tmp_path: Path) -> None:
    error = {"type": "ValueError", "message": "tile cannot extend outside image"}
    events = (
        TracedEvent(0, event(0, 0, "crop", ["input:0"], None, CROP_PARAMS, status="error", error=error)),
        TracedEvent(0, event(1, 0, "rotate", ["input:0"], None, {"angle": 90.0})),
    )
    cps = [crop_cp("C"), {"id": "R", "axis": "V", "code_check": {"verifier": "require_op:rotate"}}]
    episode = with_checkpoints(replace(code_episode(tmp_path), events=events), cps)
    result = match_checkpoints(episode, {})
    assert result.v_tool("C") is False and result.v_tool("R") is False
    assert "ValueError" in result.matches["C"].rejected[0]
    assert "no image" in result.matches["R"].rejected[0]


def test_ordering_sequence_and_max_gap(tmp_path: Path) -> None:
    checkpoints = task().checkpoints
    reversed_order = [{"id": "O", "sequence": ["V2", "V1"], "max_gap": 5}]
    result = match_checkpoints(with_checkpoints(code_episode(tmp_path), checkpoints, reversed_order), {})
    assert result.orders[0].passed is False and "came before" in result.orders[0].reason
    assert result.v_tool("V1") is False and result.v_tool("V2") is False
    tight = [{"id": "O", "sequence": ["V1", "V2"], "max_gap": 0}]
    result = match_checkpoints(with_checkpoints(code_episode(tmp_path), checkpoints, tight), {})
    assert result.orders[0].passed is False and "1 steps between" in result.orders[0].reason
    # In atomic mode the search came first, so crop and enhance are adjacent.
    assert match_checkpoints(with_checkpoints(atomic_episode(tmp_path), checkpoints, tight), {}).orders[0].passed


def test_ordering_with_fixed_search_hits_chooses_the_crop_after_the_search(tmp_path: Path) -> None:
    events = (
        TracedEvent(0, event(0, 0, "crop", ["input:0"], "img:1", crop_params(EVIDENCE))),
        TracedEvent(2, event(1, 1, "crop", ["input:0"], "img:2", crop_params(EVIDENCE))),
    )
    orders = [{"id": "O", "sequence": ["S1", "V1"], "max_gap": 0}]
    episode = with_checkpoints(replace(code_episode(tmp_path), events=events), [crop_cp("V1")], orders)
    result = match_checkpoints(episode, {"S1": 1})
    assert result.hits["V1"] == 2
    assert result.orders[0].passed


def test_official_verifiers_and_tool_lists(tmp_path: Path) -> None:
    episode = code_episode(tmp_path)
    (tmp_path / "metrics.json").write_text(json.dumps({"mean_brightness": 0.4}))
    cps: list[dict[str, Any]] = [
        {"id": "a", "axis": "V", "code_check": {"verifier": "verify_crop_ast"}},
        {"id": "b", "axis": "V", "code_check": {"verifier": "require_images:2"}},
        {"id": "c", "axis": "V", "code_check": {"verifier": "require_images:3"}},
        {"id": "d", "axis": "V", "code_check": {"verifier": "require_metrics:mean_brightness"}},
        {"id": "e", "axis": "V", "code_check": {"verifier": "require_metrics:edge_count"}},
        {"id": "f", "axis": "V", "tools": ["contrast"]},
        {"id": "g", "axis": "V", "tools": ["rotate", "flip"]},
    ]
    result = match_checkpoints(with_checkpoints(episode, cps), {})
    assert {c: result.v_tool(c) for c in "abcdefg"} == {
        "a": True,
        "b": True,
        "c": False,
        "d": True,
        "e": False,
        "f": True,
        "g": False,
    }


def test_convert_is_not_an_enhancement(tmp_path: Path) -> None:
    episode = code_episode(tmp_path)
    only_convert = tuple(t for t in episode.events if t.event.op != "autocontrast")
    cp = {"id": "E", "axis": "V", "code_check": {"verifier": "verify_enhance_ast"}}
    result = match_checkpoints(with_checkpoints(replace(episode, events=only_convert), [cp]), {})
    assert result.v_tool("E") is False


def test_synonyms_and_bad_checkpoints() -> None:
    assert requirement_of({"id": "z", "axis": "V", "code_check": {"verifier": "verify_zoom_ast"}}).ops == {"crop"}  # type: ignore[union-attr]
    assert requirement_of({"id": "m", "axis": "V", "tools": ["mirror"]}).ops == {"flip"}  # type: ignore[union-attr]
    assert requirement_of({"id": "q", "axis": "V", "visual_check": {"question": "?"}}) is None
    with pytest.raises(CheckpointError, match="unknown verifier"):
        requirement_of({"id": "x", "axis": "V", "code_check": {"verifier": "verify_magic"}})
    with pytest.raises(CheckpointError, match="bbox_2d"):
        requirement_of(
            {"id": "r", "axis": "V", "tools": ["crop"], "constraints": {"region": {"bbox_2d": [5, 5, 1, 1]}}}
        )


def test_assignment_satisfies_ordering_when_some_assignment_can(tmp_path: Path) -> None:
    boxes = [[float(10 * n), 0.0, float(10 * n + 100), 100.0] for n in range(40)]
    orders = [{"id": "O", "sequence": ["C", "A"], "max_gap": 0}]
    episode = with_checkpoints(crops_episode(tmp_path, boxes), [crop_cp("A"), crop_cp("B"), crop_cp("C")], orders)
    result = match_checkpoints(episode, {})
    assert result.hits == {"A": 1, "B": 2, "C": 0}
    assert result.orders[0].passed


def test_cannot_pass_detects_ruled_out_constraints() -> None:
    constraint = {"sequence": ["X", "Y", "Z"], "max_gap": 1}
    assert not cannot_pass(constraint, {"X": 2}, {"Y": [3, 9], "Z": [4]})
    assert cannot_pass(constraint, {"X": 5}, {"Y": [3], "Z": [6]})
    assert cannot_pass(constraint, {"X": 1, "Y": 4}, {"Z": [5]})
    assert cannot_pass(constraint, {"X": None}, {"Y": [1], "Z": [2]})


def autocontrast_instead_of_enhance(episode: EpisodeView) -> EpisodeView:
    """``episode`` with its enhancement step replaced by an autocontrast of the same image."""
    events = tuple(
        TracedEvent(t.interaction, replace(t.event, op="autocontrast", params={"cutoff": 0}))
        if t.event.op in ("enhance", "autocontrast")
        else t
        for t in episode.events
    )
    return replace(episode, events=events)


@pytest.mark.parametrize("verifier", ["verify_enhance_ast", "require_op:enhance"])
def test_atomic_autocontrast_does_not_satisfy_enhance_as_officially(tmp_path: Path, verifier: str) -> None:
    cp = {"id": "E", "axis": "V", "tools": ["enhance"], "code_check": {"verifier": verifier}}
    atomic = with_checkpoints(autocontrast_instead_of_enhance(atomic_episode(tmp_path)), [cp])
    result = match_checkpoints(atomic, {})
    assert result.v_tool("E") is False and "['enhance']" in result.matches["E"].reason
    # The official AST reader names ImageOps.autocontrast in code "enhance", and so do we.
    code = with_checkpoints(code_episode(tmp_path), [cp])
    assert match_checkpoints(code, {}).v_tool("E") is True
    # The atomic enhance tool itself passes.
    assert match_checkpoints(with_checkpoints(atomic_episode(tmp_path), [cp]), {}).v_tool("E") is True


def test_atomic_mode_accepts_a_tool_named_in_tools_but_no_synonyms(tmp_path: Path) -> None:
    autocontrast = autocontrast_instead_of_enhance(atomic_episode(tmp_path))
    named = {"id": "E", "axis": "V", "tools": ["autocontrast"], "code_check": {"verifier": "verify_enhance_ast"}}
    assert match_checkpoints(with_checkpoints(autocontrast, [named]), {}).v_tool("E") is True
    contrast = {"id": "E", "axis": "V", "tools": ["contrast"]}
    assert match_checkpoints(with_checkpoints(autocontrast, [contrast]), {}).v_tool("E") is False
