"""``pixelbox run``: run a model (or a recording) over a set of tasks, resumably, with a progress bar.

Examples::

    pixelbox run --tasks data/agentic-mme --agent openai:gpt-4o --mode atm --out runs/atm-gpt4o
    pixelbox run --tasks my_tasks.jsonl --agent replay:recordings/ --mode gen --backend local --out runs/r1
    pixelbox run ... --shard 0/4         # this machine's quarter of the tasks

Running the same command again resumes: finished episodes are kept, the rest are run
(``--retry-failed`` also reruns episodes that ended in ``agent_error``, ``runtime_error`` or
``harness_error``). Exit status: 0 when every selected episode finished with a model outcome
(``answered``, ``no_answer``, ``budget_exhausted``), 1 when any is unfinished or ended in an
infrastructure status, 2 for bad input (tasks, settings, an agent that cannot be built).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from pixelbox.cli.command import Command, add_backend_arguments, add_profile_argument, add_suite_argument
from pixelbox.harness.episode import RETRYABLE_STATUSES
from pixelbox.harness.episode.budgets import BudgetLimits
from pixelbox.harness.modes import MODE_CHOICES, parse_mode
from pixelbox.harness.runner import RunSummary, WebConfig, run_tasks
from pixelbox.harness.suites import SUITES
from pixelbox.harness.tasks import Task
from pixelbox.harness.traces import parse_shard
from pixelbox.harness.web import CACHE_MODES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``pixelbox run``'s options on ``parser``."""
    parser.add_argument(
        "--tasks", required=True, type=Path, metavar="PATH", help="the suite's dataset directory or task file"
    )
    parser.add_argument("--ids", default=None, metavar="A,B", help="only these task ids (comma-separated)")
    parser.add_argument(
        "--agent",
        required=True,
        metavar="openai:MODEL|replay:PATH",
        help="openai:MODEL (an OpenAI-compatible endpoint) or replay:FILE_OR_DIR",
    )
    parser.add_argument(
        "--mode", required=True, choices=MODE_CHOICES, help="gen (or code) = code mode, atm (or atomic) = atomic tools"
    )
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="run directory (reused to resume)")
    add_backend_arguments(parser)
    parser.add_argument("--memory", default="2g", metavar="SIZE", help="memory per sandbox, e.g. 1g")
    parser.add_argument("--concurrency", type=int, default=1, metavar="N", help="episodes at a time")
    parser.add_argument(
        "--shard", type=shard_argument, default=None, metavar="K/N", help="run shard K of N (0 <= K < N)"
    )
    add_profile_argument(parser, None, "image naming conventions (default: the suite's)")
    parser.add_argument("--max-rounds", type=int, default=None, metavar="N", help="model turns (default: the suite's)")
    parser.add_argument("--max-tool-calls", type=int, default=None, metavar="N", help="actions (default: the suite's)")
    parser.add_argument(
        "--exec-timeout", type=float, default=None, metavar="S", help="seconds per code run (default: the suite's)"
    )
    parser.add_argument(
        "--episode-seconds", type=float, default=None, metavar="S", help="wall clock per episode (default: the suite's)"
    )
    parser.add_argument("--base-url", default=None, metavar="URL", help="OpenAI-compatible base URL (default: OpenAI)")
    parser.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", metavar="VAR", help="environment variable holding the key"
    )
    parser.add_argument("--temperature", type=float, default=None, metavar="T")
    parser.add_argument("--max-tokens", type=int, default=None, metavar="N")
    parser.add_argument("--web", default="off", choices=CACHE_MODES, help="web tools: off, or their cache mode")
    parser.add_argument(
        "--web-cache", type=Path, default=None, metavar="DIR", help="web cache root (default: OUT/web-cache)"
    )
    parser.add_argument(
        "--web-allow-private",
        action="store_true",
        help="let the model's web URLs reach loopback/private/link-local addresses (local setups and tests only)",
    )
    parser.add_argument("--system-prompt", type=Path, default=None, metavar="FILE", help="system prompt template file")
    parser.add_argument(
        "--user-prompt", type=Path, default=None, metavar="FILE", help="first user message template file"
    )
    parser.add_argument(
        "--retry-failed",
        action="store_true",
        help="also rerun finished episodes that ended in agent_error, runtime_error or harness_error",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar or per-episode lines")
    parser.add_argument("--json", action="store_true", help="print the run summary as JSON")
    add_suite_argument(parser)


def shard_argument(text: str) -> tuple[int, int]:
    """``--shard K/N`` for argparse: the message of a bad value explains what a shard is."""
    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    """Execute ``pixelbox run``: 0 when every selected episode finished with a model outcome, 1 when any is
    unfinished or ended in an infrastructure status, 2 for bad input (including an agent that cannot be built)."""
    from pixelbox.harness.agents import AgentError
    from pixelbox.harness.traces import RunConfigMismatch

    try:
        return _run(args)
    except (RunConfigMismatch, ValueError, AgentError, OSError) as exc:
        print(f"pixelbox run: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from pixelbox.harness.episode.prompts import PromptTemplates
    from pixelbox.runtime.options import SandboxOptions

    suite = SUITES.get(args.suite)
    mode = parse_mode(args.mode)
    if mode is None:
        raise ValueError(f"--mode must be one of {', '.join(MODE_CHOICES)}, got {args.mode!r}")
    suite.check_mode(mode)
    ids = [i.strip() for i in args.ids.split(",")] if args.ids else None
    tasks = suite.load_tasks(args.tasks, ids)
    budgets = _budgets(args, suite.budgets())
    web = None
    if args.web != "off":
        web = WebConfig(
            cache_root=args.web_cache or args.out / "web-cache",
            cache_mode=args.web,
            allow_private_urls=args.web_allow_private,
        )
    summary = run_tasks(
        tasks,
        agent_factory=agent_factory(args),
        mode=mode,
        out_dir=args.out,
        sandbox_options=SandboxOptions(backend=args.backend, runtime=args.runtime, memory=args.memory),
        budgets=budgets,
        web=web,
        profile=args.profile,
        concurrency=args.concurrency,
        shard=args.shard,
        progress=not args.no_progress,
        templates=PromptTemplates.from_files(args.system_prompt, args.user_prompt),
        retry_failed=args.retry_failed,
        suite=suite,
    )
    report(summary, as_json=args.json)
    complete = summary.finished == summary.total and not summary.failed
    return 0 if complete and not summary.infrastructure else 1


def _budgets(args: argparse.Namespace, defaults: BudgetLimits) -> BudgetLimits:
    """The suite's budgets with the limits given on the command line."""
    given = {
        "max_rounds": args.max_rounds,
        "max_tool_calls": args.max_tool_calls,
        "execution_timeout": args.exec_timeout,
        "episode_seconds": args.episode_seconds,
    }
    return replace(defaults, **{k: v for k, v in given.items() if v is not None})


def agent_factory(args: argparse.Namespace) -> Any:
    """``openai:MODEL`` or ``replay:PATH`` -> a function making one agent per task."""
    kind, _, target = str(args.agent).partition(":")
    if kind == "openai" and target:
        from pixelbox.harness.agents import OpenAIAgent, OpenAIConfig

        config = OpenAIConfig(
            model=target,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
        )
        return lambda task: OpenAIAgent(config)
    if kind == "replay" and target:
        from pixelbox.harness.agents import ReplayAgent

        path = Path(target)
        if not path.exists():
            raise ValueError(
                f"--agent replay:{target}: {path} does not exist; give a recording file (.json/.jsonl, "
                "or an episode trace) or a directory of TASK_ID.json/.jsonl recordings"
            )

        def replay(task: Task) -> Any:
            return ReplayAgent.from_file(path, task.task_id, model=f"replay:{path.name}")

        return replay
    raise ValueError(f"--agent must be openai:MODEL or replay:FILE_OR_DIR, got {args.agent!r}")


def report(summary: RunSummary, *, as_json: bool) -> None:
    """Print the run's outcome: one line overall, one line per status, and where the traces are."""
    if as_json:
        print(json.dumps({k: v for k, v in summary.to_dict().items() if k != "episodes"}, indent=1))
        return
    done = f"{summary.finished}/{summary.total} episodes finished"
    print(f"{done} ({summary.ran} run now, {summary.skipped} already done); traces in {summary.out_dir}")
    for status in sorted(summary.counts):
        print("  " + status_line(summary, status))
    for failure in summary.failed:
        print(f"  {failure['task_id']}: {failure['error']} (redone on resume)", file=sys.stderr)


def status_line(summary: RunSummary, status: str, shown: int = 5) -> str:
    """``agent_error: 2 (t3, t5) - not the model's doing; rerun them with --retry-failed``."""
    ids = summary.task_ids(status)
    listed = ", ".join(ids[:shown]) + (f", ... {len(ids) - shown} more" if len(ids) > shown else "")
    line = f"{status}: {summary.counts[status]}" + (f" ({listed})" if listed else "")
    if status in RETRYABLE_STATUSES:
        line += " - the run failed, not the model; see each trace's error record, then rerun with --retry-failed"
    return line


COMMANDS = (
    Command("run", "run an agent over tasks in code (gen) or atomic (atm) mode, resumably", add_arguments, run),
)
