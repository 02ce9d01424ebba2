"""``pixelbox run``: run a model (or a recording) over a set of tasks, resumably, with a progress bar.

Examples::

    pixelbox run --tasks data/agentic-mme --agent openai:gpt-4o --mode atm --out runs/atm-gpt4o
    pixelbox run --tasks my_tasks.jsonl --agent replay:recordings/ --mode gen --backend local --out runs/r1
    pixelbox run ... --shard 0/4         # this machine's quarter of the tasks

Running the same command again resumes: finished episodes are kept, the rest are run
(``--retry-failed`` also reruns episodes that ended in ``agent_error``, ``runtime_error`` or
``harness_error``). Before the first episode the agent endpoint (and the web providers in record
mode) are checked once; a dead endpoint ends the run within seconds with one message
(``--no-preflight`` skips the check). After ``--max-consecutive-failures`` infrastructure failures
in a row no new episode starts, and the summary says how to resume.

Exit status: 0 when every selected episode finished with a model outcome (``answered``,
``no_answer``, ``budget_exhausted``), 1 when any is unfinished or ended in an infrastructure
status, 2 for bad input (tasks, settings, an agent that cannot be built, an endpoint or web
provider the pre-flight check found unusable).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from pixelbox.cli.command import Command, add_backend_arguments, add_profile_argument, add_suite_argument
from pixelbox.harness.agents.openai_agent import OpenAIConfig
from pixelbox.harness.agents.retry import RetryPolicy
from pixelbox.harness.episode import RETRYABLE_STATUSES
from pixelbox.harness.episode.budgets import BudgetLimits
from pixelbox.harness.episode.codemode import CODE_BLOCKS, CodeBlocks
from pixelbox.harness.episode.loop import TURN_RULES
from pixelbox.harness.modes import MODE_CHOICES, parse_mode
from pixelbox.harness.runner import RunSummary, WebConfig, run_tasks
from pixelbox.harness.suites import SUITES
from pixelbox.harness.tasks import Task
from pixelbox.harness.traces import parse_shard
from pixelbox.harness.web import CACHE_MODES

DEFAULT_STREAK = 3
"""``--max-consecutive-failures`` by default."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``pixelbox run``'s options on ``parser``."""
    parser.add_argument(
        "--tasks", required=True, type=Path, metavar="PATH", help="the suite's dataset directory or task file"
    )
    parser.add_argument("--ids", default=None, metavar="A,B", help="only these task ids (comma-separated)")
    parser.add_argument(
        "--agent",
        required=True,
        metavar="openai:MODEL|deepeyes:MODEL|thyme:MODEL|replay:PATH",
        help="openai:MODEL (an OpenAI-compatible endpoint; deepeyes:/thyme: drive it as the official DeepEyes/Thyme "
        "runners do, tools in <tool_log> text) or replay:FILE_OR_DIR",
    )
    parser.add_argument(
        "--mode",
        default=None,
        choices=MODE_CHOICES,
        help="gen (or code) = code mode, atm (or atomic) = atomic tools (default: the suite's first mode)",
    )
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="run directory (reused to resume)")
    add_backend_arguments(parser)
    parser.add_argument("--memory", default="2g", metavar="SIZE", help="memory per sandbox, e.g. 1g")
    parser.add_argument("--concurrency", type=int, default=1, metavar="N", help="episodes at a time")
    parser.add_argument(
        "--shard", type=shard_argument, default=None, metavar="K/N", help="run shard K of N (0 <= K < N)"
    )
    add_profile_argument(parser, None, "image naming conventions (default: the suite's)")
    parser.add_argument(
        "--code-blocks",
        default=None,
        choices=CODE_BLOCKS,
        help="code mode: run only the first closed <code> block of a turn, as the official Agentic-MME runners "
        "do (first), or every block (all); default: the suite's (agentic-mme: first)",
    )
    parser.add_argument(
        "--turn-rules",
        default="pixelbox",
        choices=TURN_RULES,
        help="official: as the Agentic-MME general runner, an <answer> beside code ends the episode after the code "
        "ran and a turn with no action and no <answer> is the answer; pixelbox (default): neither is accepted",
    )
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
    parser.add_argument(
        "--temperature", type=float, default=None, metavar="T", help="sampling temperature (default: the suite's)"
    )
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
    _add_failure_arguments(parser)
    _add_ray_arguments(parser)
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar or per-episode lines (infrastructure failures and the final summary are still printed)",
    )
    parser.add_argument("--json", action="store_true", help="print the run summary as JSON")
    add_suite_argument(parser)


def _add_failure_arguments(parser: argparse.ArgumentParser) -> None:
    """Retries, per-call timeouts, the pre-flight check and when to give up on a failing run."""
    group = parser.add_argument_group("retries, timeouts and failing fast")
    retry = RetryPolicy()
    group.add_argument(
        "--max-attempts",
        type=positive(int),
        default=retry.max_attempts,
        metavar="N",
        help=f"requests per model turn, the first included (1 = no retries; default {retry.max_attempts})",
    )
    group.add_argument(
        "--retry-delay",
        type=positive(float, zero=True),
        default=retry.base_delay,
        metavar="SECONDS",
        help=f"wait before the first retry, doubled for each next one up to {retry.max_delay:g} s "
        f"(a server's Retry-After wins; default {retry.base_delay:g})",
    )
    group.add_argument(
        "--request-timeout",
        type=positive(float),
        default=OpenAIConfig.request_timeout,
        metavar="SECONDS",
        help=f"time limit of one model request (default {OpenAIConfig.request_timeout:g})",
    )
    group.add_argument(
        "--web-timeout",
        type=positive(float),
        default=None,
        metavar="SECONDS",
        help="time limit of one web provider call (default: 30 for Serper, 60 for Jina and imgbb)",
    )
    group.add_argument(
        "--max-consecutive-failures",
        type=positive(int, zero=True),
        default=DEFAULT_STREAK,
        metavar="N",
        help="start no new episode after N infrastructure failures in a row "
        f"(0 = never stop; default {DEFAULT_STREAK})",
    )
    group.add_argument(
        "--no-preflight",
        action="store_true",
        help="do not check the agent endpoint (and web providers in record mode) before the first episode",
    )


def _add_ray_arguments(parser: argparse.ArgumentParser) -> None:
    """Playing the episodes on a Ray cluster (``pixelbox[ray]``; docs/scale.md)."""
    group = parser.add_argument_group("scaling out on Ray (pip install 'pixelbox[ray]'; docs/scale.md)")
    group.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="play episodes as Ray tasks: ADDRESS of a cluster (auto: the one this machine joined), "
        "or no ADDRESS to start a local one; --concurrency is then ignored",
    )
    group.add_argument(
        "--ray-store",
        default=None,
        metavar="URL",
        help="run store for episode images: a directory every node reaches, or an fsspec URL "
        "(s3://bucket/prefix...); default OUT/.store",
    )
    group.add_argument(
        "--ray-attempts",
        type=positive(int),
        default=3,
        metavar="N",
        help="tries per episode when its worker or node dies (default 3)",
    )
    group.add_argument(
        "--ray-in-flight",
        type=positive(int),
        default=None,
        metavar="N",
        help="episodes submitted and not yet written at once (default: twice the cluster's sandbox capacity)",
    )


def _executor(args: argparse.Namespace) -> Any:
    """The Ray executor for ``--ray`` (None: threads on this host)."""
    if args.ray is None:
        if args.ray_store or args.ray_in_flight:
            raise ValueError("--ray-store and --ray-in-flight need --ray [ADDRESS]")
        return None
    try:
        from pixelbox.ray import RayExecutor, connect, default_store
    except ImportError as exc:
        raise ValueError(f"--ray needs the ray extra: pip install 'pixelbox[ray]' ({exc})") from None
    connect(None if args.ray == "local" else args.ray)
    store = args.ray_store or default_store(args.out)
    return RayExecutor(store, attempts=args.ray_attempts, in_flight=args.ray_in_flight)


def positive(kind: type[float] | type[int], zero: bool = False) -> Any:
    """An argparse type: a number of ``kind`` above zero (or at least zero)."""

    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value < 0 or (value == 0 and not zero):
            raise argparse.ArgumentTypeError(f"must be {'0 or more' if zero else 'more than 0'}, got {text}")
        return value

    return parse


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
    mode = parse_mode(args.mode if args.mode is not None else suite.modes[0])
    if mode is None:
        raise ValueError(f"--mode must be one of {', '.join(MODE_CHOICES)}, got {args.mode!r}")
    suite.check_mode(mode)
    ids = [i.strip() for i in args.ids.split(",")] if args.ids else None
    tasks = suite.load_tasks(args.tasks, ids)
    budgets = _budgets(args, suite.budgets())
    args.code_blocks = args.code_blocks or suite.code_blocks
    if args.temperature is None:  # the suite's official sampling for this model, when it has one
        args.temperature = suite.default_temperature(str(args.agent).partition(":")[2])
    web = None
    if args.web != "off":
        web = WebConfig(
            cache_root=args.web_cache or args.out / "web-cache",
            cache_mode=args.web,
            allow_private_urls=args.web_allow_private,
            timeout=args.web_timeout,
        )
    summary = run_tasks(
        tasks,
        agent_factory=agent_factory(args),
        mode=mode,
        out_dir=args.out,
        sandbox_options=SandboxOptions(backend=args.backend, runtime=args.runtime, memory=args.memory),
        budgets=budgets,
        web=web,
        profile=args.profile or _variant_profile(args.agent),
        concurrency=args.concurrency,
        shard=args.shard,
        progress=not args.no_progress,
        templates=PromptTemplates.from_files(args.system_prompt, args.user_prompt),
        retry_failed=args.retry_failed,
        suite=suite,
        preflight=not args.no_preflight,
        max_consecutive_failures=args.max_consecutive_failures,
        executor=_executor(args),
        code_blocks=args.code_blocks,
        turn_rules=args.turn_rules,
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


def _variant_profile(agent: str) -> str | None:
    """The image naming of the DeepEyes/Thyme runner variants (``image_0.png``, ``image_N.png``), else the suite's."""
    return "deepeyes" if str(agent).partition(":")[0] in ("deepeyes", "thyme") else None


def agent_factory(args: argparse.Namespace) -> Any:
    """``openai:``, ``deepeyes:``, ``thyme:MODEL`` or ``replay:PATH`` -> a function making one agent per task."""
    kind, _, target = str(args.agent).partition(":")
    if kind in ("openai", "deepeyes", "thyme") and target:
        from pixelbox.harness.agents import OpenAIAgent
        from pixelbox.harness.agents.variants import TextToolAgent

        config = OpenAIConfig(
            model=target,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            request_timeout=args.request_timeout,
            retry=RetryPolicy(max_attempts=args.max_attempts, base_delay=args.retry_delay),
        )
        if kind == "openai":
            return lambda task: OpenAIAgent(config)
        blocks: CodeBlocks = "all" if getattr(args, "code_blocks", None) == "all" else "first"
        return lambda task: TextToolAgent(OpenAIAgent(config), kind, blocks)
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
    raise ValueError(
        f"--agent must be openai:MODEL, deepeyes:MODEL, thyme:MODEL or replay:FILE_OR_DIR, got {args.agent!r}"
    )


def report(summary: RunSummary, *, as_json: bool) -> None:
    """Print the run's outcome: one line overall, one line per status, and where the traces are."""
    if summary.stopped is not None:
        print(f"pixelbox run: {stop_message(summary.stopped)}", file=sys.stderr)
    if as_json:
        print(json.dumps({k: v for k, v in summary.to_dict().items() if k != "episodes"}, indent=1))
        return
    done = f"{summary.finished}/{summary.total} episodes finished"
    print(f"{done} ({summary.ran} run now, {summary.skipped} already done); traces in {summary.out_dir}")
    for status in sorted(summary.counts):
        print("  " + status_line(summary, status))
        if status in RETRYABLE_STATUSES:
            print("".join(f"    {line}\n" for line in reason_lines(summary, status)), end="")
    for failure in summary.failed:
        print(f"  {failure['task_id']}: {failure['error']} (redone on resume)", file=sys.stderr)


def stop_message(stopped: dict[str, Any]) -> str:
    """Why the run started no more episodes, and how to resume."""
    failures, left = stopped["failures"], len(stopped["not_started"])
    last = failures[-1]
    return (
        f"stopped after {len(failures)} infrastructure failures in a row (--max-consecutive-failures "
        f"{stopped['limit']}); last: {last['task_id']}: {last['reason']}. {left} task(s) were not started. "
        f"Fix the cause, then run the same command again to resume; add --retry-failed to also rerun the "
        f"episodes that failed"
    )


def status_line(summary: RunSummary, status: str, shown: int = 5) -> str:
    """``agent_error: 2 (t3, t5) - not the model's doing; rerun them with --retry-failed``."""
    ids = summary.task_ids(status)
    line = f"{status}: {summary.counts[status]}" + (f" ({_listed(ids, shown)})" if ids else "")
    if status in RETRYABLE_STATUSES:
        line += " - the run failed, not the model; see each trace's error record, then rerun with --retry-failed"
    return line


def reason_lines(summary: RunSummary, status: str, shown: int = 3) -> list[str]:
    """The distinct recorded reasons of the episodes that ended in ``status``, each with its tasks."""
    by_reason: dict[str, list[str]] = {}
    for episode in summary.episodes:
        if episode.get("finished") and episode.get("status") == status:
            by_reason.setdefault(str(episode.get("reason") or "no reason recorded"), []).append(str(episode["task_id"]))
    lines = [f"{_listed(ids, 3)}: {reason}" for reason, ids in list(by_reason.items())[:shown]]
    if len(by_reason) > shown:
        lines.append(f"... and {len(by_reason) - shown} other reason(s)")
    return lines


def _listed(ids: list[str], shown: int) -> str:
    return ", ".join(ids[:shown]) + (f", ... {len(ids) - shown} more" if len(ids) > shown else "")


COMMANDS = (
    Command("run", "run an agent over tasks in code (gen) or atomic (atm) mode, resumably", add_arguments, run),
)
