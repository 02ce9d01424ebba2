"""``pixelbox demo --suite agentvista`` end to end on the local backend, and the same model compared across
Agentic-MME and AgentVista in one ``pixelbox compare``."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from pixelbox.cli import main
from pixelbox.harness.agents.replay import ReplayAgent
from pixelbox.harness.runner import run_tasks
from pixelbox.harness.scoring.run import score_run
from pixelbox.runtime.options import SandboxOptions
from tests.harness.episodes import make_task


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def test_demo_and_a_cross_suite_comparison(tmp_path: Path) -> None:
    code, printed = _cli(
        "demo", "--suite", "agentvista", "--out", str(tmp_path / "av"), "--backend", "local", "--quiet"
    )
    assert code == 0, printed
    assert "| gen | overall | 3 | 0 | 100.0% |" in printed and "report: " in printed
    scores = json.loads((tmp_path / "av" / "run" / "scores.json").read_text())
    by_task = {r["score"]["task_id"]: r["score"] for r in scores["episodes"]}
    assert by_task["av-sign"]["metrics"]["answer_after_crop"] == 1.0
    assert by_task["av-compare"]["prediction"] == "B" and by_task["av-tower"]["metrics"]["code_calls"] == 0.0
    assert (tmp_path / "av" / "run" / "report" / "index.html").is_file()
    export = tmp_path / "av" / "export"
    summary = json.loads((export / "summary_metrics.json").read_text())
    assert summary == {"total_samples": 3, "overall_accuracy_score": 1.0, "average_turns_per_sample": 2.0}
    assert sorted(p.name for p in (export / "av-compare").iterdir()) == [
        "metrics.json",
        "original_image.jpg",
        "original_image_1.jpg",
        "traj.jsonl",
    ]
    trajectory = [json.loads(line) for line in (export / "av-sign" / "traj.jsonl").read_text().splitlines()]
    assert trajectory[0]["text_output"].endswith("[Calling tools: code_interpreter]")
    assert (export / "av-sign" / "tool_image_1.jpg").is_file()

    # the same model on the default suite (Agentic-MME), then both runs in one comparison
    mme = tmp_path / "mme"
    run_tasks(
        [make_task(tmp_path / "data")],
        agent_factory=lambda task: ReplayAgent.from_turns(["<answer>red</answer>"], model="demo-vista"),
        mode="gen",
        out_dir=mme,
        sandbox_options=SandboxOptions(backend="local"),
        progress=False,
    )
    score_run(mme, ["geometric"], progress=False)
    code, printed = _cli("compare", str(tmp_path / "av" / "run"), str(mme), "--out", str(tmp_path / "cmp"))
    assert code == 0, printed
    comparison = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert {s["suite"] for s in comparison["suites"]} == {"agentic-mme", "agentvista"}
    across = comparison["across_suites"]["models"]["demo-vista · gen"]
    assert across["agentvista"]["metric"] == "Accuracy" and across["agentvista"]["value"] == 1.0
    assert across["agentic-mme"]["metric"] == "Acc" and across["agentic-mme"]["n"] == 1
    assert "agentvista" in (tmp_path / "cmp" / "index.html").read_text()

    # one `pixelbox report` over both runs: each run's own report, and the two side by side
    code, printed = _cli("report", str(tmp_path / "av" / "run"), str(mme), "--out", str(tmp_path / "both"))
    assert code == 0, printed
    assert "Accuracy" in printed and "Acc" in printed and "side by side: " in printed
    both = json.loads((tmp_path / "both" / "compare.json").read_text())
    assert set(both["across_suites"]["models"]["demo-vista · gen"]) == {"agentvista", "agentic-mme"}
    assert (mme / "report" / "index.html").is_file()
