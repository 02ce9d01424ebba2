"""``pixelbox demo``: generate the tasks, replay two models' solutions in both modes, score, report,
compare, export.

Everything runs offline: the pictures are drawn here, the agents are replay agents (the reference
solutions, and a hastier model's with its mistakes, :mod:`.hasty`), no web tool is offered, and
the judges are tesseract (OCR) and lineage geometry. Output directory (see :data:`LAYOUT`)::

    OUT/tasks/                       the generated tasks: json/NNNN.json and images/ (Agentic-MME layout)
    OUT/recordings/, OUT/recordings-hasty/   the recorded solutions the replay agents play (gen/, atm/)
    OUT/runs/gen/, OUT/runs/atm/     the reference run: traces in episodes/*.jsonl, image copies
    OUT/runs/report/index.html       its HTML report (report.md, report.json, scores.json beside it)
    OUT/runs-hasty/                  the hasty model's runs and report, laid out the same way
    OUT/compare/index.html           the two models side by side (compare.md, compare.json beside it)
    OUT/export/                      the reference runs in the official Agentic-MME layout
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
from pixelbox.harness.demo.hasty import HASTY
from pixelbox.harness.demo.hasty import MODEL as HASTY_MODEL
from pixelbox.harness.modes import MODES

if TYPE_CHECKING:
    from pixelbox.harness.agents.base import Agent

JUDGES = ("ocr", "geometric")
REFERENCE_MODEL = "replay-demo"
TABLE = (("n", "n"), ("acc", "Acc"), ("v_tool", "V_tool"), ("v_true", "V_true"), ("v", "V"), ("calls", "calls/task"),
         ("overthink", "Overthink"))  # fmt: skip
LAYOUT = (
    ("tasks", "tasks", "the generated tasks: json/NNNN.json and images/"),
    ("recordings", "recordings", "the recorded solutions replayed, gen/ and atm/"),
    ("traces", "runs/{gen,atm}/episodes", "one JSONL trace per episode, with image copies"),
    ("report", "runs/report/index.html", "HTML report; runs/report.md has the same tables"),
    ("second model", "runs-hasty/report/index.html", "the hasty model's report"),
    ("comparison", "compare/index.html", "both models side by side; compare.md beside it"),
    ("official layout", "export", "the reference runs as the official Agentic-MME runner writes them"),
)
"""What the demo writes, relative to its output directory: ``(name, path, what)`` (printed, and in --help)."""
DESCRIPTION = (
    "draws five small tasks in the Agentic-MME layout, replays recorded solutions of two models (a reference and "
    "a hastier one) in code mode (gen) and atomic mode (atm) through real sandboxes, scores them with the offline "
    "judges (tesseract OCR, lineage geometry), writes both reports and their comparison, and exports the reference "
    "runs to the official layout. Earlier demo output in --out is replaced."
)


@dataclass(frozen=True)
class DemoOutcome:
    """What the demo produced: the reference summary rows, the report files and the V_tool comparison rows."""

    out: Path
    summary: dict[str, Any]
    report: dict[str, str]
    comparison: list[dict[str, Any]]
    failures: list[str]
    compared: dict[str, str]


def run_demo(out: str | Path, *, backend: str = "auto", concurrency: int = 1, progress: bool = True) -> DemoOutcome:
    """Run the whole demo under ``out`` (earlier demo runs there are replaced)."""
    from pixelbox.harness.compare import build_comparison, load_systems, write_comparison
    from pixelbox.harness.demo.recordings import write_recordings
    from pixelbox.harness.export import export_run
    from pixelbox.harness.export.official_vtool import compare_run
    from pixelbox.harness.scoring.run import score_run, write_report
    from pixelbox.harness.tasks import load_tasks

    root = Path(out)
    for stale in ("runs", "runs-hasty", "compare", "export"):
        shutil.rmtree(root / stale, ignore_errors=True)
    files = write_demo(root)
    tasks = load_tasks(files.tasks)
    settings = _Settings(backend, concurrency, progress)
    failures = _play(tasks, files.recordings, REFERENCE_MODEL, root / "runs", settings)
    for mode in MODES:
        export_run(root / "runs" / mode, root / "export")
    scores = score_run(root / "runs", list(JUDGES), progress=progress)
    report = write_report(root / "runs")
    comparison = compare_run(scores, root / "export")
    (root / "runs" / "vtool_comparison.json").write_text(json.dumps(comparison, indent=1), encoding="utf-8")
    hasty = write_recordings(root / "recordings-hasty", HASTY)
    failures += _play(tasks, hasty, HASTY_MODEL, root / "runs-hasty", settings)
    score_run(root / "runs-hasty", list(JUDGES), progress=progress)
    write_report(root / "runs-hasty")
    systems = load_systems([root / "runs", root / "runs-hasty"], [REFERENCE_MODEL, HASTY_MODEL])
    compared = write_comparison(root / "compare", build_comparison(systems), systems)
    failures += _wrong_answers(scores)
    return DemoOutcome(root, scores["summary"], report, comparison, failures, compared)


@dataclass(frozen=True)
class _Settings:
    backend: str
    concurrency: int
    progress: bool


def _play(tasks: list[Any], recordings: dict[str, Path], model: str, out: Path, settings: _Settings) -> list[str]:
    """Replay ``recordings`` of every task in both modes into ``out/gen`` and ``out/atm``; harness failures."""
    from pixelbox.harness.runner import run_tasks
    from pixelbox.runtime.options import SandboxOptions

    failures = []
    for mode in MODES:
        summary = run_tasks(
            tasks,
            agent_factory=_replay_agents(recordings[mode], model),
            mode=mode,
            out_dir=out / mode,
            sandbox_options=SandboxOptions(backend=settings.backend),
            concurrency=settings.concurrency,
            progress=settings.progress,
        )
        failures += [f"{model} {mode}/{e['task_id']}: {e['error']}" for e in summary.failed]
    return failures


def _replay_agents(folder: Path, model: str) -> Callable[[Any], Agent]:
    """One replay agent per task, from the recordings in ``folder``, named ``model``."""
    from pixelbox.harness.agents.replay import ReplayAgent

    def make(task: Any) -> Agent:
        return ReplayAgent.from_file(folder, task.task_id, model=model)

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


def help_text(width: int = 100) -> str:
    """:data:`DESCRIPTION`, wrapped, and what the demo writes under ``OUT`` (``pixelbox demo --help``)."""
    import textwrap

    named = max(len(name) for name, _, _ in LAYOUT) + 1
    lines = [f"  {name + ':':<{named}} OUT/{path}  ({what})" for name, path, what in LAYOUT]
    return (
        textwrap.fill(DESCRIPTION, width)
        + "\n\nWhat it writes under OUT (--out, default runs/demo):\n"
        + "\n".join(lines)
    )


def where_lines(out: Path) -> list[str]:
    """One line per thing the demo wrote: what it is and where."""
    width = max(len(name) for name, _, _ in LAYOUT) + 1
    return [f"{name + ':':<{width}} {out / path}  ({what})" for name, path, what in LAYOUT]


def _cell(value: Any, key: str) -> str:
    if value is None:
        return "-"
    if key == "n":
        return str(value)
    return f"{value:.2f}" if key in ("calls", "overthink") else f"{100 * value:.0f}%"
