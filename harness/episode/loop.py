"""One episode: a task, an agent and a sandbox, turn by turn until an answer or a budget ends it.

Each round the agent gets the conversation and the tools; its turn is recorded; the actions it
asked for run in order (code mode: its ``<code>`` blocks, then its tool calls; atomic mode: its tool
calls), each recorded as an ``action`` and an ``observation``; the results go back as tool messages
(one per call) and one user message with code output, notes and every new image. An ``<answer>``
ends the episode only in a turn without actions. A runtime timeout or crash is an observation; an
agent failure, a sandbox that cannot be used any more, or a budget ends the episode with a recorded
reason. Nothing here raises for those: the trace always ends with ``episode_end``.
"""

from __future__ import annotations

import base64
import hashlib
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pixelbox import __version__
from pixelbox.harness.agents.base import Agent, AgentError, AgentTurn, Message, ToolArgumentsError, ToolCall
from pixelbox.harness.agents.messages import image_part, summarize_messages, text_part
from pixelbox.harness.episode.budgets import Budget, BudgetLimits
from pixelbox.harness.episode.codemode import CODE_BLOCKS, CodeBlocks, extract_answer, extract_code, has_bare_fence
from pixelbox.harness.episode.imagebook import ImageBook, ImageEntry
from pixelbox.harness.episode.observations import (
    DEFAULT_TEXT_CHARS,
    code_observation,
    image_lines,
    images_message,
    tool_observation,
)
from pixelbox.harness.episode.prompts import PromptTemplates, prompt_values
from pixelbox.harness.episode.reasons import failure_reason
from pixelbox.harness.modes import ATOMIC, CODE, MODES, Mode
from pixelbox.harness.tasks import Task
from pixelbox.harness.tools import offered_tools
from pixelbox.harness.tools.atomic import atomic_tool_lines, call_tool, is_atomic_tool
from pixelbox.harness.tools.web import run_web_tool
from pixelbox.harness.traces import TraceWriter
from pixelbox.harness.web import WEB_TOOLS, WebTools
from pixelbox.runtime.errors import PixelboxError
from pixelbox.runtime.execution import Execution

TurnRules = Literal["pixelbox", "official"]
TURN_RULES: tuple[TurnRules, ...] = ("pixelbox", "official")
"""How a turn's ``<answer>`` is taken (:attr:`EpisodeConfig.turn_rules`)."""

EPISODE_STATUSES = ("answered", "no_answer", "budget_exhausted", "agent_error", "runtime_error", "harness_error")
RETRYABLE_STATUSES = ("agent_error", "runtime_error", "harness_error")
"""Statuses that say the run's infrastructure failed, not the model: ``--retry-failed`` runs them again."""


@dataclass(frozen=True)
class EpisodeConfig:
    """How episodes are run: mode, image profile, budgets, prompts, and how much output the model sees."""

    mode: Mode
    profile: str = "agentic-mme"
    budgets: BudgetLimits = field(default_factory=BudgetLimits)
    templates: PromptTemplates = field(default_factory=PromptTemplates)
    text_chars: int = DEFAULT_TEXT_CHARS
    max_nudges: int = 2
    """Turns in a row with neither an action nor an answer before the episode ends as ``no_answer``."""
    code_blocks: CodeBlocks = "all"
    """Code mode: run every ``<code>`` block of a turn (``all``) or only the first closed one, as the
    official Agentic-MME runners do (``first``; see :mod:`pixelbox.harness.episode.codemode`)."""
    turn_rules: TurnRules = "pixelbox"
    """``pixelbox``: an ``<answer>`` counts only in a turn without actions, a turn with neither gets a nudge.
    ``official`` (the Agentic-MME general runner): an ``<answer>`` beside code ends the episode once the
    code ran (the turn's tool calls do not run), and a turn with no action and no ``<answer>`` is itself
    the answer (its text)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be '{CODE}' (code) or '{ATOMIC}' (atomic tools), got {self.mode!r}")
        if self.code_blocks not in CODE_BLOCKS:
            raise ValueError(f"code_blocks must be one of {', '.join(CODE_BLOCKS)}, got {self.code_blocks!r}")
        if self.turn_rules not in TURN_RULES:
            raise ValueError(f"turn_rules must be one of {', '.join(TURN_RULES)}, got {self.turn_rules!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON view for traces and ``run.json`` (templates by hash, so a changed prompt is noticed)."""
        templates = {
            "system_sha256": _sha(self.templates.system) if self.templates.system is not None else None,
            "user_sha256": _sha(self.templates.user),
        }
        return {
            "mode": self.mode,
            "profile": self.profile,
            "budgets": self.budgets.to_dict(),
            "templates": templates,
            "text_chars": self.text_chars,
            "max_nudges": self.max_nudges,
            # absent for "all", the reading older runs used, so they resume; a run of the other reading does not
            **({"code_blocks": self.code_blocks} if self.code_blocks != "all" else {}),
            **({"turn_rules": self.turn_rules} if self.turn_rules != "pixelbox" else {}),
        }


@dataclass(frozen=True)
class EpisodeOutcome:
    """How an episode ended (the same facts as its ``episode_end`` record)."""

    task_id: str
    status: str
    reason: str | None
    answer: str | None
    rounds: int
    tool_calls: int
    images: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Action:
    kind: Literal["code", "tool"]
    name: str
    code: str | None = None
    call: ToolCall | None = None


@dataclass
class _Feedback:
    """What one round of actions gives back to the model."""

    tool_messages: list[Message] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    images: list[ImageEntry] = field(default_factory=list)


class EpisodeAborted(Exception):
    """The run is being stopped (Ctrl-C): the episode ends without ``episode_end`` and is redone on resume."""


class EpisodeEnd(Exception):
    """Raised inside an episode's loop to end it with ``status`` (one of :data:`EPISODE_STATUSES`)."""

    def __init__(self, status: str, reason: str | None = None, answer: str | None = None) -> None:
        super().__init__(reason or status)
        self.status, self.reason, self.answer = status, reason, answer


def play_until_end(loop: Callable[[], None], writer: TraceWriter) -> tuple[str, str | None, str | None]:
    """Run an episode's ``loop`` until it raises :class:`EpisodeEnd`; returns ``(status, reason, answer)``.

    A sandbox failure ends it as ``runtime_error`` and anything else as ``harness_error``, both
    recorded as ``error``; :class:`EpisodeAborted` (the run is being stopped) passes through.
    """
    try:
        loop()
    except EpisodeAborted:
        raise
    except EpisodeEnd as end:
        return end.status, end.reason, end.answer
    except (PixelboxError, OSError) as exc:
        writer.error(where="runtime", message=str(exc), type=type(exc).__name__)
        return "runtime_error", failure_reason("the sandbox failed: ", exc), None
    except Exception as exc:
        writer.error(where="harness", message=str(exc), type=type(exc).__name__, traceback=_tb(exc))
        return "harness_error", failure_reason("", exc), None
    return "harness_error", "the episode loop returned without ending the episode", None


class Episode:
    """Runs one task with one agent in one (already started) sandbox, writing ``writer``'s trace."""

    def __init__(
        self,
        task: Task,
        agent: Agent,
        sandbox: Any,
        *,
        config: EpisodeConfig,
        writer: TraceWriter,
        images_dir: Path,
        web: WebTools | None = None,
        run_root: Path | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        self.task, self.agent, self.sandbox = task, agent, sandbox
        self.should_stop = should_stop
        self.config, self.writer, self.web = config, writer, web
        self.run_root = run_root
        self.budget = Budget(config.budgets)
        self.book = ImageBook(images_dir, list(task.images), list(getattr(sandbox, "inputs", None) or []) or None)
        self.messages: list[Message] = []
        self.tools = self._tool_schemas()
        self._nudges = 0

    # -- the loop ----------------------------------------------------------------------------------

    def run(self) -> EpisodeOutcome:
        """Play the episode to its end; writes ``episode_end`` unless the run is stopped (:class:`EpisodeAborted`)."""
        self._start()
        status, reason, answer = play_until_end(self._loop, self.writer)
        totals = {**self.budget.snapshot(), "images": len(self.book.entries)}
        self.writer.episode_end(status=status, reason=reason, answer=answer, totals=totals)
        return EpisodeOutcome(
            self.task.task_id,
            status,
            reason,
            answer,
            self.budget.rounds,
            self.budget.tool_calls,
            len(self.book.entries),
        )

    def _loop(self) -> None:
        while True:
            self._check_stop()
            hit = self.budget.start_round()
            if hit is not None:
                self.writer.budget_hit(hit)
                raise EpisodeEnd("budget_exhausted", hit.reason)
            turn = self._ask()
            self.messages.append(turn.assistant_message())
            actions = self._actions(turn)
            answer = extract_answer(turn.text)
            official = self.config.turn_rules == "official"
            if not actions:
                if answer is not None:
                    raise EpisodeEnd("answered", None, answer)
                if official and turn.text.strip():
                    raise EpisodeEnd(
                        "answered", "no <answer>: the turn's text is the answer (official rule)", turn.text.strip()
                    )
                self._nudge(turn)
                continue
            self._nudges = 0
            code = [action for action in actions if action.kind == "code"]
            if official and answer is not None and code:
                self._run_actions(code)
                raise EpisodeEnd("answered", None, answer)
            feedback = self._run_actions(actions)
            if answer is not None:
                feedback.texts.append(
                    "Your <answer> was not accepted because the same turn also took actions. "
                    "Give the final answer in a turn without code or tool calls."
                )
            self._send(feedback)

    def _check_stop(self) -> None:
        if self.should_stop():
            raise EpisodeAborted(f"the run was stopped during task {self.task.task_id}")

    def _ask(self) -> AgentTurn:
        return ask_agent(self.agent, self.messages, self.tools, self.writer, self.budget.rounds)

    def _actions(self, turn: AgentTurn) -> list[_Action]:
        actions: list[_Action] = []
        # an agent whose runner runs a turn's tool calls instead of its code (the DeepEyes/Thyme variants)
        tools_first = bool(turn.tool_calls) and bool(getattr(self.agent, "tool_calls_replace_code", False))
        if self.config.mode == CODE and not tools_first:
            actions += [
                _Action("code", "python", code=code) for code in extract_code(turn.text, self.config.code_blocks)
            ]
        actions += [_Action("tool", call.name, call=call) for call in turn.tool_calls]
        return actions

    def _nudge(self, turn: AgentTurn) -> None:
        self._nudges += 1
        if self._nudges > self.config.max_nudges:
            raise EpisodeEnd("no_answer", f"{self._nudges} turns in a row without an action or an <answer>")
        if self.config.mode == CODE:
            hint = "Run Python in <code>...</code>, call a tool, or give the final answer in <answer>...</answer>."
            if has_bare_fence(turn.text):
                hint += " Code in a markdown fence alone is not run: put it inside <code> tags."
        else:
            hint = "Call an image or web tool, or give the final answer in <answer>...</answer>."
        feedback = _Feedback(texts=[f"Your last message had no action and no <answer>. {hint}"])
        self._send(feedback)

    def _send(self, feedback: _Feedback) -> None:
        new = list(feedback.tool_messages)
        if feedback.texts or feedback.images:
            new.append(images_message("", feedback.images, feedback.texts))
        for message in new:
            self.messages.append(message)
            self.writer.write("message", round=self.budget.rounds, message=redact(message))

    # -- actions -----------------------------------------------------------------------------------

    def _run_actions(self, actions: list[_Action]) -> _Feedback:
        feedback = _Feedback()
        code_number = 0
        for number, action in enumerate(actions, start=1):
            self._check_stop()
            hit = self.budget.admit_tool_call()
            if hit is not None:
                self.writer.budget_hit(hit)
                raise EpisodeEnd("budget_exhausted", hit.reason)
            action_id = f"r{self.budget.rounds}.{number}"
            if action.kind == "code":
                code_number += 1
                self._run_code(action, action_id, code_number, feedback)
            else:
                self._run_call(action, action_id, feedback)
        return feedback

    def _run_code(self, action: _Action, action_id: str, number: int, feedback: _Feedback) -> None:
        assert action.code is not None
        save_as = self._save_as()
        named = {"save_as": save_as} if save_as else {}
        self.writer.action(
            round=self.budget.rounds, action_id=action_id, type="code", name="python", code=action.code, **named
        )
        execution = self.sandbox.execute(action.code, timeout=self.budget.execution_timeout(), **named)
        self.budget.note_execution(execution.status)
        images = self.book.ingest(self.sandbox, execution.artifacts, "code", execution=execution)
        if save_as:  # the runner looks only at the turn's file; other writes stay in the trace, unseen
            images = [image for image in images if image.name == save_as["name"]]
        shown = "\n".join(
            t for t in (code_observation(execution, text_chars=self.config.text_chars), image_lines(images)) if t
        )
        text = f"Result of code block {number}:\n{shown}"
        if callable(getattr(self.sandbox, "audit", None)):
            self.sandbox.audit(execution)  # after execute returned: the static half is never in its latency
        self._observe(action_id, execution=execution, shown=text, images=images)
        feedback.texts.append(text)
        feedback.images += images

    def _save_as(self) -> dict[str, Any] | None:
        """The agent's save name for this round's code (``save_as(round)``: the DeepEyes/Thyme runners name
        every image saved in turn K ``image_{K+1}.png``), or None: the profile names each capture."""
        hook = getattr(self.agent, "save_as", None)
        return hook(self.budget.rounds) if callable(hook) else None

    def _run_call(self, action: _Action, action_id: str, feedback: _Feedback) -> None:
        call = action.call
        assert call is not None
        arguments, problem = trace_call(self.writer, self.budget.rounds, action_id, call)
        if self.config.mode == ATOMIC and is_atomic_tool(call.name):
            text, images = self._run_atomic(call, action_id)
        elif self.web is not None and call.name in WEB_TOOLS:
            text, images = self._run_web(call, action_id, arguments, problem)
        else:
            text, images = self._unknown_tool(call, action_id)
        feedback.tool_messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        if images:
            feedback.texts.append(f"Images from {call.name} (tool call {call.id}):")
            feedback.images += images

    def _run_atomic(self, call: ToolCall, action_id: str) -> tuple[str, list[ImageEntry]]:
        execution = call_tool(self.sandbox, call.name, call.arguments_json, timeout=self.budget.execution_timeout())
        self.budget.note_execution(execution.status)
        images = self.book.ingest(self.sandbox, execution.artifacts, f"tool:{call.name}", execution=execution)
        text = tool_observation(execution)
        self._observe(action_id, execution=execution, shown=text, images=images)
        return text, images

    def _run_web(
        self, call: ToolCall, action_id: str, arguments: dict[str, Any], problem: str | None
    ) -> tuple[str, list[ImageEntry]]:
        assert self.web is not None
        if problem is not None:
            text = f"Error: {problem}"
            self._observe(action_id, shown=text, error=problem)
            return text, []
        outcome = run_web_tool(
            self.web,
            call.name,
            arguments,
            book=self.book,
            sandbox=self.sandbox,
            timeout=self.budget.execution_timeout(),
        )
        if outcome.execution is not None:
            self.budget.note_execution(outcome.execution.status)
        self._observe(
            action_id, execution=outcome.execution, tool_result=outcome.result, shown=outcome.text, images=outcome.added
        )
        return outcome.text, list(outcome.added)

    def _unknown_tool(self, call: ToolCall, action_id: str) -> tuple[str, list[ImageEntry]]:
        offered = ", ".join(t["function"]["name"] for t in self.tools) or "none"
        text = f"Error: there is no tool named {call.name!r} in this mode; the tools are: {offered}"
        self._observe(action_id, shown=text, error=text[7:])
        return text, []

    def _observe(
        self,
        action_id: str,
        *,
        shown: str,
        execution: Execution | None = None,
        tool_result: Any = None,
        images: list[ImageEntry] | tuple[ImageEntry, ...] = (),
        error: str | None = None,
    ) -> None:
        self.writer.observation(
            action_id=action_id,
            execution=execution,
            tool_result=tool_result,
            shown=shown,
            images=[image.to_dict(self.run_root) for image in images],
            error=error,
        )

    # -- start ---------------------------------------------------------------------------------------

    def _start(self) -> None:
        values = self._prompt_values()
        templates = self.config.templates
        system = templates.system_text(self.config.mode, values)
        content: list[dict[str, Any]] = [text_part(templates.user_text(values))]
        for entry in sorted(self.book.entries.values(), key=lambda e: e.index):
            content += [text_part(f"{entry.label()}:"), image_part(entry.path)]
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": content}]
        self.writer.write(
            "episode_start",
            **start_fields(self.task, self.agent, self.sandbox, self.config),
            tools=[t["function"]["name"] for t in self.tools],
            messages=[redact(m) for m in self.messages],
            images=[e.to_dict(self.run_root) for e in self.book.entries.values()],
        )

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return offered_tools(self.config.mode, web=self.web is not None)

    def _prompt_values(self) -> dict[str, Any]:
        limits = self.config.budgets
        names = [e.name for e in sorted(self.book.entries.values(), key=lambda e: e.index)]
        return prompt_values(
            prompt=self.task.prompt,
            image_names=names,
            profile=self.config.profile,
            web_tools=list(WEB_TOOLS) if self.web is not None else [],
            image_tools=atomic_tool_lines(),
            max_rounds=limits.max_rounds,
            max_tool_calls=limits.max_tool_calls,
            execution_timeout=limits.execution_timeout,
            code_blocks=self.config.code_blocks,
        )


# -- helpers -----------------------------------------------------------------------------------------


def redact(message: Message) -> Message:
    """A copy of ``message`` with inline image data replaced by ``sha256:...`` and a byte count (for traces)."""
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    parts = []
    for part in content:
        url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) else ""
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
            data = base64.b64decode(url.split(",", 1)[1])
            ref = {"url": f"sha256:{hashlib.sha256(data).hexdigest()}", "bytes": len(data)}
            parts.append({"type": "image_url", "image_url": ref})
        else:
            parts.append(part)
    return {**message, "content": parts}


def ask_agent(
    agent: Agent, messages: list[Message], tools: list[dict[str, Any]], writer: TraceWriter, round: int
) -> AgentTurn:
    """The agent's next turn, traced as ``turn``; every loop asks its model so.

    An agent failure (or any exception from the agent) is traced as ``error`` (``where: agent``, with
    the retry detail or the traceback) and ends the episode as ``agent_error``.
    """
    try:
        turn = agent.next_turn(list(messages), list(tools))
    except AgentError as exc:
        writer.error(where="agent", message=str(exc), type=type(exc).__name__, **_agent_detail(exc))
        raise EpisodeEnd("agent_error", f"the agent failed: {exc}") from None
    except Exception as exc:
        writer.error(where="agent", message=str(exc), type=type(exc).__name__, traceback=_tb(exc))
        raise EpisodeEnd("agent_error", f"the agent failed: {type(exc).__name__}: {exc}") from None
    writer.turn(round=round, messages=summarize_messages(messages), agent_turn=turn)
    return turn


def trace_call(
    writer: TraceWriter, round: int, action_id: str, call: ToolCall, *, code_argument: str | None = None
) -> tuple[dict[str, Any], str | None]:
    """Write the ``action`` of a model's tool call; its arguments, or ``({}, why)`` when they are no JSON object.

    ``code_argument``: the call runs code (an ``action`` of type ``code``) given in that argument, which is
    recorded as the action's ``code`` when it is a string.
    """
    try:
        arguments, problem = call.arguments(), None
    except ToolArgumentsError as exc:
        arguments, problem = {}, str(exc)
    detail: dict[str, Any] = {}
    if code_argument is not None and isinstance(arguments.get(code_argument), str):
        detail["code"] = arguments[code_argument]
    writer.action(
        round=round,
        action_id=action_id,
        type="tool" if code_argument is None else "code",
        name=call.name,
        tool_call_id=call.id,
        arguments=arguments,
        arguments_json=call.arguments_json,
        **detail,
    )
    return arguments, problem


def start_fields(task: Any, agent: Agent, sandbox: Any, config: EpisodeConfig, /, **extra: Any) -> dict[str, Any]:
    """What every ``episode_start`` records (task, config, model, mode, runtime, agent, pixelbox), then ``extra``
    (a loop's own fields; one named like a common field replaces its value)."""
    fields = {
        "task": task.to_dict(),
        "config": config.to_dict(),
        "model": agent.model,
        "mode": config.mode,
        "runtime": runtime_info(sandbox),
        "agent": {"model": agent.model, "endpoint": getattr(agent, "endpoint", None)},
        "pixelbox": __version__,
    }
    return {**fields, **extra}


def runtime_info(sandbox: Any) -> Any:
    """What the sandbox is (backend, isolation) for ``episode_start``, or why that could not be read."""
    try:
        return sandbox.info.to_dict()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def _agent_detail(exc: AgentError) -> dict[str, Any]:
    detail: dict[str, Any] = {}
    for name in ("attempts", "status", "retries"):
        if hasattr(exc, name):
            detail[name] = getattr(exc, name)
    return detail


def _tb(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


SandboxFactory = Callable[[Task], Any]


def run_episode(
    task: Task,
    agent: Agent,
    *,
    make_sandbox: SandboxFactory,
    config: EpisodeConfig,
    writer: TraceWriter,
    images_dir: Path,
    web: WebTools | None = None,
    run_root: Path | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> EpisodeOutcome:
    """Start a sandbox for ``task``, play the episode, and always close the sandbox.

    A sandbox that cannot start is recorded (``error`` + ``episode_end`` with ``runtime_error``).
    """
    try:
        sandbox = make_sandbox(task)
    except Exception as exc:
        return record_failed_start(task, agent.model, config, writer, "runtime", exc)
    try:
        prepare = getattr(agent, "prepare_sandbox", None)
        if callable(prepare):
            prepare(sandbox, task)
        episode = Episode(
            task,
            agent,
            sandbox,
            config=config,
            writer=writer,
            images_dir=images_dir,
            web=web,
            run_root=run_root,
            should_stop=should_stop,
        )
        return episode.run()
    finally:
        sandbox.close()


def record_failed_start(
    task: Task, model: str, config: EpisodeConfig, writer: TraceWriter, where: str, exc: BaseException
) -> EpisodeOutcome:
    """Trace an episode that could not begin (no sandbox, or no agent for a caller tracing that): start, error,
    end. The runner does not trace agents that cannot be built: that is a setup error, not an episode."""
    status = "agent_error" if where == "agent" else "runtime_error"
    reason = failure_reason(f"the {'agent' if where == 'agent' else 'sandbox'} could not start: ", exc)
    writer.write(
        "episode_start", task=task.to_dict(), config=config.to_dict(), model=model, mode=config.mode, runtime=None
    )
    writer.error(where=where, message=str(exc), type=type(exc).__name__)
    writer.episode_end(status=status, reason=reason, answer=None, totals={})
    return EpisodeOutcome(task.task_id, status, reason, None, 0, 0, 0)
