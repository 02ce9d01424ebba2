"""``pixelbox list``: what is registered at each extension point, and the docs blocks made from it.

Every list in the docs that names backends, profiles, suites, their metrics, operations, tools,
judges or commands, and every command synopsis, sits between ``<!-- registry: KIND -->`` and
``<!-- /registry -->`` and is written from the registries by ``make docs``
(``python -m pixelbox.cli.registries --write``); ``tests/test_registries.py`` fails when a block is
out of date. ``KIND`` is one of :data:`TABLES`, or ``usage:COMMAND`` for a command's synopsis.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path

from pixelbox.cli.command import Command

BLOCK = re.compile(r"(<!-- registry: (?P<kind>[\w:-]+) -->\n)(?P<body>.*?)(<!-- /registry -->)", re.DOTALL)
USAGE_WIDTH = 100


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def backends_table() -> str:
    """Every backend, its container runtimes and its place in ``backend="auto"``."""
    from pixelbox.runtime.backends import BACKENDS

    rows = [
        [
            f"`{e.name}`",
            ", ".join(f"`{r}`" for r in e.runtimes) or "-",
            "never" if e.auto_rank is None else f"{e.auto_rank + 1}.",
            "off" if e.container else "on",
            e.summary,
        ]
        for e in BACKENDS.entries()
    ]
    return _table(["backend", "runtimes", "tried by `auto`", "policy by default", "what it is"], rows)


def profiles_table() -> str:
    """Every image I/O profile's conventions in words."""
    from pixelbox.runtime.profiles import PROFILES, describe

    rows = []
    for profile in PROFILES.entries():
        words = describe(profile.spec)
        rows.append([f"`{profile.name}`", words["names"], words["inputs"], words["figures"]])
    return _table(["profile", "artifact names", "inputs", "open figures at end of cell"], rows)


def suites_table() -> str:
    """Every benchmark suite."""
    from pixelbox.harness.suites import SUITES

    rows = [
        [
            f"`{s.name}`",
            s.title,
            ", ".join(f"`{m}`" for m in s.modes),
            f"`{s.profile}`",
            ", ".join(f"`{j}`" for j in s.default_judges) or "-",
            s.summary,
        ]
        for s in SUITES.entries()
    ]
    return _table(["suite", "benchmark", "modes", "profile", "default judges", "what it is"], rows)


def metrics_table() -> str:
    """Every suite's metric columns (``Suite.metric_columns()``), the primary one in bold."""
    from pixelbox.harness.suites import SUITES

    rows = []
    for suite in SUITES.entries():
        for column in suite.metric_columns():
            key = f"**`{column.key}`**" if column.key == suite.primary_metric else f"`{column.key}`"
            kind = "fraction (shown as %)" if column.kind == "rate" else "number"
            better = column.better or "-"
            rows.append([f"`{suite.name}`", key, column.label, kind, better, column.description])
    return _table(["suite", "metric", "label", "kind", "better", "what it measures"], rows)


def ops_table() -> str:
    """The canonical operations: visual or not, checkpoint words, atomic tool, replay."""
    from pixelbox.contract.ops import OPS

    rows = [
        [
            f"`{op.name}`",
            "yes" if op.visual else "no",
            ", ".join(f"`{w}`" for w in op.words) or "-",
            "yes" if op.tool is not None else "-",
            "yes" if op.replay else "-",
            op.summary,
        ]
        for op in OPS
    ]
    return _table(["op", "visual", "checkpoint words", "atomic tool", "replayed", "what it covers"], rows)


def tools_table() -> str:
    """The atomic image tools with their parameters."""
    from pixelbox.contract.ops import TOOL_SPECS

    rows = [
        [f"`{s.name}`", "; ".join(p.describe() for p in s.params) or "-", s.description] for s in TOOL_SPECS.values()
    ]
    return _table(["tool", "parameters (besides `image_index`, `label`)", "what it does"], rows)


def judges_table() -> str:
    """The ``--judge`` kinds."""
    from pixelbox.harness.scoring.judges import JUDGES

    return _table(["`--judge`", "what it checks"], [[f"`{k.form}`", k.summary] for k in JUDGES.entries()])


def commands_table() -> str:
    """Every ``pixelbox`` subcommand."""
    from pixelbox.cli import commands

    return _table(["command", "what it does"], [[f"`pixelbox {c.name}`", c.help] for c in commands().entries()])


TABLES: dict[str, Callable[[], str]] = {
    "backends": backends_table,
    "profiles": profiles_table,
    "suites": suites_table,
    "metrics": metrics_table,
    "ops": ops_table,
    "tools": tools_table,
    "judges": judges_table,
    "commands": commands_table,
}


def usage(command: str) -> str:
    """The synopsis of ``pixelbox COMMAND`` as its parser prints it, at a fixed width."""
    from pixelbox.cli import build_parser

    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    child: argparse.ArgumentParser = actions[0].choices[command]
    child.formatter_class = functools.partial(argparse.HelpFormatter, width=USAGE_WIDTH)
    first, *rest = child.format_usage().removeprefix("usage: ").rstrip("\n").splitlines()
    indent = len("usage: ")
    return "\n".join(["```", first, *(line[indent:] for line in rest), "```"])


def render(kind: str) -> str:
    """The generated text of one block kind."""
    if kind.startswith("usage:"):
        return usage(kind.partition(":")[2])
    if kind not in TABLES:
        raise ValueError(f"unknown registry block {kind!r}; known: {', '.join(TABLES)}, usage:COMMAND")
    return TABLES[kind]()


def sync(text: str) -> str:
    """``text`` with every registry block rewritten from the registries."""
    return BLOCK.sub(lambda m: f"{m.group(1)}{render(m.group('kind'))}\n{m.group(4)}", text)


def documents(root: Path) -> list[Path]:
    """The Markdown files that may hold registry blocks: the README and ``docs/``."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def stale_documents(root: Path) -> list[Path]:
    """Documents whose registry blocks differ from what the registries say now."""
    return [path for path in documents(root) if sync(text := path.read_text(encoding="utf-8")) != text]


def write_documents(root: Path) -> list[Path]:
    """Rewrite the stale documents; return them."""
    stale = stale_documents(root)
    for path in stale:
        path.write_text(sync(path.read_text(encoding="utf-8")), encoding="utf-8")
    return stale


def cmd_list(args: argparse.Namespace) -> int:
    """Print what is registered (one kind, or all)."""
    kinds = [args.kind] if args.kind else list(TABLES)
    for kind in kinds:
        print(f"{kind}:\n{TABLES[kind]()}\n")
    return 0


def _list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", nargs="?", choices=list(TABLES), help="one extension point (default: all)")


COMMANDS = (
    Command(
        "list",
        "list what is registered: backends, profiles, suites, metrics, ops, tools, judges, commands",
        _list_arguments,
        cmd_list,
    ),
)


def main(argv: list[str] | None = None) -> int:
    """``--write`` rewrites the docs' registry blocks, ``--check`` fails when one is out of date."""
    parser = argparse.ArgumentParser(prog="python -m pixelbox.cli.registries", description=main.__doc__)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: here)")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true")
    group.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_documents(args.root):
            print(f"rewrote {path}")
        return 0
    stale = stale_documents(args.root)
    for path in stale:
        print(f"{path}: registry blocks are out of date; run `make docs`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
