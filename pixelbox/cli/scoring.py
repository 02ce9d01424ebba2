"""``pixelbox score``, ``report`` and ``export``: a run's traces scored, reported and exported.

Each takes ``--suite`` (default Agentic-MME): the suite's own scoring, reports and official layout.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pixelbox.cli.command import Command, add_suite_argument, harness_errors

INFRA_HELP = (
    "count episodes ended by infrastructure (agent endpoint, sandbox or harness errors, unfinished traces) "
    "as failures in the metrics; by default they are reported apart"
)


def cmd_score(args: argparse.Namespace) -> int:
    """Score every episode of a run with the given judges (default: the suite's); prints the summary.

    ``--semantics official`` (Agentic-MME) scores the run's official export as the official evaluator
    does and writes its summary files; ``both`` (the default) does both and lists where they disagree.
    """
    from pixelbox.harness.scoring.score import ScoringOptions
    from pixelbox.harness.suites import SUITES

    suite = SUITES.get(args.suite)
    judges = args.judge or list(suite.default_judges)
    semantics = args.semantics if args.suite == "agentic-mme" else "verified"
    result = None
    if semantics in ("verified", "both"):
        options = ScoringOptions(trust_tampered=args.trust_tampered, replay=not args.no_replay)
        result = suite.score_run(
            args.run_dir,
            judges,
            progress=not args.quiet,
            options=options,
            include_infrastructure=args.include_infrastructure,
        )
        for line in suite.score_lines(result, args.run_dir):
            print(line)
    if semantics == "official":
        _official(args.run_dir, judges, result)
    elif semantics == "both":
        from pixelbox.harness.export import ExportError

        try:
            _official(args.run_dir, judges, result)
        except ExportError as exc:
            print(f"official semantics skipped (the run cannot be exported: {exc}); verified scores are above")
    return 0


def _official(run_dir: str, judges: list[str], verified: dict[str, Any] | None) -> None:
    """The official semantics: scored export, summary files, and the comparison with ours."""
    from pixelbox.harness.export.official_score import official_score_run
    from pixelbox.harness.export.semantics import episode_rows, semantics_markdown, summary_lines
    from pixelbox.harness.scoring.judges import parse_endpoint

    spec = next((j for j in judges if j.startswith("openai:")), None)
    endpoint = parse_endpoint(spec) if spec else None
    root, summaries, errors = official_score_run(run_dir, endpoint)
    for line in summary_lines(summaries):
        print(line)
    if endpoint is None:
        print(
            "official: no --judge openai:MODEL[@URL] given, so visual checks and search checkpoints fail (as the "
            "official evaluator's do when its API is unreachable)"
        )
    elif errors:
        print(f"official: {errors} judge call(s) failed and counted as failed checks")
    if verified is None:
        return
    rows, disagreements = episode_rows(verified, Path(root))
    print(semantics_markdown(rows, disagreements), end="")
    (Path(run_dir) / "semantics.json").write_text(
        json.dumps({"episodes": rows, "disagreements": disagreements}, indent=1, default=str), encoding="utf-8"
    )


def cmd_report(args: argparse.Namespace) -> int:
    """Write report.json, report.md and the HTML report from a scored run; with several runs, each run's report
    (by the suite its scores name) and one page putting them side by side, the same model across suites."""
    from pixelbox.harness.suites import SUITES

    include = True if args.include_infrastructure else None
    if len(args.run_dir) == 1:
        paths = SUITES.get(args.suite).write_report(args.run_dir[0], include_infrastructure=include)
        print(json.dumps(paths, indent=1))
        return 0
    for run_dir in args.run_dir:
        paths = SUITES.get(_scored_suite(run_dir, args.suite)).write_report(run_dir, include_infrastructure=include)
        print(f"{run_dir}: {paths['html']}")
    return _side_by_side(args.run_dir, args.out)


def _scored_suite(run_dir: str, fallback: str) -> str:
    """The suite a scored run's records name (``fallback`` when they name none)."""
    from pixelbox.harness.scoring.run import read_scores

    named = {str(r["score"].get("suite")) for r in read_scores(Path(run_dir))["episodes"] if r["score"].get("suite")}
    return named.pop() if len(named) == 1 else fallback


def _side_by_side(runs: list[str], out: str) -> int:
    from pixelbox.cli.compare import summary_text
    from pixelbox.harness.compare import build_comparison, load_systems, write_comparison

    systems = load_systems(runs, [])
    comparison = build_comparison(systems)
    paths = write_comparison(Path(out), comparison, systems)
    print(summary_text(comparison))
    print(f"side by side: {paths['html']}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Export a run to its suite's official output layout."""
    from pixelbox.harness.suites import SUITES

    exported = SUITES.get(args.suite).export_run(args.run_dir, args.out)
    for item in exported:
        note = "" if item.finished else " (unfinished: no run_meta.json, scored as incomplete)"
        print(f"{item.directory}{note}")
    print(f"{len(exported)} episode(s) exported to {args.out}")
    return 0


def _score_arguments(parser: argparse.ArgumentParser) -> None:
    from pixelbox.harness.scoring.judges import JUDGE_SPECS

    parser.add_argument("run_dir", help="a run directory written by pixelbox run (or its parent)")
    parser.add_argument(
        "--judge", action="append", help=f"V_true/S judge, repeatable: {JUDGE_SPECS} (default: the suite's)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--semantics",
        choices=("official", "verified", "both"),
        default="both",
        help="Agentic-MME: verified (ours), official (the official evaluator's, on our export; writes "
        "RUN/official/runs/scores/), or both with their disagreements (default)",
    )
    parser.add_argument("--include-infrastructure", action="store_true", help=INFRA_HELP)
    parser.add_argument(
        "--trust-tampered",
        action="store_true",
        help="let operations of executions flagged as tampered satisfy V_tool checkpoints (default: untrusted)",
    )
    parser.add_argument(
        "--no-replay",
        action="store_true",
        help="judge artifacts without replaying their recorded chain first (default: replay and drop mismatches)",
    )
    add_suite_argument(parser)


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", nargs="+", help="a scored run; several runs (any suites) also get one page side by side"
    )
    parser.add_argument(
        "--out", default="report-across", help="with several runs: where the side-by-side page goes (report-across)"
    )
    parser.add_argument(
        "--include-infrastructure", action="store_true", help=INFRA_HELP + " (default: as chosen when scoring)"
    )
    add_suite_argument(parser)


def _export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir")
    parser.add_argument("--out", required=True, help="where to write runs/{general,atomic}/{model}/{task file stem}/")
    add_suite_argument(parser)


SCORE_HELP = "score a run from its traces (writes RUN_DIR/scores.json)"
REPORT_HELP = "write the JSON, Markdown and HTML reports of a scored run"
EXPORT_HELP = "export a run to the official Agentic-MME output layout"
COMMANDS = (
    Command("score", SCORE_HELP, _score_arguments, harness_errors(cmd_score), SCORE_HELP),
    Command("report", REPORT_HELP, _report_arguments, harness_errors(cmd_report), REPORT_HELP),
    Command("export", EXPORT_HELP, _export_arguments, harness_errors(cmd_export), EXPORT_HELP),
)
