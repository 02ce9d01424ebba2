"""DeepEyes/Thyme runs scored with the official semantics, as the official evaluator scores their export.

The runs (``tests/harness/variant_runs.py``) put two ``<code>`` blocks in a turn, fence code inside the
tags, save twice in a turn under other names and leave a turn without code. The expected verdicts and
figures were derived by running the official ``evaluation/eval_runs_search.py`` and
``evaluation/analyze_v.py`` unmodified on these runs' export with the loopback judge
(``scripts/official_judge_server.py``); both gave, per task and checkpoint, exactly what
``pixelbox score --semantics official`` gives (compared field by field). The official runner variants
count web calls plus executed blocks as effective calls, so demo-crop-sign has 2 against a reference of
1 (penalty 0.1) where the general runner's count (searches plus listed operations) would say 3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pixelbox.cli import main
from tests.harness.test_official_semantics import judge_url  # noqa: F401  (the module fixture)
from tests.harness.variant_runs import variant_run

pytestmark = pytest.mark.skipif(
    __import__("shutil").which("tesseract") is None, reason="tesseract-ocr is not installed"
)

# (passed, hit_index) per checkpoint, and the scores, from the official evaluator on the export.
HITS = {
    "0001": {"V1": (True, 1)},
    "0005": {"V1": (True, 1), "V2": (True, 2), "R1": (True, 5)},
}
SCORES = {
    "0001": {"S": None, "V": 1.0, "base": 1.0, "penalty": 0.1},
    "0005": {"S": None, "V": 1.0, "base": 1.0, "penalty": 0.1},
}
EFFECTIVE = {"0001": 2, "0005": 3}
TOOL_IMAGES = {"0001": ["image_1.png"], "0005": ["image_1.png", "image_3.png"]}


@pytest.mark.parametrize("variant", ["deepeyes", "thyme"])
def test_variant_runs_score_as_the_official_evaluator_scores_their_export(
    tmp_path: Path,
    judge_url: str,  # noqa: F811
    variant: str,
) -> None:
    run = variant_run(tmp_path, variant)
    argv = [
        "score",
        str(run),
        "--semantics",
        "official",
        "--judge",
        "geometric",
        "--judge",
        f"openai:judge@{judge_url}",
    ]
    assert main([*argv, "--quiet"]) == 0
    model = f"{variant}_served"
    summary = json.loads((run / "official" / "runs" / "scores" / f"general_{model}_scored.json").read_text())
    assert (summary["mode"], summary["model"], summary["count"]) == ("general", model, 2)
    overall = summary["overall_scores"]
    assert (overall["final_answer_correct_count"], overall["avg_V"], overall["avg_penalty"]) == (2, 1.0, 0.1)
    assert (overall["total_tool_calls"], overall["perfect_cases"], overall["checkpoint_pass_rate_80"]) == (5, 0, 1.0)
    assert overall["tool_usage"] == {"crop": 3, "run_visual_processing_code": 3, "google_search": 2, "rotate": 1}
    for stem, hits in HITS.items():
        folder = run / "official" / "runs" / "general" / model / stem
        scored = json.loads((folder / "result_scored.json").read_text())["eval"]
        got = {cid: (c["passed"], c["hit_index"]) for cid, c in scored["checkpoint_results"].items()}
        assert got == hits, stem
        assert scored["scores"] == SCORES[stem], stem
        assert scored["efficiency"]["effective_tool_calls"] == EFFECTIVE[stem]
        assert sorted(p.name for p in (folder / "tool_images").iterdir()) == TOOL_IMAGES[stem]
        meta = json.loads((folder / "run_meta.json").read_text())
        assert (meta["driver"], meta["effective_tool_calls"]) == (f"{variant}_local", EFFECTIVE[stem])
        operations = [e for e in json.loads((folder / "tool_use_list.json").read_text()) if "save" in e["arguments"]]
        assert operations and all("operation" in e["arguments"] and "op" not in e["arguments"] for e in operations)
    sign = run / "official" / "runs" / "general" / model / "0001"
    code = (sign / "model_code_turn_0.py").read_text()
    assert code.startswith("from PIL import Image") and "```" not in code and "second block" not in code
    assert not (sign / "model_code_turn_1.py").exists(), "turn 1 was a search"
    crops = [e for e in json.loads((sign / "tool_use_list.json").read_text()) if e["tool_name"] == "crop"]
    assert [(e["arguments"]["save"], e["output"]["ok"]) for e in crops] == [
        ("image_1.png", "true"),
        ("zoomed_sign.png", "false"),
    ], "the official reading lists each crop with the name the code gave; only the turn's file exists"
