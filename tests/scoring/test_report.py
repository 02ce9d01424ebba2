"""Run-level scoring and reports: scores.json, report.json, report.md carrying the HTML's tables, and the
HTML report rendered in headless Chromium (metadata, charts, overlays with expected regions, conversation)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from pixelbox.harness.scoring.overlays import EXPECTED, MATCHED
from pixelbox.harness.scoring.run import RunDirError, score_run, write_report
from tests.browser import Dom, pixels_of, rendered, screenshot
from tests.scoring.builders import EVIDENCE, ROOT_SIZE, atomic_episode, code_episode

CONVERSATION = (
    {"role": "system", "text": "You are careful.", "images": 0},
    {"role": "user", "text": "How tall is the tower?", "images": 1},
    {"role": "assistant", "round": 1, "text": "The square is small; let me crop it.\n<code>crop()</code>"},
    {"role": "action", "round": 1, "interaction": 0},
    {"role": "assistant", "round": 2, "text": "Now I know. <answer>330</answer>", "tool_calls": []},
    {"role": "end", "status": "answered", "text": "", "answer": "330"},
)


def scored_run(run: Path) -> dict:
    (run / "gen").mkdir(parents=True)
    (run / "atm").mkdir()
    code = replace(code_episode(run / "gen"), conversation=CONVERSATION, facts={"backend": "docker", "suite": "x"})
    episodes = [code, atomic_episode(run / "atm", answer="about 200")]
    return score_run(run, ["ocr", "geometric"], episodes=episodes)


def test_score_run_writes_scores_and_shows_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = scored_run(tmp_path)
    assert "judging episodes" in capsys.readouterr().err
    saved = json.loads((tmp_path / "scores.json").read_text())
    assert saved["summary"] == result["summary"]
    rows = {(r["mode"], r["level"]): r for r in result["summary"]["rows"]}
    assert set(rows) == {("gen", "L2"), ("gen", "overall"), ("atm", "L2"), ("atm", "overall")}
    assert rows["gen", "overall"]["acc"] == 1.0 and rows["atm", "overall"]["acc"] == 0.0
    assert rows["atm", "L2"]["v_tool"] == 1.0 and rows["atm", "L2"]["calls"] == 3.0
    assert all(r["infrastructure"] == 0 for r in rows.values())
    assert result["summary"]["failures"] == {"post_visual_perception_deficit": 1}
    assert [c["key"] for c in result["summary"]["columns"]] == [
        "acc",
        "s",
        "v",
        "v_tool",
        "v_true",
        "calls",
        "overthink",
    ]
    assert saved["episodes"][0]["episode"]["expected_regions"] == [
        {
            "checkpoint_id": "V1",
            "root": "input:0",
            "bbox_2d": EVIDENCE,
            "source": "constraints.region",
            "min_iou": 0.5,
            "min_coverage": None,
        }
    ]


def test_write_report_needs_scores_first(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="pixelbox score"):
        write_report(tmp_path)


def test_markdown_and_json_reports(tmp_path: Path) -> None:
    scored_run(tmp_path)
    paths = write_report(tmp_path)
    markdown = Path(paths["markdown"]).read_text()
    assert "| gen | L2 | 1 | 0 | 100.0% | 100.0% |" in markdown
    assert "| post_visual_perception_deficit | 1 | 50% |" in markdown
    assert "| model | fixture-model |" in markdown and "| backend | docker |" in markdown
    assert "![by level](report/assets/chart-level.svg)" in markdown
    assert (tmp_path / "report" / "assets" / "chart-level.svg").read_text().startswith("<?xml")
    report = json.loads(Path(paths["json"]).read_text())
    assert report["judges"] == ["ocr", "geometric"] and report["episodes"] == 2
    assert report["meta"]["model"] == "fixture-model" and report["meta"]["judges"] == "ocr, geometric"


def html_tables(page: Path) -> dict[str, list[list[str]]]:
    """Table id -> rows of cell texts (header first) of a written page."""
    dom = Dom.parse(page.read_text())
    tables = {}
    for table in dom.find("table"):
        rows = [
            [cell.all_text().strip() for cell in row.find() if cell.tag in ("td", "th")] for row in table.find("tr")
        ]
        tables[table.attrs.get("id", "")] = rows
    return tables


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table as rows of cell texts (links reduced to their text)."""
    tables, current = [], []
    for line in [*text.splitlines(), ""]:
        if re.fullmatch(r"\|(---\|)+", line):
            continue
        if line.startswith("| "):
            cells = [re.sub(r"\[(.*?)\]\(.*?\)", r"\1", c.strip()).replace("\\|", "|") for c in line[2:-2].split(" | ")]
            current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def test_report_md_carries_the_same_tables_as_the_html(tmp_path: Path) -> None:
    scored_run(tmp_path)
    paths = write_report(tmp_path)
    html = html_tables(Path(paths["html"]))
    markdown = markdown_tables(Path(paths["markdown"]).read_text())
    assert {"summary", "failures", "episodes"} <= set(html)
    for ident, rows in html.items():
        assert rows in markdown, f"table {ident} of index.html is not in report.md"
    assert len(markdown) == len(html) + 1  # and the run metadata, shown as the header of every HTML page


def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    run = tmp_path / "run"
    scored_run(run)
    index = Path(write_report(run)["html"])
    dom = rendered(index, tmp_path / "profile")
    meta = {node.attrs["data-field"]: node.find("dd")[0].all_text() for node in dom.by_id("run-meta").find("div")}
    assert meta["model"] == "fixture-model" and meta["backend"] == "docker" and meta["suite"] == "x"
    assert set(meta) == {"model", "endpoint", "backend", "runtime", "suite", "date", "pixelbox", "judges"}
    charts = {svg.attrs["id"]: svg for svg in dom.find("svg", cls="chart")}
    assert {"chart-level", "chart-process", "chart-calls", "chart-failures"} <= set(charts)
    bars = {
        (b.attrs["data-series"], b.attrs["data-group"]): b.attrs["data-value"]
        for b in charts["chart-level"].find("rect", cls="bar")
    }
    assert bars == {("atm", "L2"): "0", ("atm", "overall"): "0", ("gen", "L2"): "1", ("gen", "overall"): "1"}

    page = index.parent / "fixture-model-0001-gen.html"
    dom = rendered(page, tmp_path / "profile")
    assert dom.by_id("run-meta").find("div", data_field="pixelbox")
    [overlay] = dom.find("svg", cls="overlay")
    assert overlay.attrs["data-loaded"] == "yes" and overlay.attrs["data-crops"] == "1"
    [expected] = overlay.find("rect", cls="expected")
    [crop] = overlay.find("rect", cls="matched")
    w, h = ROOT_SIZE
    box = (EVIDENCE[0] * w / 1000, EVIDENCE[1] * h / 1000, (EVIDENCE[2] - EVIDENCE[0]) * w / 1000)
    for rect in (expected, crop):
        assert (float(rect.attrs["x"]), float(rect.attrs["y"]), float(rect.attrs["width"])) == box
    assert expected.attrs["data-checkpoint"] == "V1"
    [pair] = dom.find("div", cls="pair")
    assert "matched crop: seq 1" in pair.all_text() and "IoU 1.00" in pair.all_text()
    prose = [m.all_text() for m in dom.find("div", cls="assistant")]
    assert "The square is small; let me crop it." in prose[0] and "answer: 330" in prose[1]
    v1_row = dom.by_id("cp-V1")
    assert sum(1 for cell in v1_row.find("td") if "pass" in cell.classes) == 3
    image = screenshot(page, "scoring_episode_page.png", tmp_path / "profile", (1280, 2000))
    assert image.size == (1280, 2000)
    assert pixels_of(image, EXPECTED) > 200 and pixels_of(image, MATCHED) > 200, "the boxes must be drawn"


def test_episode_page_shows_each_code_blocks_audit(tmp_path: Path) -> None:
    """A per-cell audit table, with the lines that differ highlighted in the code listing."""
    run = tmp_path / "run"
    (run / "gen").mkdir(parents=True)
    code = "img = img.crop((600, 100, 900, 300))\nif False:\n    img = img.rotate(90)\nimg.save(p)\n"
    audit = {
        "available": True,
        "reason": "",
        "written": [],
        "written_not_run": [{"op": "rotate", "line": 3, "reason": "branch at line 2 not taken"}],
        "run_not_written": [{"op": "crop", "line": 1, "how": "getattr"}],
    }
    episode = code_episode(run / "gen", facts={"suite": "x"})
    audited = replace(episode.interactions[0], arguments={"code": code}, audit=audit)
    unreadable = replace(episode.interactions[2], audit={"available": False, "reason": "the cell is not valid Python"})
    episode = replace(episode, interactions=(audited, episode.interactions[1], unreadable))
    score_run(run, ["geometric"], episodes=[episode])
    page = Path(write_report(run)["html"]).parent / "fixture-model-0001-gen.html"
    rows = [r for rows in html_tables(page).values() for r in rows if r and r[0].startswith(("written", "run,"))]
    assert rows == [
        ["written, not run", "rotate", "3", "branch at line 2 not taken"],
        ["run, not written", "crop", "1", "getattr"],
    ]
    dom = Dom.parse(page.read_text())
    [listing] = dom.find("pre", cls="audited")
    [unrun] = listing.find("span", cls="unrun")
    assert "img = img.rotate(90)" in unrun.all_text() and "3" in unrun.all_text()
    assert len(listing.find("span", cls="unwritten")) == 1
    assert "audit unavailable: the cell is not valid Python" in page.read_text()
