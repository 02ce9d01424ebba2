"""``pixelbox demo``: generate the tasks, replay their solutions in both modes, score, report, export.

Everything runs offline: the pictures are drawn here, the agents are replay agents, no web tool
is offered, and the judges are tesseract (OCR) and lineage geometry. Output directory::

    OUT/tasks/, OUT/recordings/      the generated tasks and solutions (rewritten each time)
    OUT/runs/gen/, OUT/runs/atm/     the run directories (traces and image copies)
    OUT/runs/scores.json, report.*   scores; OUT/runs/report/index.html is the HTML report
    OUT/export/                      the runs in the official Agentic-MME layout
    OUT/runs/vtool_comparison.json   our V_tool next to the official checkpoint semantics
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pixelbox.harness.demo.build import write_demo
from pixelbox.harness.modes import MODES

if TYPE_CHECKING:
    from pixelbox.harness.agents.base import Agent

JUDGES = ("ocr", "geometric")
TABLE = (("n", "n"), ("acc", "Acc"), ("v_tool", "V_tool"), ("v_true", "V_true"), ("v", "V"), ("calls", "calls/task"),
         ("overthink", "Overthink"))  # fmt: skip


@dataclass(frozen=True)
class DemoOutcome:
    """What the demo produced: the summary rows, the report files and the comparison rows."""

    out: Path
    summary: dict[str, Any]
    report: dict[str, str]
    comparison: list[dict[str, Any]]
    failures: list[str]


def run_demo(out: str | Path, *, backend: str = "auto", concurrency: int = 1, progress: bool = True) -> DemoOutcome:
    """Run the whole demo under ``out`` (earlier demo runs there are replaced)."""
    from pixelbox.harness.export import export_run
    from pixelbox.harness.export.official_vtool import compare_run
    from pixelbox.harness.runner import run_tasks
    from pixelbox.harness.scoring.run import score_run, write_report
    from pixelbox.harness.tasks import load_tasks
    from pixelbox.runtime.options import SandboxOptions

    root = Path(out)
    for stale in (root / "runs", root / "export"):
        shutil.rmtree(stale, ignore_errors=True)
    files = write_demo(root)
    tasks = load_tasks(files.tasks)
    options = SandboxOptions(backend=backend)
    failures: list[str] = []
    for mode in MODES:
        folder = files.recordings[mode]
        summary = run_tasks(
            tasks,
            agent_factory=_replay_agents(folder),
            mode=mode,
            out_dir=root / "runs" / mode,
            sandbox_options=options,
            concurrency=concurrency,
            progress=progress,
        )
        failures += [f"{mode}/{e['task_id']}: {e['error']}" for e in summary.failed]
        export_run(root / "runs" / mode, root / "export")
    scores = score_run(root / "runs", list(JUDGES), progress=progress)
    report = write_report(root / "runs")
    comparison = compare_run(scores, root / "export")
    (root / "runs" / "vtool_comparison.json").write_text(json.dumps(comparison, indent=1), encoding="utf-8")
    failures += _wrong_answers(scores)
    return DemoOutcome(root, scores["summary"], report, comparison, failures)


def _replay_agents(folder: Path) -> Callable[[Any], Agent]:
    """One replay agent per task, from the recordings in ``folder``."""
    from pixelbox.harness.agents.replay import ReplayAgent

    def make(task: Any) -> Agent:
        return ReplayAgent.from_file(folder, task.task_id, model="replay-demo")

    return make


def _wrong_answers(scores: dict[str, Any]) -> list[str]:
    return [
        f"{e['score']['mode']}/{e['score']['task_id']}: {e['score']['acc_reason']}"
        for e in scores["episodes"]
        if not e["score"]["acc"]
    ]


def summary_table(summary: dict[str, Any]) -> str:
    """The per-mode overall rows as a small text table."""
    rows = [r for r in summary["rows"] if r["level"] == "overall"]
    head = ["mode", *(title for _, title in TABLE)]
    cells = [[r["mode"], *(_cell(r.get(key), key) for key, _ in TABLE)] for r in rows]
    widths = [max(len(str(x)) for x in column) for column in zip(head, *cells, strict=True)]
    lines = ["  ".join(str(x).rjust(w) for x, w in zip(line, widths, strict=True)) for line in [head, *cells]]
    return "\n".join(lines)


def _cell(value: Any, key: str) -> str:
    if value is None:
        return "-"
    if key == "n":
        return str(value)
    return f"{value:.2f}" if key in ("calls", "overthink") else f"{100 * value:.0f}%"
