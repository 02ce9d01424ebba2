"""Our reading of the official Agentic-MME evaluator gives the official verdicts, case by case.

The expected outcomes in ``official_eval_cases.json`` were derived by running the official
``eval_process`` and ``check_final_answer_only`` on each generated run folder with the stand-in
judges below (``scripts/official_eval_cases.py``); nothing here imports the official code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pixelbox.harness.export.official_eval import OfficialEvaluatorError, evaluate_run, transformed_pngs
from pixelbox.harness.export.official_vtool import official_tool_verdicts

CASES: list[dict[str, Any]] = json.loads((Path(__file__).parent / "official_eval_cases.json").read_text())["cases"]


def visual_judge(question: str, image: Path) -> str:
    return "Yes, clearly" if "good" in image.name else "No"


def search_judge(description: str, queries: Sequence[str], contexts: Sequence[str]) -> bool:
    return any("PASSME" in q for q in queries)


def materialize(case: dict[str, Any], run_dir: Path) -> list[dict[str, Any]]:
    images = run_dir / "tool_images"
    images.mkdir(parents=True)
    for spec in case["files"]:
        path = images / spec["name"]
        if "content" in spec:
            path.write_text(spec["content"], encoding="utf-8")
        elif spec["valid"] and path.suffix.lower() in (".png", ".jpg", ".jpeg"):
            Image.new("RGB", (4, 4), "white").save(path, format="PNG")
        else:
            path.write_bytes(b"not an image")
    if case["orig"]:
        Image.new("RGB", (4, 4), "white").save(run_dir / "orig.png", format="PNG")
    entries: list[dict[str, Any]] = json.loads(json.dumps(case["entries"]).replace("{RUN}", str(run_dir)))
    return entries


def test_the_corpus_is_large_and_varied() -> None:
    assert len(CASES) >= 200
    rows = [r for c in CASES for r in c["official"].get("checkpoints", {}).values()]
    assert sum(1 for r in rows if r.get("tool_passed") is True) >= 100
    assert sum(1 for r in rows if r.get("tool_passed") is False) >= 50
    assert sum(1 for c in CASES if c["official"]["scores"]["penalty"] > 0) >= 20


@pytest.mark.parametrize("case", CASES, ids=[f"case{i:03d}" for i in range(len(CASES))])
def test_matches_the_official_evaluator(case: dict[str, Any], tmp_path: Path) -> None:
    run_dir = tmp_path / "0001"
    entries = materialize(case, run_dir)
    expected = case["official"]
    if "error" in expected:
        with pytest.raises((OfficialEvaluatorError, ValueError, TypeError, KeyError)):
            evaluate_run(case["task"], run_dir, case["run_meta"], case["answer"], entries, visual_judge, search_judge)
        return
    run = evaluate_run(case["task"], run_dir, case["run_meta"], case["answer"], entries, visual_judge, search_judge)
    got = {
        cid: {"passed": r.get("passed"), "hit_index": r.get("hit_index"), "placeholder": len(r) == 1}
        for cid, r in run.checkpoint_results.items()
    }
    want = {
        cid: {"passed": r["passed"], "hit_index": r["hit_index"], "placeholder": r["keys"] == 1}
        for cid, r in expected["checkpoints"].items()
    }
    assert got == want
    tools = {cid: r["tool_passed"] for cid, r in expected["checkpoints"].items() if "tool_passed" in r}
    assert {cid: run.tool_checks[cid].passed for cid in tools} == tools
    assert run.scores == expected["scores"]
    assert run.efficiency == expected["efficiency"]
    assert run.final_answer == expected["final_answer"]


def test_require_images_counts_only_the_official_name_pattern(tmp_path: Path) -> None:
    names = ["transformed_image_1.png", "Transformed_Image_2.PNG", "transformed_image_.png", "transformed_image_3.jpg"]
    names += ["transformed_image_4_crop.png", "transformed_image_05.png"]
    (tmp_path / "tool_images").mkdir()
    for name in names:
        (tmp_path / "tool_images" / name).write_bytes(b"x")
    found = [p.name for p in transformed_pngs(tmp_path / "tool_images")]
    assert found == ["transformed_image_1.png", "Transformed_Image_2.PNG", "transformed_image_05.png"]
    task = {
        "process_evaluation": {
            "checkpoints": [{"id": "V1", "axis": "V", "code_check": {"verifier": "require_images:4"}}]
        }
    }
    [verdict] = official_tool_verdicts(task, [], tmp_path / "tool_images")
    assert not verdict.passed, "a glob would have counted 5 transformed_image_* files"


def test_lens_search_consumes_the_entry_a_later_tools_fallback_wanted(tmp_path: Path) -> None:
    entries = [{"index": 0, "tool_name": "google_lens_search", "arguments": {}, "output": {}}]
    checkpoints = [
        {"id": "S1", "axis": "S", "tools": ["google_lens_search"]},
        {"id": "V1", "axis": "V", "tools": ["google_lens_search"], "code_check": {"verifier": "verify_zoom_ast"}},
    ]
    task = {"process_evaluation": {"checkpoints": checkpoints}}
    [verdict] = official_tool_verdicts(task, entries, tmp_path / "tool_images")
    assert not verdict.passed and verdict.how == "no matching entry"
