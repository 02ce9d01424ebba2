"""The ``pixelbox`` command line: sandboxes, tracing, runs, scoring, reports, the demo.

Every subcommand is a :class:`~pixelbox.cli.command.Command` declared in one of the modules of
:data:`COMMAND_MODULES` (each exposes ``COMMANDS``); :func:`commands` registers them in that
order, which is the order of ``pixelbox --help``. A new command is a ``Command`` in one of those
modules, or a new module added to the tuple. Command functions import what they need when they
run, so ``pixelbox --help`` stays quick.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from functools import cache

from pixelbox.cli.command import Command
from pixelbox.registry import Registry

COMMAND_MODULES = ("sandbox", "trace", "run", "demo", "scoring", "compare", "tasks", "mcp", "registries")
"""Modules of this package that declare commands, in ``--help`` order."""


@cache
def commands() -> Registry[Command]:
    """Every subcommand, by name."""
    found: Registry[Command] = Registry("command")
    for name in COMMAND_MODULES:
        for command in importlib.import_module(f"{__name__}.{name}").COMMANDS:
            found.add(command.name, command)
    return found


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = argparse.ArgumentParser(prog="pixelbox", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in commands().entries():
        child = sub.add_parser(command.name, help=command.help, description=command.description)
        command.configure(child)
        child.set_defaults(func=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pixelbox`` script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        from pixelbox.runtime.errors import PixelboxError

        if isinstance(exc, PixelboxError):
            print(f"pixelbox: {exc}", file=sys.stderr)
            return 2
        raise
