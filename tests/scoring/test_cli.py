"""``pixelbox score``, ``pixelbox report`` and ``pixelbox export`` on a fixture run (traces only, no sandbox)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pixelbox.cli import main
from tests.scoring.builders import code_episode
from tests.scoring.test_from_trace import write_trace


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A run directory holding one code-mode episode trace (task 0001)."""
    write_trace(code_episode(tmp_path), tmp_path / "run")
    return tmp_path / "run"


def test_score_writes_scores_and_prints_the_table(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(run), "--judge", "geometric", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| gen | overall | 1 | 100.0% |" in printed and f"{run}/scores.json" in printed
    scores = json.loads((run / "scores.json").read_text())
    assert scores["judges"] == ["geometric"] and scores["episodes"][0]["score"]["v_true"] == 1.0


def test_report_after_score_writes_every_format(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(run), "--judge", "geometric", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(run)]) == 0
    paths = json.loads(capsys.readouterr().out)
    assert set(paths) == {"json", "markdown", "html"}
    for name in ("report.json", "report.md", "report/index.html"):
        assert (run / name).is_file(), name
    assert paths["html"] == str(run / "report" / "index.html")
    assert "0001" in (run / "report" / "index.html").read_text()


def test_report_before_score_says_what_to_run(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(run)]) == 2
    assert f"run `pixelbox score {run}` first" in capsys.readouterr().err


def test_an_unknown_judge_is_refused_with_the_accepted_forms(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(run), "--judge", "gpt4", "--quiet"]) == 2
    assert "openai:MODEL[@BASE_URL], ocr, geometric" in capsys.readouterr().err
    assert not (run / "scores.json").exists()


def test_a_directory_without_traces_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(tmp_path), "--judge", "geometric", "--quiet"]) == 2
    assert "no episode traces" in capsys.readouterr().err
    assert main(["export", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "no episode traces" in capsys.readouterr().err


def test_export_writes_the_official_layout(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(run), "--out", str(tmp_path / "official")]) == 0
    assert "1 episode(s) exported" in capsys.readouterr().out
    [folder] = list((tmp_path / "official" / "gen").glob("*/0001"))
    listed = json.loads((folder / "tool_use_list.json").read_text())
    assert listed[0]["raw_tool_name"] == "script_exec" and listed[0]["index"] == 0
    assert (folder / "run_meta.json").is_file() and len(list((folder / "tool_images").iterdir())) == 2
