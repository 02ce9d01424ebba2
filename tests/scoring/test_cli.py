"""``pixelbox score``, ``pixelbox report`` and ``pixelbox export`` on a fixture run (traces only, no sandbox)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pixelbox.cli import main
from tests.harness.servers import ChatCompletionsServer
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
    assert "| gen | overall | 1 | 0 | 100.0% |" in printed and f"{run}/scores.json" in printed
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
    [folder] = list((tmp_path / "official" / "runs" / "general").glob("*/*"))
    listed = json.loads((folder / "tool_use_list.json").read_text())
    assert listed[-1]["raw_tool_name"] == "script_exec" and [e["index"] for e in listed] == list(range(len(listed)))
    assert (folder / "run_meta.json").is_file() and len(list((folder / "tool_images").iterdir())) == 2


def no_traceback(err: str) -> None:
    assert "Traceback" not in err and err.count("\n") <= 2, err


def test_an_openai_judge_without_a_key_says_how_to_give_one(
    run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["score", str(run), "--judge", "openai:gpt-4o", "--quiet"]) == 2
    err = capsys.readouterr().err
    no_traceback(err)
    assert err.startswith("pixelbox score: judge openai:gpt-4o needs an API key")
    assert "export OPENAI_API_KEY" in err and "openai:MODEL@http://HOST:PORT/v1" in err
    assert not (run / "scores.json").exists()


def test_a_judge_endpoint_that_refuses_is_a_message(
    run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with ChatCompletionsServer([], api_key="sk-right") as server:
        code = main(["score", str(run), "--judge", f"openai:judge-model@{server.base_url}", "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    no_traceback(err)
    assert f"judge call to {server.base_url} (judge-model) failed" in err and "Incorrect API key" in err
    assert not (run / "scores.json").exists()


def test_report_on_a_corrupt_scores_file_names_it(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(run), "--judge", "geometric", "--quiet"]) == 0
    capsys.readouterr()
    scores = run / "scores.json"
    scores.write_text(scores.read_text()[:200])
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    no_traceback(err)
    assert f"{scores} is not valid JSON (line " in err and f"re-create it with `pixelbox score {run}`" in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"judges": ["geometric"]}, "has no 'episodes'"),
        ({"judges": [], "episodes": {}}, "'episodes' must be a list"),
        ({"judges": [], "episodes": [{"score": {"episode_id": "x"}}]}, "episodes[0] has no 'episode' object"),
        ([1, 2], "must hold a JSON object"),
    ],
)
def test_report_on_a_scores_file_missing_parts_says_what(
    run: Path, capsys: pytest.CaptureFixture[str], content: object, expected: str
) -> None:
    (run / "scores.json").write_text(json.dumps(content))
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    no_traceback(err)
    assert f"{run / 'scores.json'}" in err and expected in err and "pixelbox score" in err


def damage_line(trace: Path, number: int) -> None:
    lines = trace.read_text().splitlines(keepends=True)
    lines[number - 1] = lines[number - 1][: len(lines[number - 1]) // 2] + "\n"
    trace.write_text("".join(lines))


@pytest.mark.parametrize("command", ["score", "export"])
def test_a_trace_damaged_mid_file_is_a_message(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    trace = run / "episodes" / "0001.jsonl"
    damage_line(trace, 3)
    args = ["--judge", "geometric", "--quiet"] if command == "score" else ["--out", str(tmp_path / "official")]
    assert main([command, str(run), *args]) == 2
    err = capsys.readouterr().err
    no_traceback(err)
    assert f"{trace}:3: not a JSON record" in err and "move the trace aside and run the task again" in err


def test_a_cut_off_last_line_is_still_tolerated(run: Path) -> None:
    trace = run / "episodes" / "0001.jsonl"
    text = trace.read_text()
    trace.write_text(text + '{"v": 1, "seq": 99, "kind": "err')
    assert main(["score", str(run), "--judge", "geometric", "--quiet"]) == 0
