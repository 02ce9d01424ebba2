"""``pixelbox tasks check DIR``: list every deviation of a task set from the documented format.

Prints one line per deviation (file, field, what was found and what the loader does about it) and
exits 1 only when some task is unusable (no loader could run it), else 0.
"""

from __future__ import annotations

import argparse
import sys

from pixelbox.cli.command import Command, harness_errors

HELP = "check a task set: every deviation from the documented format, with file and field"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``pixelbox tasks``' actions."""
    sub = parser.add_subparsers(dest="action", required=True)
    check = sub.add_parser("check", help=HELP)
    check.add_argument(
        "path", metavar="DIR", help="an Agentic-MME root (with json/), its json/ folder, or one task file"
    )


def run(args: argparse.Namespace) -> int:
    """Print the notes; exit 1 when a task is unusable."""
    from pixelbox.harness.tasks.check import check_task_set

    notes = check_task_set(args.path)
    for note in notes:
        print(f"{note.severity}: {note}")
    unusable = sum(1 for n in notes if n.severity == "unusable")
    files = len({n.file for n in notes})
    print(f"{len(notes)} deviation(s) in {files} file(s); {unusable} unusable", file=sys.stderr)
    return 1 if unusable else 0


COMMANDS = (Command("tasks", HELP, add_arguments, harness_errors(run), __doc__.splitlines()[0] if __doc__ else None),)
