"""``pixelbox demo --suite mmsearch-plus`` and ``--suite mmsearch-plus-som`` through the CLI on the local backend,
then ``pixelbox run`` of the demo's encrypted dataset with a recorded model, ``score`` and ``report`` by CLI."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from pixelbox.cli import main


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def test_both_demos_and_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIXELBOX_CACHE", str(tmp_path / "cache"))
    code, printed = _cli(
        "demo", "--suite", "mmsearch-plus", "--out", str(tmp_path / "full"), "--backend", "local", "--quiet"
    )
    assert code == 0, printed
    assert "| atm | overall | 2 | 0 | 100.0% | 1.00 | 1.00 | 0.00 | 0.00 |" in printed
    code, printed = _cli(
        "demo", "--suite", "mmsearch-plus-som", "--out", str(tmp_path / "som"), "--backend", "local", "--quiet"
    )
    assert code == 0, printed
    scores = json.loads((tmp_path / "som" / "run" / "scores.json").read_text())
    assert scores["suite"] == "mmsearch-plus-som"
    assert [r["score"]["metrics"]["zooms"] for r in scores["episodes"]] == [1.0, 1.0]
    assert all(r["score"]["metrics"]["visual_ops"] >= 1.0 for r in scores["episodes"])

    # the CLI on the same encrypted dataset, the demo's recordings and web cache
    run = tmp_path / "cli-run"
    code, printed = _cli(
        "run", "--suite", "mmsearch-plus", "--tasks", str(tmp_path / "full" / "tasks" / "dataset"),
        "--agent", f"replay:{tmp_path / 'full' / 'recordings'}", "--web", "replay",
        "--web-cache", str(tmp_path / "full" / "web-cache"), "--backend", "local", "--out", str(run), "--no-progress",
    )  # fmt: skip
    assert code == 0, printed
    code, printed = _cli("score", "--suite", "mmsearch-plus", str(run))
    assert code == 0 and "100.0%" in printed, printed
    code, printed = _cli("report", "--suite", "mmsearch-plus", str(run))
    assert code == 0 and (run / "report" / "index.html").is_file(), printed
