"""Command-line entry points of the harness: ``demo``, ``score``, ``report`` and ``export``.

``pixelbox.cli`` registers them with :func:`register`; the functions import what they need when
they run, so ``pixelbox --help`` stays quick.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Callable
from typing import Any

Command = Callable[[argparse.Namespace], int]
INFRA_HELP = (
    "count episodes ended by infrastructure (agent endpoint, sandbox or harness errors, unfinished traces) "
    "as failures in the metrics; by default they are reported apart"
)
TRACE_ADVICE = (
    "the trace is damaged before its last line (only a cut-off last line is tolerated); repair or delete that "
    "line, or move the trace aside and run the task again"
)


DEMO_DESCRIPTION = (
    "The offline demo: draws five small tasks in the Agentic-MME layout, replays recorded solutions of two models "
    "(a reference and a hastier one) in code mode (gen) and atomic mode (atm) through real sandboxes, scores them "
    "with the offline judges (tesseract OCR, lineage geometry), writes both reports and their comparison, and "
    "exports the reference runs to the official layout. Earlier demo output in --out is replaced."
)


def _demo_layout() -> str:
    from pixelbox.harness.demo.run import LAYOUT

    width = max(len(name) for name, _, _ in LAYOUT) + 1
    lines = [f"  {name + ':':<{width}} OUT/{path}  ({what})" for name, path, what in LAYOUT]
    return "what it writes under OUT (--out, default runs/demo):\n" + "\n".join(lines)


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the offline demo end to end and print the per-mode table and where the report is."""
    from pixelbox.harness.demo.run import run_demo, summary_table, where_lines

    outcome = run_demo(args.out, backend=args.backend, concurrency=args.concurrency, progress=not args.quiet)
    print(summary_table(outcome.summary))
    differing = [r for r in outcome.comparison if r["ours"] != r["official"]]
    agree = len(outcome.comparison) - len(differing)
    print(f"V_tool vs official checkpoint semantics: {agree}/{len(outcome.comparison)} checkpoints agree")
    print("\n".join(where_lines(outcome.out)))
    for failure in outcome.failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if outcome.failures else 0


def cmd_score(args: argparse.Namespace) -> int:
    """Score every episode of a run with the given judges; prints the summary rows."""
    from pixelbox.harness.scoring.report import to_markdown
    from pixelbox.harness.scoring.run import SCORES_FILE, score_run
    from pixelbox.harness.scoring.score import ScoringOptions

    judges = args.judge or ["ocr", "geometric"]
    options = ScoringOptions(trust_tampered=args.trust_tampered, replay=not args.no_replay)
    result = score_run(
        args.run_dir,
        judges,
        progress=not args.quiet,
        options=options,
        include_infrastructure=args.include_infrastructure,
    )
    print(to_markdown(result["summary"]), end="")
    print(f"scores: {args.run_dir.rstrip('/')}/{SCORES_FILE}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Write report.json, report.md and the HTML report from a scored run."""
    from pixelbox.harness.scoring.run import write_report

    paths = write_report(args.run_dir, include_infrastructure=True if args.include_infrastructure else None)
    print(json.dumps(paths, indent=1))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Export a run to the official Agentic-MME output layout."""
    from pixelbox.harness.export import export_run

    exported = export_run(args.run_dir, args.out)
    for item in exported:
        note = "" if item.finished else " (unfinished: no run_meta.json, scored as incomplete)"
        print(f"{item.directory}{note}")
    print(f"{len(exported)} episode(s) exported to {args.out}")
    return 0


def register(sub: Any) -> None:
    """Add the harness commands to ``pixelbox``'s subparsers."""
    from pixelbox.harness.scoring.judges import JUDGE_SPECS

    demo = _add(sub, "demo", cmd_demo, "run the offline demo: generated tasks, both modes, scores, report, export")
    demo.description = textwrap.fill(DEMO_DESCRIPTION, 100)
    demo.epilog = _demo_layout()
    demo.formatter_class = argparse.RawDescriptionHelpFormatter
    demo.add_argument("--out", default="runs/demo", help="output directory (default: runs/demo)")
    demo.add_argument("--backend", default="auto", choices=["auto", "docker", "local"])
    demo.add_argument("--concurrency", type=int, default=1, help="episodes run at once (default 1)")
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    score = _add(sub, "score", cmd_score, "score a run from its traces (writes RUN_DIR/scores.json)")
    score.add_argument("run_dir", help="a run directory written by pixelbox run (or its parent)")
    score.add_argument(
        "--judge", action="append", help=f"V_true/S judge, repeatable: {JUDGE_SPECS} (default: ocr and geometric)"
    )
    score.add_argument("--quiet", action="store_true", help="no progress bar")
    score.add_argument("--include-infrastructure", action="store_true", help=INFRA_HELP)
    score.add_argument(
        "--trust-tampered",
        action="store_true",
        help="let operations of executions flagged as tampered satisfy V_tool checkpoints (default: untrusted)",
    )
    score.add_argument(
        "--no-replay",
        action="store_true",
        help="judge artifacts without replaying their recorded chain first (default: replay and drop mismatches)",
    )
    report = _add(sub, "report", cmd_report, "write the JSON, Markdown and HTML reports of a scored run")
    report.add_argument("run_dir")
    report.add_argument(
        "--include-infrastructure", action="store_true", help=INFRA_HELP + " (default: as chosen when scoring)"
    )
    export = _add(sub, "export", cmd_export, "export a run to the official Agentic-MME output layout")
    export.add_argument("run_dir")
    export.add_argument("--out", required=True, help="where to write {mode}/{model}/{task_id}/")


def _add(sub: Any, name: str, func: Command, text: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=text, description=text)
    parser.set_defaults(func=_friendly(func))
    return parser


def _friendly(func: Command) -> Command:
    """``func`` with the errors a user can fix (bad directory, judge spec, missing file) printed, exit code 2."""

    def run(args: argparse.Namespace) -> int:
        from pixelbox.harness.export import ExportError
        from pixelbox.harness.scoring.judges import JudgeEndpointError, JudgeSpecError, OcrUnavailable
        from pixelbox.harness.scoring.run import RunDirError
        from pixelbox.harness.scoring.view import EpisodeFormatError
        from pixelbox.harness.tasks import TaskSourceError, ValidationError
        from pixelbox.harness.traces import TraceFormatError

        try:
            return func(args)
        except TraceFormatError as exc:
            print(f"pixelbox {args.command}: {exc}: {TRACE_ADVICE}", file=sys.stderr)
        except JudgeEndpointError as exc:
            print(f"pixelbox {args.command}: {exc}", file=sys.stderr)
            print("nothing was written; judge answers received so far are cached for the next try", file=sys.stderr)
        except (RunDirError, ExportError, JudgeSpecError, EpisodeFormatError, OcrUnavailable) as exc:
            print(f"pixelbox {args.command}: {exc}", file=sys.stderr)
        except (TaskSourceError, ValidationError, FileNotFoundError) as exc:
            print(f"pixelbox {args.command}: {exc}", file=sys.stderr)
        return 2

    run.__doc__ = func.__doc__
    return run
