"""Run-level scoring and reports: scores.json, JSON/Markdown summaries, and the HTML report in headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from pixelbox.harness.scoring.html import MATCHED
from pixelbox.harness.scoring.run import RunDirError, score_run, write_report
from tests.scoring.builders import EVIDENCE_PX, atomic_episode, code_episode

ARTIFACTS = Path(os.environ.get("PIXELBOX_TEST_ARTIFACTS", "/tmp/pixelbox-test-artifacts"))
"""Where tests leave files for a reviewer to look at (outside the repository and pytest's tmp_path)."""

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def scored_run(run: Path) -> dict:
    (run / "gen").mkdir(parents=True)
    (run / "atm").mkdir()
    episodes = [code_episode(run / "gen"), atomic_episode(run / "atm", answer="about 200")]
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
    assert result["summary"]["failures"] == {"post_visual_perception_deficit": 1}


def test_write_report_needs_scores_first(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="pixelbox score"):
        write_report(tmp_path)


def test_markdown_and_json_reports(tmp_path: Path) -> None:
    scored_run(tmp_path)
    paths = write_report(tmp_path)
    markdown = Path(paths["markdown"]).read_text()
    assert "| gen | L2 | 1 | 100.0% | 100.0% |" in markdown
    assert "post_visual_perception_deficit: 1" in markdown
    report = json.loads(Path(paths["json"]).read_text())
    assert report["judges"] == ["ocr", "geometric"] and report["episodes"] == 2


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is required in CI (Debian package 'chromium')")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def browse(binary: str, page: Path, profile: Path, *extra: str) -> str:
    done = subprocess.run(
        [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    binary = chromium()
    run = tmp_path / "run"
    scored_run(run)
    index = Path(write_report(run)["html"])
    dom = browse(binary, index, tmp_path / "profile", "--dump-dom")
    assert '<table id="summary">' in dom and "fixture-model-0001-gen.html" in dom
    page = index.parent / "fixture-model-0001-gen.html"
    dom = browse(binary, page, tmp_path / "profile", "--virtual-time-budget=3000", "--dump-dom")
    assert 'class="overlay"' in dom and 'data-loaded="yes"' in dom and 'data-crops="1"' in dom
    v1_row = dom.split('id="cp-V1"', 1)[1].split("</tr>", 1)[0]
    assert v1_row.count("verdict pass") == 3
    overlay = Image.open(index.parent / "assets" / "fixture-model-0001-gen_overlay_0.png").convert("RGB")
    assert overlay.getpixel((EVIDENCE_PX[0] + 1, (EVIDENCE_PX[1] + EVIDENCE_PX[3]) // 2)) == MATCHED
    shot = ARTIFACTS / "scoring_episode_page.png"  # kept for review: pytest deletes tmp_path
    shot.parent.mkdir(parents=True, exist_ok=True)
    shot.unlink(missing_ok=True)
    browse(binary, page, tmp_path / "profile", "--window-size=1280,2000", f"--screenshot={shot}")
    with Image.open(shot) as image:
        assert image.size == (1280, 2000)
    print(f"screenshot saved at {shot}")
