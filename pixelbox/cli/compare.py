"""``pixelbox compare RUN [RUN ...]``: scored runs side by side (models, modes, suites).

Writes ``OUT/index.html`` (aggregate tables, per-category and per-level charts, paired bootstrap
intervals on the differences, a per-task grid linking each cell to its episode page), ``OUT/compare.md``
with the same tables and ``OUT/compare.json``; prints the aggregate and the differences. A run without
an HTML report gets one first (``pixelbox report``), so the grid's links lead somewhere.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pixelbox.cli.command import Command, harness_errors

HELP = "compare scored runs side by side: aggregates, charts, per-task grid, paired bootstrap intervals"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``pixelbox compare``'s options."""
    from pixelbox.harness.compare.stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED

    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directories scored with `pixelbox score`")
    parser.add_argument("--out", type=Path, default=Path("compare"), help="output directory (default: ./compare)")
    parser.add_argument(
        "--label", action="append", default=[], help="a name for each RUN, in order (default: folder names)"
    )
    parser.add_argument("--metric", default=None, help="metric key to compare on (default: each suite's primary, acc)")
    parser.add_argument(
        "--resamples", type=int, default=DEFAULT_RESAMPLES, help=f"bootstrap resamples (default {DEFAULT_RESAMPLES})"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED})")
    parser.add_argument(
        "--confidence", type=float, default=DEFAULT_CONFIDENCE, help=f"interval level (default {DEFAULT_CONFIDENCE})"
    )


def run(args: argparse.Namespace) -> int:
    """Execute ``pixelbox compare``: 0 when the report was written, 2 for runs that cannot be compared."""
    from pixelbox.harness.compare import build_comparison, load_systems, write_comparison
    from pixelbox.harness.scoring.run import REPORT_DIR, RunDirError, write_report

    try:
        systems = load_systems(args.runs, args.label)
        for root in dict.fromkeys(s.run for s in systems):
            if not (root / REPORT_DIR / "index.html").is_file():
                write_report(root)
                print(f"wrote the missing report of {root}: {root / REPORT_DIR / 'index.html'}")
        comparison = build_comparison(
            systems, metric=args.metric, resamples=args.resamples, seed=args.seed, confidence=args.confidence
        )
    except (RunDirError, ValueError) as exc:
        print(f"pixelbox compare: {exc}", file=sys.stderr)
        return 2
    paths = write_comparison(args.out, comparison, systems)
    print(summary_text(comparison))
    print(f"comparison: {paths['html']}\nmarkdown:   {paths['markdown']}\ndata:       {paths['json']}")
    return 0


def summary_text(comparison: dict[str, Any]) -> str:
    """Per suite: each system's primary metric, then each pair's difference with its interval."""
    from pixelbox.harness.scoring.columns import INFRASTRUCTURE, Column

    lines = []
    for suite in comparison["suites"]:
        metric = Column.from_dict(suite["metric_column"])
        scale, unit = (100, " pp") if metric.kind == "rate" else (1, "")
        lines.append(f"{suite['suite']} ({metric.label}):")
        for row in suite["aggregate"]:
            value = row.get(metric.key)
            shown = INFRASTRUCTURE if value is None else metric.format(value)
            lines.append(f"  {row['system']}: {shown} over {row['n']} episode(s), {row['infrastructure']} infra")
        for pair in suite["pairs"]:
            if not pair["tasks"]:
                lines.append(f"  {pair['a']} vs {pair['b']}: no shared task")
                continue
            verdict = "significant" if pair["significant"] else "not significant"
            low, high = scale * pair["low"], scale * pair["high"]
            lines.append(
                f"  {pair['a']} - {pair['b']}: {scale * pair['difference']:+.1f}{unit}, "
                f"{100 * pair['confidence']:.0f}% interval [{low:+.1f}, {high:+.1f}] "
                f"over {pair['tasks']} shared task(s), p={pair['p']:.3f} ({verdict})"
            )
        differ = sum(1 for row in suite["grid"] if row["differs"])
        lines.append(f"  tasks where the systems differ: {differ} of {len(suite['grid'])}")
    return "\n".join(lines)


COMMANDS = (Command("compare", HELP, add_arguments, harness_errors(run), HELP),)
