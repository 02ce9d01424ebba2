"""Infrastructure endings (agent, sandbox or harness errors, unfinished traces) are not model failures.

They get none of the seven failure labels, are left out of the metrics by default, and are listed
apart with their recorded reason; a flag counts them as failures. Budget exhaustion stays a model
failure.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pixelbox.cli import main
from pixelbox.harness.scoring.from_trace import episode_from_trace
from pixelbox.harness.scoring.judges import GeometricJudge
from pixelbox.harness.scoring.run import score_run, write_report
from pixelbox.harness.scoring.score import score_episode
from pixelbox.harness.scoring.taxonomy import LABELS
from pixelbox.harness.traces import RunDirectory
from tests.scoring.builders import code_episode
from tests.scoring.test_from_trace import raw_task, write_trace

AGENT_DOWN = "the agent could not start: APIConnectionError: Connection refused"


def failed_start(run: Path, task_id: str, status: str, reason: str, where: str) -> Path:
    """The trace the harness writes for an episode that could not begin (start, error, end)."""
    view = code_episode(run.parent)
    raw = {**raw_task(view), "task_id": task_id}
    directory = RunDirectory.open(run, {"model": view.model})
    with directory.start_episode(task_id, fsync=False) as writer:
        task = {"task_id": task_id, "images": [str(p) for p in view.root_images], "raw": raw}
        writer.write("episode_start", task=task, config={}, model=view.model, mode="gen", runtime=None)
        writer.error(where=where, message=reason.rsplit(": ", 1)[-1], type="APIConnectionError")
        writer.episode_end(status=status, reason=reason, answer=None, totals={})
    return directory.trace_path(task_id)


def budget_exhausted(run: Path) -> Path:
    """A model that used up its rounds without answering."""
    view = code_episode(run.parent)
    raw = {**raw_task(view), "task_id": "0003"}
    directory = RunDirectory.open(run, {"model": view.model})
    with directory.start_episode("0003", fsync=False) as writer:
        task = {"task_id": "0003", "images": [str(p) for p in view.root_images], "raw": raw}
        writer.episode_start(task=task, config={}, model=view.model, mode="code")
        writer.write("budget_hit", limit="max_rounds", allowed=15, used=15, reason="15 rounds used")
        writer.episode_end(status="budget_exhausted", reason="15 rounds used", answer=None, totals={})
    return directory.trace_path("0003")


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """One answered episode (0001), one whose agent never started (0002), one budget-exhausted (0003)
    and one killed mid-way (0004: a crop ran, no episode_end)."""
    run = tmp_path / "run"
    write_trace(code_episode(tmp_path), run)
    failed_start(run, "0002", "agent_error", AGENT_DOWN, "agent")
    budget_exhausted(run)
    killed = code_episode(tmp_path)
    write_trace(replace(killed, task=replace(killed.task, task_id="0004")), run, end=False)
    return run


def test_an_agent_that_never_started_is_not_a_model_failure(run: Path) -> None:
    view = episode_from_trace(run / "episodes" / "0002.jsonl")
    assert view.termination == "agent_error" and view.infrastructure == f"agent_error: {AGENT_DOWN}"
    score = score_episode(view, [GeometricJudge()])
    assert score.failure is None and score.infrastructure == f"agent_error: {AGENT_DOWN}"
    assert score.acc is False  # still recorded, but not blamed on the model


def test_an_unfinished_episode_is_infrastructure_with_its_reason(run: Path) -> None:
    view = episode_from_trace(run / "episodes" / "0004.jsonl")
    assert view.termination == "unfinished"
    score = score_episode(view, [GeometricJudge()])
    assert score.failure is None
    assert score.infrastructure is not None and "no episode_end record" in score.infrastructure


def test_budget_exhaustion_is_a_model_failure(run: Path) -> None:
    view = episode_from_trace(run / "episodes" / "0003.jsonl")
    assert view.termination == "budget_exhausted" and view.infrastructure is None
    score = score_episode(view, [GeometricJudge()])
    assert score.infrastructure is None and score.failure is not None and score.failure.label in LABELS


def test_metrics_leave_infrastructure_out_and_report_it_apart(run: Path) -> None:
    result = score_run(run, ["geometric"], progress=False)
    summary = result["summary"]
    [overall] = [r for r in summary["rows"] if r["level"] == "overall"]
    assert overall["n"] == 2 and overall["acc"] == 0.5  # 0001 right, 0003 wrong; 0002 and 0004 left out
    assert summary["infrastructure"]["count"] == 2
    assert summary["infrastructure"]["by_status"] == {"agent_error": 1, "unfinished": 1}
    assert sum(summary["failures"].values()) == 1 and "missing_visual_tool_use" not in summary["failures"]
    assert "post_visual_perception_deficit" not in summary["failures"]
    assert overall["infrastructure"] == 2
    paths = write_report(run)
    markdown = Path(paths["markdown"]).read_text()
    assert "| gen | overall | 2 | 2 | 50.0% |" in markdown
    assert "2 episode(s) failed for infrastructure: counted in 'infra', left out of the metrics." in markdown
    assert "## Infrastructure failures (2, left out of the metrics)" in markdown
    link = "[fixture-model-0002-gen](report/fixture-model-0002-gen.html)"
    assert f"| {link} | agent_error | {AGENT_DOWN} |" in markdown
    [row] = [line for line in markdown.splitlines() if line.startswith(f"| {link} | L2 |")]
    assert row.split(" | ").count("n/a") == 7 and "fail" not in row and "0.0%" not in row, row
    report = json.loads(Path(paths["json"]).read_text())
    assert report["infrastructure"]["count"] == 2 and report["scored_episodes"] == 2
    html = Path(paths["html"]).read_text()
    assert "id='infrastructure'" in html and f"infrastructure: agent_error: {AGENT_DOWN}" in html
    page = (Path(paths["html"]).parent / "fixture-model-0002-gen.html").read_text()
    assert "<b>Infrastructure failure:</b>" in page and "Failure label" not in page
    assert page.count("<b class='infra'>n/a</b>") == 7


def test_a_flag_counts_infrastructure_as_failures(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(run), "--judge", "geometric", "--quiet", "--include-infrastructure"]) == 0
    assert "| gen | overall | 4 | 2 | 25.0% |" in capsys.readouterr().out
    assert main(["report", str(run)]) == 0  # follows the choice made when scoring
    markdown = (run / "report.md").read_text()
    assert "| gen | overall | 4 | 2 |" in markdown and "counted as failures in the metrics" in markdown
    assert main(["score", str(run), "--judge", "geometric", "--quiet"]) == 0
    assert "| gen | overall | 2 | 2 | 50.0% |" in capsys.readouterr().out
    assert main(["report", str(run), "--include-infrastructure"]) == 0
    assert "| gen | overall | 4 | 2 | 25.0% |" in (run / "report.md").read_text()


def test_a_run_where_every_episode_failed_for_infrastructure_says_so(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for task_id in ("0001", "0002", "0003"):
        failed_start(run, task_id, "agent_error", AGENT_DOWN, "agent")
    summary = score_run(run, ["geometric"], progress=False)["summary"]
    assert summary["infrastructure"]["all"] and summary["scored_episodes"] == 0
    assert [(r["level"], r["n"], r["infrastructure"], r["acc"]) for r in summary["rows"]] == [
        ("L2", 0, 3, None),
        ("overall", 0, 3, None),
    ]
    paths = write_report(run)
    markdown = Path(paths["markdown"]).read_text()
    assert "**Every episode (3) failed for infrastructure (agent endpoint, sandbox or harness)" in markdown
    assert "| gen | overall | 0 | 3 | n/a | n/a | n/a |" in markdown
    html = Path(paths["html"]).read_text()
    assert "id='summary-note'" in html and "<td class='na infra'" in html and "<table id='summary'>" in html
