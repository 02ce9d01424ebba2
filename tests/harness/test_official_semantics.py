"""``pixelbox score --semantics``: the official evaluator's verdicts and summary file, beside ours.

The runs are the export tests' (two demo tasks, both modes, a web search in between). Judges answer
from a loopback OpenAI-compatible server (``scripts/official_judge_server.py``: tesseract reads the
image; a search passes when the expected text is in the results). The expected official figures
were derived by running the official ``evaluation/eval_runs_search.py`` unmodified on the same
export with the same judge server (``/work/oracles/amme-judge/compare.py``): final answer 2/2, V 1.0
from 2 runs, no S, average penalty 0.1 (the official reading counts the search and the listed ops:
3 calls against a reference of 2, and 2 against 1), no perfect case, pass rates 1.0, L1 and L2 one
run each; the official ordering O1 passes (entries 1 and 2 in code mode) where ours does not.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from pixelbox.cli import main
from tests.harness.test_export import MODE_DIRS, runs  # noqa: F401  (the module fixture)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract-ocr is not installed")


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    spec = importlib.util.spec_from_file_location("judge_server", ROOT / "scripts" / "official_judge_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = ThreadingHTTPServer(("127.0.0.1", 0), module.Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.mark.parametrize("mode", ["gen", "atm"])
def test_official_semantics_reproduce_the_official_evaluator(
    runs: Path,  # noqa: F811
    judge_url: str,
    mode: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = runs / mode
    argv = ["score", str(run), "--judge", "geometric", "--judge", f"openai:judge@{judge_url}", "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    official = MODE_DIRS[mode]
    summary = json.loads((run / "official" / "runs" / "scores" / f"{official}_replay-demo_scored.json").read_text())
    assert (summary["mode"], summary["model"], summary["count"]) == (official, "replay-demo", 2)
    overall = summary["overall_scores"]
    assert (overall["final_answer_correct_count"], overall["avg_V"], overall["total_v_cases"]) == (2, 1.0, 2)
    assert (overall["avg_S"], overall["total_s_cases"], overall["avg_penalty"]) == (0.0, 0, 0.1)
    assert (overall["perfect_cases"], overall["checkpoint_pass_rate_50"], overall["checkpoint_pass_rate_80"]) == (
        0,
        1.0,
        1.0,
    )
    assert sorted(summary["level_scores"]) == ["L1", "L2"]
    assert summary["overthink_analysis"]["cases_overthink"] == 2
    folder = run / "official" / "runs" / official / "replay-demo" / "0005"
    scored = json.loads((folder / "result_scored.json").read_text())
    assert set(scored["eval"]["scores"]) == {"S", "V", "base", "penalty"}
    assert "| acc verified | acc official |" in out
    assert f"- demo-crop-rotate-tag [{mode}] ordering O1: verified False, official True" in out
    assert f"- demo-crop-sign [{mode}] efficiency: verified False, official True" in out
    if mode == "gen":
        assert "official reading lists: google_search, crop; executed: crop, resize, google_search" in out
    assert main(["report", str(run)]) == 0
    report = (run / "report.md").read_text()
    assert "## Verified and official semantics" in report and "ordering O1: verified False, official True" in report


def test_verified_only_writes_no_official_files(runs: Path, tmp_path: Path) -> None:  # noqa: F811
    copy = tmp_path / "run"
    shutil.copytree(runs / "gen", copy, ignore=shutil.ignore_patterns("official"))
    assert main(["score", str(copy), "--judge", "geometric", "--quiet", "--semantics", "verified"]) == 0
    assert not (copy / "official").exists()
    assert main(["score", str(copy), "--quiet", "--semantics", "official"]) == 0
    summary = json.loads((copy / "official" / "runs" / "scores" / "general_replay-demo_scored.json").read_text())
    overall = summary["overall_scores"]
    assert overall["avg_V"] == 0.25, "no judge: every visual check fails, as officially; tool-only checkpoints pass"
    assert overall["final_answer_correct_count"] == 2


@pytest.fixture(scope="module")
def second_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The second task set (``tests/harness/second_set.py``) run in both modes."""
    from pixelbox.harness.tasks import load_tasks
    from tests.harness.demo_runs import run_mode, web_cache
    from tests.harness.second_set import second_recordings, write_second_set

    root = tmp_path_factory.mktemp("second")
    with pytest.warns(Warning):
        tasks = load_tasks(write_second_set(root))
    web = web_cache(root / "web", tasks)
    for mode in ("gen", "atm"):
        recordings = second_recordings(root / "recordings" / mode, mode, tasks)
        summary = run_mode(root / mode, mode, tasks, recordings=recordings, web=web)  # type: ignore[arg-type]
        assert summary.counts == {"answered": 3}, summary.failed
    return root


# Derived by running the official evaluator unmodified on these runs' export with the loopback judge.
SECOND_HITS = {
    "gen": {
        "0101": {"S1": (True, 0), "V1": (True, 1), "V2": (True, 2), "R1": (True, 5)},
        "0102": {"S1": (False, None), "V1": (True, 0), "V2": (False, None)},
        "9": {"V1": (True, 1), "V2": (None, None)},
    },
    "atm": {
        "0101": {"S1": (True, 1), "V1": (True, 0), "V2": (True, 2), "R1": (True, 3)},
        "0102": {"S1": (False, None), "V1": (True, 0), "V2": (False, None)},
        "9": {"V1": (True, 0), "V2": (None, None)},
    },
}
SECOND_SCORES = {
    "0101": {"S": 1.0, "V": 1.0, "base": 1.0, "penalty": 0.25, "PQS": 0.75},
    "0102": {"S": 0.0, "V": 0.5, "R": 0.0, "base": 0.25, "penalty": 0.0, "PQS": 0.25},
    "9": {"S": None, "V": 1.0, "R": 1.0, "base": 1.0, "penalty": 1.0, "PQS": 0.0},
}


@pytest.mark.parametrize("mode", ["gen", "atm"])
def test_second_set_official_verdicts_and_summary(
    second_runs: Path, judge_url: str, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = second_runs / mode
    assert main(["score", str(run), "--judge", "geometric", "--judge", f"openai:judge@{judge_url}", "--quiet"]) == 0
    out = capsys.readouterr().out
    name = MODE_DIRS[mode]
    summary = json.loads((run / "official" / "runs" / "scores" / f"{name}_replay-demo_scored.json").read_text())
    hits = {
        Path(r["run_dir"]).name: {
            c: (x.get("passed"), x.get("hit_index")) for c, x in r["eval"]["checkpoint_results"].items()
        }
        for r in summary["results"]
    }
    assert hits == SECOND_HITS[mode]
    for record in summary["results"]:
        scores = record["eval"]["scores"]
        want = SECOND_SCORES[Path(record["run_dir"]).name]
        assert {k: scores[k] for k in want} == want
    overall = summary["overall_scores"]
    assert (overall["avg_S"], overall["total_s_cases"], overall["avg_V"], overall["avg_penalty"]) == (
        0.5,
        2,
        0.8333,
        0.4167,
    )
    assert (overall["final_answer_correct_count"], overall["perfect_cases"], overall["total_tool_calls"]) == (3, 0, 6)
    assert (overall["checkpoint_pass_rate_50"], overall["checkpoint_pass_rate_80"]) == (0.6667, 0.6667)
    assert {k: v["total_cases"] for k, v in summary["level_scores"].items()} == {"L1": 1, "L3": 1}, "level '2' as text"
    thinking = summary["overthink_analysis"]
    assert (thinking["cases_overthink"], thinking["cases_optimal"], thinking["cases_exceeded_max"]) == (1, 1, 1)
    assert thinking["human_tool_usage"] == {"crop": 3, "rotate": 2, "google_search": 1, "google_lens_search": 1}
    assert (run / "official" / "runs" / name / "replay-demo" / "0102" / "orig_1.png").is_file()
    assert "second-tag" in out


def test_an_unfinished_episode_counts_as_the_official_evaluator_counts_it(
    second_runs: Path, judge_url: str, tmp_path: Path
) -> None:
    """No ``run_meta.json`` in its folder: scored as an incomplete run with S and V 0 (figures derived by
    running the official evaluator on the same export)."""
    run = tmp_path / "run"
    shutil.copytree(second_runs / "gen", run, ignore=shutil.ignore_patterns("official"))
    trace = run / "episodes" / "9.jsonl"
    trace.write_text("".join(trace.read_text().splitlines(keepends=True)[:-1]))
    assert main(["score", str(run), "--semantics", "official", "--judge", f"openai:judge@{judge_url}", "--quiet"]) == 0
    summary = json.loads((run / "official" / "runs" / "scores" / "general_replay-demo_scored.json").read_text())
    assert not (run / "official" / "runs" / "general" / "replay-demo" / "9" / "run_meta.json").exists()
    overall = summary["overall_scores"]
    assert (overall["final_answer_correct_count"], overall["avg_S"], overall["total_s_cases"]) == (2, 0.3333, 3)
    assert (overall["avg_V"], overall["avg_penalty"], overall["checkpoint_pass_rate_50"]) == (0.5, 0.0833, 0.3333)
    assert [r.get("incomplete_run", False) for r in summary["results"]] == [False, False, True]


def test_both_keeps_the_verified_scores_when_the_run_cannot_be_exported(
    runs: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs / "gen", copy, ignore=shutil.ignore_patterns("official"))
    (copy / "episodes" / "demo-crop-sign.images" / "transformed_image_1.png").unlink()
    assert main(["score", str(copy), "--judge", "geometric", "--quiet"]) == 0
    assert "official semantics skipped (the run cannot be exported" in capsys.readouterr().out
    assert (copy / "scores.json").is_file()
    assert main(["score", str(copy), "--judge", "geometric", "--quiet", "--semantics", "official"]) == 2
