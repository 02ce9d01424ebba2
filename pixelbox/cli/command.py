"""What a ``pixelbox`` subcommand is, and the arguments several commands share.

Each command module of :mod:`pixelbox.cli` exposes ``COMMANDS``, a tuple of :class:`Command`;
:func:`pixelbox.cli.commands` registers them in the order of ``pixelbox.cli.COMMAND_MODULES``.
The choices of shared arguments (backends, container runtimes, image I/O profiles, suites) are
read from their registries, never written here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

Run = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, how it declares its arguments, and what it runs."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Run
    description: str | None = None
    """Shown by ``pixelbox NAME --help`` (default: no description, as argparse does)."""


def add_backend_arguments(parser: argparse.ArgumentParser, *, runtime: bool = True) -> None:
    """``--backend`` (and ``--runtime``), with the choices of the backend registry."""
    from pixelbox.runtime.backends import AUTO, backend_choices, runtime_choices

    parser.add_argument("--backend", default=AUTO, choices=backend_choices())
    if runtime:
        parser.add_argument("--runtime", default=runtime_choices()[0], choices=runtime_choices())


def add_profile_argument(parser: argparse.ArgumentParser, default: str | None, help_text: str) -> None:
    """``--profile``, with the choices of the image I/O profile registry."""
    from pixelbox.runtime.profiles import PROFILES

    parser.add_argument("--profile", default=default, choices=PROFILES.names(), help=help_text)


def add_suite_argument(parser: argparse.ArgumentParser) -> None:
    """``--suite``, with the choices of the suite registry (default: Agentic-MME)."""
    from pixelbox.harness.suites import DEFAULT_SUITE, SUITES

    parser.add_argument(
        "--suite", default=DEFAULT_SUITE, choices=SUITES.names(), help=f"benchmark suite (default: {DEFAULT_SUITE})"
    )


TRACE_ADVICE = (
    "the trace is damaged before its last line (only a cut-off last line is tolerated); repair or delete that "
    "line, or move the trace aside and run the task again"
)


def harness_errors(func: Run) -> Run:
    """``func`` with the errors a user can fix (bad directory, judge spec, missing file) printed, exit code 2."""

    def run(args: argparse.Namespace) -> int:
        from pixelbox.harness.export import ExportError
        from pixelbox.harness.scoring.judges import JudgeEndpointError, JudgeSpecError, OcrUnavailable
        from pixelbox.harness.scoring.run import RunDirError
        from pixelbox.harness.scoring.view import EpisodeFormatError
        from pixelbox.harness.suites import SuiteError
        from pixelbox.harness.tasks import TaskSourceError, ValidationError
        from pixelbox.harness.traces import TraceFormatError

        try:
            return func(args)
        except TraceFormatError as exc:
            print(f"pixelbox {args.command}: {exc}: {TRACE_ADVICE}", file=sys.stderr)
        except JudgeEndpointError as exc:
            print(f"pixelbox {args.command}: {exc}", file=sys.stderr)
            print("nothing was written; judge answers received so far are cached for the next try", file=sys.stderr)
        except (RunDirError, ExportError, JudgeSpecError, EpisodeFormatError, OcrUnavailable, SuiteError) as exc:
            print(f"pixelbox {args.command}: {exc}", file=sys.stderr)
        except (TaskSourceError, ValidationError, FileNotFoundError) as exc:
            print(f"pixelbox {args.command}: {exc}", file=sys.stderr)
        return 2

    run.__doc__ = func.__doc__
    return run
