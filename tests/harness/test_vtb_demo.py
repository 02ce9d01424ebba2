"""The VisualToolBench demo offline (recorded turns and verdicts, real sandboxes), and the same demo model
compared across suites with the Agentic-MME demo in one ``pixelbox compare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pixelbox.cli import main
from tests.harness.conftest import DemoOutput


@pytest.mark.timeout(1200)  # the session's Agentic-MME demo may be built first, on a loaded machine
def test_demo_then_the_same_model_across_suites(demo_output: DemoOutput, tmp_path: Path) -> None:
    out = tmp_path / "vtb"
    assert main(["demo", "--suite", "visualtoolbench", "--out", str(out), "--backend", "local", "--quiet"]) == 0
    scores = json.loads((out / "run" / "scores.json").read_text())
    official = scores["official"]
    # tag and price pass every rubric; the labels task misses one weight-2 rubric of three (5 + 5 + 2)
    assert official["overall_accuracy"] == 1.0 and official["overall_score"] == round((1 + 1 + 10 / 12) / 3, 4)
    assert official["turncase_results"]["multi-turn"]["score"] == round(10 / 12, 4)
    assert (out / "run" / "report" / "index.html").is_file() and (out / "tasks" / "dataset.json").is_file()

    compared = tmp_path / "cmp"
    assert main(["compare", str(demo_output.out / "runs"), str(out / "run"), "--out", str(compared)]) == 0
    across = json.loads((compared / "compare.json").read_text())["across_suites"]
    assert across["suites"] == ["agentic-mme", "visualtoolbench"]
    row = across["models"]["replay-demo · atm"]
    assert row["visualtoolbench"]["metric"] == "APR" and row["visualtoolbench"]["value"] == 1.0
    assert row["agentic-mme"]["metric"] == "Acc"
