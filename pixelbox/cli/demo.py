"""``pixelbox demo``: a suite's bundled tasks solved offline with recorded solutions, scored and reported."""

from __future__ import annotations

import argparse
import sys

from pixelbox.cli.command import Command, add_backend_arguments, add_suite_argument, harness_errors


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the offline demo of a suite end to end and print its summary and where the report is."""
    from pixelbox.harness.suites import SUITES

    result = SUITES.get(args.suite).run_demo(
        args.out, backend=args.backend, concurrency=args.concurrency, progress=not args.quiet
    )
    for line in result.lines:
        print(line)
    for failure in result.failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if result.failures else 0


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    from pixelbox.harness.suites import SUITES

    helps = [(suite.name, suite.demo_help()) for suite in SUITES.entries()]
    parser.epilog = "\n\n".join(f"--suite {name}:\n{text}" for name, text in helps if text) or None
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--out", default="runs/demo", help="output directory (default: runs/demo)")
    add_backend_arguments(parser, runtime=False)
    parser.add_argument("--concurrency", type=int, default=1, help="episodes run at once (default 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_suite_argument(parser)


DEMO_HELP = "run the offline demo: generated tasks, both modes, two models, scores, reports, comparison, export"
COMMANDS = (Command("demo", DEMO_HELP, _demo_arguments, harness_errors(cmd_demo), DEMO_HELP),)
