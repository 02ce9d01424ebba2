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
from collections.abc import Callable, Sequence
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
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # an extra this install lacks: the command says which
            if (exc.name or "").split(".")[0] not in EXTRA_OF_MODULE:
                raise
            found.add(name, _placeholder(name, missing_extra(exc)))
            continue
        for command in module.COMMANDS:
            found.add(command.name, command)
    return found


def _placeholder(name: str, reason: str) -> Command:
    """A command whose module needs an extra that is not installed: listed, and says so when run."""

    def configure(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("ignored", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    return Command(name, f"(not installed) {reason.split(': ')[-1]}", configure, _unavailable(reason))


EXTRA_OF_MODULE = {
    "numpy": "harness",
    "cv2": "harness",
    "openai": "harness",
    "tqdm": "harness",
    "pyarrow": "parquet",
    "fsspec": "ray",
    "ipykernel": "local",
    "RestrictedPython": "local",
    "scipy": "local",
    "skimage": "local",
    "matplotlib": "local",
    "inspect_ai": "inspect",
    "mcp": "mcp",
    "ray": "ray",
}
"""Which extra installs a module some command needs (the base install is the Docker runtime only)."""


def missing_extra(exc: ModuleNotFoundError) -> str:
    """What to tell a user whose install lacks the extra a command needs."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(top, "all")
    return (
        f"this command needs the {top or 'missing'} package, which the base install leaves out: "
        f"pip install 'pixelbox[{extra}]'"
    )


def _unavailable(reason: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        print(f"pixelbox {args.command}: {reason}", file=sys.stderr)
        return 2

    return run


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs).

    A command whose arguments need an extra that is not installed (the suites' names, say) is
    still listed, and says which extra to install when it is run.
    """
    parser = argparse.ArgumentParser(prog="pixelbox", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in commands().entries():
        child = sub.add_parser(command.name, help=command.help, description=command.description)
        try:
            command.configure(child)
        except ModuleNotFoundError as exc:
            child.add_argument("ignored", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            child.set_defaults(func=_unavailable(missing_extra(exc)))
            continue
        child.set_defaults(func=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pixelbox`` script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in EXTRA_OF_MODULE:
            raise
        print(f"pixelbox {args.command}: {missing_extra(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        from pixelbox.runtime.errors import PixelboxError

        if isinstance(exc, PixelboxError):
            print(f"pixelbox: {exc}", file=sys.stderr)
            return 2
        raise
