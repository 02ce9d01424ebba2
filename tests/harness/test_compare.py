"""``pixelbox compare`` and the demo's pages in a real browser.

The demo plays two models (the reference recordings and a hasty model's, which crops the wrong corner,
skips the flip and forgets to rotate) through the real runner and local sandboxes; these tests compare
its two runs with the real command, check the numbers (the paired bootstrap against the distribution
worked out by hand), and render the run index, an episode page and the comparison in headless Chromium,
checking metadata, charts, overlays and the grid in the rendered DOM and in screenshots.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pixelbox.cli import main
from pixelbox.harness.compare import paired_bootstrap
from pixelbox.harness.scoring.charts import PALETTE
from pixelbox.harness.scoring.overlays import EXPECTED, OTHER
from tests.browser import Dom, pixels_of, rendered, screenshot
from tests.harness.conftest import DemoOutput

DIFFERING = {"demo-crop-sign", "demo-flip-mirror", "demo-crop-rotate-tag"}
META_FIELDS = {"model", "endpoint", "backend", "runtime", "suite", "date", "pixelbox"}


def compare(demo: DemoOutput, out: Path, *extra: str) -> dict[str, Any]:
    runs = [str(demo.out / "runs"), str(demo.out / "runs-hasty")]
    assert main(["compare", *runs, "--out", str(out), "--label", "reference", "--label", "hasty", *extra]) == 0
    return json.loads((out / "compare.json").read_text())


def pair(comparison: dict[str, Any], a: str, b: str) -> dict[str, Any]:
    [suite] = comparison["suites"]
    return next(p for p in suite["pairs"] if (p["a"], p["b"]) == (a, b))


# -- the numbers ----------------------------------------------------------------------------------------


def test_paired_bootstrap_matches_the_distribution_worked_out_by_hand() -> None:
    # Per-task differences 1, 1, 1, 0, 0: a resampled mean is k/5 with k ~ Binomial(5, 0.6).
    # P(k = 0) = 0.4^5 = 1.0% < 2.5% < P(k <= 1) = 8.7%, so the 2.5% quantile is 1/5; P(k = 5) = 7.8% > 2.5%,
    # so the 97.5% quantile is 5/5. Two-sided p = 2 * P(mean <= 0) = 2 * 1.02%.
    result = paired_bootstrap([1, 1, 1, 1, 0], [0, 0, 0, 1, 0], resamples=20_000, seed=7)
    assert result.difference == pytest.approx(0.6) and (result.mean_a, result.mean_b) == (0.8, 0.2)
    assert result.low == pytest.approx(0.2) and result.high == pytest.approx(1.0) and result.significant
    assert result.p == pytest.approx(2 * 0.4**5, abs=0.005)
    assert paired_bootstrap([1, 1, 1, 1, 0], [0, 0, 0, 1, 0], resamples=20_000, seed=7) == result
    same = paired_bootstrap([1, 0, 1], [1, 0, 1])
    assert (same.difference, same.low, same.high, same.p, same.significant) == (0.0, 0.0, 0.0, 1.0, False)
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap([1, 0], [1])


def test_compare_on_two_demo_runs_shows_their_differences(
    demo_output: DemoOutput, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    comparison = compare(demo_output, tmp_path / "cmp")
    printed = capsys.readouterr().out
    [suite] = comparison["suites"]
    assert suite["suite"] == "agentic-mme" and suite["metric"] == "acc"
    labels = [s["label"] for s in comparison["systems"]]
    assert sorted(labels) == ["hasty · atm", "hasty · gen", "reference · atm", "reference · gen"]
    differ = {row["task_id"] for row in suite["grid"] if row["differs"]}
    assert differ == DIFFERING
    for row in suite["grid"]:
        states = {label: cell["state"] for label, cell in row["cells"].items()}
        hasty = "fail" if row["task_id"] in DIFFERING else "pass"
        assert states == {
            "reference · atm": "pass",
            "reference · gen": "pass",
            "hasty · atm": hasty,
            "hasty · gen": hasty,
        }
        assert all(Path(cell["page"]).is_file() for cell in row["cells"].values())
    diff = pair(comparison, "reference · atm", "hasty · atm")
    assert (diff["tasks"], diff["a_better"], diff["b_better"]) == (5, 3, 0)
    assert diff["difference"] == pytest.approx(0.6) and diff["significant"]
    assert diff["low"] == pytest.approx(0.2) and diff["high"] == pytest.approx(1.0)  # Binomial(5, 0.6) / 5
    same_model = pair(comparison, "reference · atm", "reference · gen")
    assert same_model["difference"] == 0 and not same_model["significant"]
    aggregate = {row["system"]: row for row in suite["aggregate"]}
    assert aggregate["hasty · gen"]["acc"] == 0.4 and aggregate["reference · gen"]["v_tool"] == 1.0
    assert "reference · atm - hasty · atm: +60.0 pp, 95% interval [+20.0, +100.0] over 5 shared task(s)" in printed
    assert "tasks where the systems differ: 3 of 5" in printed
    again = compare(demo_output, tmp_path / "again")
    assert again["suites"][0]["pairs"] == suite["pairs"], "a fixed seed gives the same intervals"
    markdown = (tmp_path / "cmp" / "compare.md").read_text()
    assert "## agentic-mme: tasks where the systems differ (3 of 5)" in markdown
    page = demo_output.out / "runs-hasty" / "report" / "replay-hasty-demo-crop-sign-atm.html"
    assert f"[fail]({os.path.relpath(page, tmp_path / 'cmp')})" in markdown


def test_compare_on_another_metric_shows_its_values(
    demo_output: DemoOutput, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    comparison = compare(demo_output, tmp_path / "cmp", "--metric", "calls")
    [suite] = comparison["suites"]
    assert suite["metric_label"] == "calls/task"
    rows = {row["task_id"]: row for row in suite["grid"]}
    flip = rows["demo-flip-mirror"]["cells"]
    assert (flip["reference · atm"]["state"], flip["reference · atm"]["value"], flip["hasty · atm"]["value"]) == (
        "value",
        1.0,
        0.0,
    )
    diff = pair(comparison, "reference · atm", "hasty · atm")
    assert diff["difference"] == pytest.approx(0.4)  # the hasty model skipped the flip and the rotation
    dom = Dom.parse((tmp_path / "cmp" / "index.html").read_text())
    [row] = [
        r
        for r in dom.by_id("pairs-agentic-mme").find("tr")
        if "reference · atm" in r.all_text() and "hasty · atm" in r.all_text()
    ]
    assert "+0.40" in row.all_text() and "pp" not in row.all_text()
    assert main(["compare", str(demo_output.out / "runs"), "--metric", "nonsense", "--out", str(tmp_path / "x")]) == 2
    assert (
        "has no metric 'nonsense'; its metrics are acc, s, v, v_tool, v_true, calls, overthink"
        in capsys.readouterr().err
    )


def test_compare_refuses_a_run_that_was_not_scored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "raw").mkdir()
    assert main(["compare", str(tmp_path / "raw"), "--out", str(tmp_path / "cmp")]) == 2
    assert "run `pixelbox score" in capsys.readouterr().err and not (tmp_path / "cmp").exists()


def test_the_same_model_side_by_side_across_suites(demo_output: DemoOutput, tmp_path: Path) -> None:
    """A suite contributes its metric names and values through the score records; the comparison puts
    the same model's results on each suite side by side, and the run report uses that suite's columns."""
    other = tmp_path / "toolbench"
    other.mkdir()
    columns = [
        {"key": "accuracy", "label": "APR", "kind": "rate", "better": "higher"},
        {"key": "score", "label": "ARS", "kind": "rate", "better": "higher"},
    ]
    records = []
    for n, (accuracy, score, category) in enumerate([(1, 0.9, "maths"), (0, 0.4, "maths"), (1, 0.7, "physics")]):
        records.append(
            {
                "score": {
                    "episode_id": f"replay-demo-vt{n}-atm",
                    "task_id": f"vt{n}",
                    "mode": "atm",
                    "model": "replay-demo",
                    "suite": "visual-toolbench-like",
                    "category": category,
                    "level": None,
                    "columns": columns,
                    "metrics": {"accuracy": accuracy, "score": score},
                    "primary": "accuracy",
                },
                "episode": {},
            }
        )
    (other / "scores.json").write_text(json.dumps({"judges": ["rubric"], "episodes": records}))
    out = tmp_path / "cmp"
    assert main(["compare", str(demo_output.out / "runs"), str(other), "--out", str(out)]) == 0
    comparison = json.loads((out / "compare.json").read_text())
    across = comparison["across_suites"]
    assert across["suites"] == ["agentic-mme", "visual-toolbench-like"]
    row = across["models"]["replay-demo · atm"]
    assert row["agentic-mme"]["value"] == 1.0 and row["agentic-mme"]["metric"] == "Acc"
    assert (
        row["visual-toolbench-like"]["value"] == pytest.approx(2 / 3, abs=1e-4)
        and row["visual-toolbench-like"]["metric"] == "APR"
    )
    second = comparison["suites"][1]
    assert [c["label"] for c in second["columns"]] == ["APR", "ARS"] and second["aggregate"][0][
        "score"
    ] == pytest.approx(2 / 3, abs=1e-4)
    assert set(second["categories"]) == {"maths", "physics"}
    report = (other / "report" / "index.html").read_text()  # written by compare for the grid's links
    dom = Dom.parse(report)
    assert [th.all_text() for th in dom.by_id("summary").find("th")][-2:] == ["APR", "ARS"]
    assert "66.7%" in dom.by_id("summary").all_text()
    page = Dom.parse((out / "index.html").read_text())
    assert "66.7% APR (n=3)" in page.by_id("across-suites").all_text()


# -- in the browser -------------------------------------------------------------------------------------


def meta_of(dom: Dom) -> dict[str, str]:
    return {node.attrs["data-field"]: node.find("dd")[0].all_text() for node in dom.by_id("run-meta").find("div")}


def test_the_run_index_renders_metadata_and_charts(demo_output: DemoOutput, tmp_path: Path) -> None:
    index = demo_output.out / "runs-hasty" / "report" / "index.html"
    dom = rendered(index, tmp_path / "profile")
    meta = meta_of(dom)
    assert set(meta) >= META_FIELDS and "n/a" not in [meta[k] for k in META_FIELDS]
    assert (meta["model"], meta["backend"], meta["runtime"], meta["suite"]) == (
        "replay-hasty",
        "local",
        "none",
        "agentic-mme",
    )
    assert meta["endpoint"].startswith("replay of ") and meta["pixelbox"] == "0.1.0"
    charts = {svg.attrs["id"]: svg for svg in dom.find("svg", cls="chart")}
    assert set(charts) == {"chart-category", "chart-level", "chart-process", "chart-calls", "chart-failures"}
    groups = {bar.attrs["data-group"] for bar in charts["chart-category"].find("rect", cls="bar")}
    assert groups == {"documents", "labels", "low light", "signs"}
    failures = {
        (b.attrs["data-series"], b.attrs["data-group"], b.attrs["data-value"])
        for b in charts["chart-failures"].find("rect", cls="bar")
    }
    assert ("atm", "missing_visual_tool_use", "1") in failures
    image = screenshot(index, "report_index.png", tmp_path / "profile", (1280, 2600))
    assert pixels_of(image, PALETTE[0]) > 2000 and pixels_of(image, PALETTE[1]) > 2000, "the bars must be drawn"


def test_an_episode_page_renders_overlays_and_the_conversation(demo_output: DemoOutput, tmp_path: Path) -> None:
    page = demo_output.out / "runs-hasty" / "report" / "replay-hasty-demo-crop-sign-atm.html"
    dom = rendered(page, tmp_path / "profile")
    assert set(meta_of(dom)) >= META_FIELDS
    [overlay] = dom.find("svg", cls="overlay")
    assert overlay.attrs["data-loaded"] == "yes", "the input image must have loaded"
    [expected] = overlay.find("rect", cls="expected")
    [crop] = overlay.find("rect", cls="crop")
    assert expected.attrs["data-checkpoint"] == "V1" and "other" in crop.classes  # the wrong corner matched nothing
    assert float(crop.attrs["x"]) < float(expected.attrs["x"])
    [comparison] = dom.find("div", cls="pair")
    text = comparison.all_text()
    assert "closest crop (not matched): seq 0" in text and "IoU 0.00" in text
    assert len(comparison.find("img")) == 2
    assistant = [m.all_text() for m in dom.find("div", cls="assistant")]
    assert "Zooming into the bottom-left corner." in assistant[0] and "answer: GATE 41" in assistant[1]
    assert dom.find("div", cls="action") and dom.find("div", cls="end")
    image = screenshot(page, "report_episode_page.png", tmp_path / "profile", (1280, 2600))
    assert pixels_of(image, EXPECTED) > 150 and pixels_of(image, OTHER) > 150, "both boxes must be drawn"


def test_the_compare_page_renders_grid_charts_and_metadata(demo_output: DemoOutput, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    compare(demo_output, out)
    page = out / "index.html"
    dom = rendered(page, tmp_path / "profile")
    meta = meta_of(dom)
    assert set(meta) >= META_FIELDS and meta["model"] == "replay-demo, replay-hasty"
    assert len(dom.by_id("systems").find("tr")) == 5
    grid = dom.by_id("grid-agentic-mme")
    rows = grid.find("tr")[1:]
    assert {row.find("td")[0].all_text() for row in rows} == DIFFERING
    for row in rows:
        cells = row.find("td", cls="cell")
        assert [c.all_text() for c in cells] == ["pass", "pass", "fail", "fail"]
        for link in row.find("a"):
            assert (out / link.attrs["href"]).resolve().is_file(), link.attrs["href"]
    verdicts = [row.find("td")[-1].all_text() for row in dom.by_id("pairs-agentic-mme").find("tr")[1:]]
    assert verdicts.count("A ahead") == 4 and verdicts.count("no clear difference") == 2
    charts = {svg.attrs["id"]: svg for svg in dom.find("svg", cls="chart")}
    assert {"chart-agentic-mme-category", "chart-agentic-mme-level"} <= set(charts)
    series = {bar.attrs["data-series"] for bar in charts["chart-agentic-mme-category"].find("rect", cls="bar")}
    assert series == {"reference · atm", "reference · gen", "hasty · atm", "hasty · gen"}
    image = screenshot(page, "compare_page.png", tmp_path / "profile", (1280, 2400))
    assert all(pixels_of(image, colour) > 1000 for colour in PALETTE[:4]), "every system's bars must be drawn"
