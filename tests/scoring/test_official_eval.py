"""Our reading of the official Agentic-MME evaluator gives the official verdicts, case by case.

The expected outcomes in ``official_eval_cases.json`` were derived by running the official
``eval_process`` and ``check_final_answer_only`` on each generated run folder with the stand-in
judges below (``scripts/official_eval_cases.py``); nothing here imports the official code.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pixelbox.harness.export.official_eval import OfficialEvaluatorError, evaluate_run, transformed_pngs
from pixelbox.harness.export.official_vtool import official_tool_verdicts

ROOT = Path(__file__).resolve().parents[2]
CASES: list[dict[str, Any]] = json.loads((Path(__file__).parent / "official_eval_cases.json").read_text())["cases"]


def _generator() -> Any:
    """The corpus script (its stand-in judge and file materializer; it imports no official code itself)."""
    spec = importlib.util.spec_from_file_location("official_eval_cases", ROOT / "scripts" / "official_eval_cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()
visual_judge = GENERATOR.visual_judge
materialize = GENERATOR.materialize


def search_judge(description: str, queries: Sequence[str], contexts: Sequence[str]) -> bool:
    return any("PASSME" in q for q in queries)


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
