"""A VisualToolBench episode, played as the official runner plays it, on our traced sandbox.

Per turn: the system prompt, then (multi-turn) every earlier turn as its prompt text with the
*golden* answer as the assistant's reply, then the turn's prompt with its image (JPEG, quality 85,
inline). Each round the model gets the six tools; a reply without tool calls is the turn's answer.
Every tool call of a reply is run, in order; each gets a ``tool`` message holding the Python
``str()`` of its result dict, and a call that saved images is followed by a user message showing
them. A turn that reaches ``max_rounds`` rounds with tool calls ends with :data:`LIMIT_ANSWER`.

The code tools run in one sandbox per episode, each call in a fresh namespace holding the names the
official tool predefines (:mod:`.interpreter`: the kernel is restarted and prepared in the background
after each call, files kept). ``stateful=True`` keeps one kernel instead. Unlike the official
runner, the code runs isolated with the full builtins (the official one restricts builtins to 17
names in the harness process), and every executed operation is traced.
"""

from __future__ import annotations

import base64
import io
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelbox.harness.agents.base import Agent, AgentTurn, Message, ToolCall
from pixelbox.harness.agents.messages import text_part
from pixelbox.harness.episode import (
    EpisodeAborted,
    EpisodeEnd,
    EpisodeOutcome,
    ask_agent,
    record_failed_start,
    redact,
    start_fields,
    trace_call,
)
from pixelbox.harness.episode.imagebook import ImageBook, ImageEntry
from pixelbox.harness.suites import EpisodeContext
from pixelbox.runtime.errors import PixelboxError

from .calculator import calculate
from .interpreter import Interpreter
from .tasks import VtbTask
from .tools import CALCULATOR, CODE_TOOLS, IMAGE_TOOL, tool_schemas
from .web import WEB_TOOL_NAMES, VtbWeb

LIMIT_ANSWER = "(no final answer: the model was still calling tools when the round limit was reached)"
SYSTEM_PROMPT = """You are a visual-reasoning assistant who uses tools actively.
When the user gives you an image and a problem whose visual evidence is small, unclear or off-centre:
1. Look at the image closely and note which visual cues point to what you need.
2. Use the image-processing tool (crop, zoom, enhance, rotate...) to isolate that region and make it legible.
3. Save every processed image; saved images are added to the conversation for you to look at.
4. Repeat until the evidence is clear enough to answer.
5. Check that the processed images really support your answer before you reply.
6. Use the other tools (search, web pages, calculator, Python) when the question needs them.
7. Tool calls are limited, so use them with care."""
"""Our wording of the official "high" system prompt (``--system-prompt FILE`` replaces it)."""


@dataclass(frozen=True)
class LoopSettings:
    """How episodes run: round limit, seconds per code run, fresh or kept namespace, system prompt."""

    max_rounds: int = 20
    execution_timeout: float = 60.0
    stateful: bool = False
    system_prompt: str | None = SYSTEM_PROMPT

    def to_dict(self) -> dict[str, Any]:
        return {"max_rounds": self.max_rounds, "execution_timeout": self.execution_timeout, "stateful": self.stateful}


class _Stop(Exception):
    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def run_vtb_episode(task: VtbTask, agent: Agent, context: EpisodeContext, settings: LoopSettings) -> EpisodeOutcome:
    """Start the task's sandbox, play every turn, always close the sandbox; the trace ends with ``episode_end``."""
    try:
        sandbox = context.make_sandbox(task)
    except Exception as exc:
        return record_failed_start(task, agent.model, context.config, context.writer, "runtime", exc)  # type: ignore[arg-type]
    try:
        episode = VtbEpisode(task, agent, sandbox, context, settings)
        try:
            return episode.run()
        finally:
            episode.interpreter.close()
    finally:
        sandbox.close()


class VtbEpisode:
    """One task, one agent, one started sandbox; writes the trace through ``context.writer``."""

    def __init__(self, task: VtbTask, agent: Agent, sandbox: Any, context: EpisodeContext, settings: LoopSettings):
        self.task, self.agent, self.sandbox, self.context, self.settings = task, agent, sandbox, context, settings
        self.writer = context.writer
        self.book = ImageBook(context.images_dir, [])
        self.web = VtbWeb(context.web)
        paths = sandbox.paths
        self.save_dir = str(paths.workspace)
        self.inputs = {Path(p): f"{paths.inputs}/{name}" for p, name in zip(task.images, sandbox.inputs, strict=True)}
        self.rounds = self.calls = self.code_runs = 0
        self.interpreter = Interpreter(sandbox, self.save_dir, settings.execution_timeout, stateful=settings.stateful)
        self.answers: list[str] = []

    # -- the episode -----------------------------------------------------------------------------------------

    def run(self) -> EpisodeOutcome:
        self._start()
        status, reason = "answered", None
        try:
            for number in range(len(self.task.turns)):
                if not self._turn(number):
                    status, reason = "budget_exhausted", f"turn {number + 1} reached {self.settings.max_rounds} rounds"
        except EpisodeAborted:
            raise
        except _Stop as stop:
            status, reason = stop.status, stop.reason
        except (PixelboxError, OSError) as exc:
            status, reason = "runtime_error", f"the sandbox failed: {type(exc).__name__}: {exc}"
            self.writer.error(where="runtime", message=str(exc), type=type(exc).__name__)
        except Exception as exc:
            status, reason = "harness_error", f"{type(exc).__name__}: {exc}"
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
            self.writer.error(where="harness", message=str(exc), type=type(exc).__name__, traceback=tb)
        answer = self.answers[-1] if self.answers else None
        totals = {
            "rounds": self.rounds,
            "tool_calls": self.calls,
            "code_runs": self.code_runs,
            "images": len(self.book.entries),
        }
        self.writer.write(
            "episode_end", status=status, reason=reason, answer=answer, totals=totals, turn_answers=list(self.answers)
        )
        return EpisodeOutcome(
            self.task.task_id, status, reason, answer, self.rounds, self.calls, len(self.book.entries)
        )

    def _start(self) -> None:

        self.writer.write(
            "episode_start",
            **start_fields(
                self.task,
                self.agent,
                self.sandbox,
                self.context.config,
                config={**self.context.config.to_dict(), "vtb": self.settings.to_dict()},
            ),
            tools=[t["function"]["name"] for t in tool_schemas([], self.save_dir)],
            suite="visualtoolbench",
        )

    def _turn(self, number: int) -> bool:
        """Play turn ``number``; False when it ran out of rounds (its answer is then :data:`LIMIT_ANSWER`)."""
        turn = self.task.turns[number]
        messages: list[Message] = []
        if self.settings.system_prompt:
            messages.append({"role": "system", "content": self.settings.system_prompt})
        for earlier in self.task.turns[:number]:
            messages += [
                {"role": "user", "content": earlier.prompt},
                {"role": "assistant", "content": earlier.golden_answer},
            ]
        content: list[dict[str, Any]] = [text_part(turn.prompt)]
        images = []
        if turn.image is not None:
            content.append(jpeg_part(turn.image))
            images.append(self.inputs[turn.image])
        messages.append({"role": "user", "content": content})
        for message in messages:
            self.writer.write("message", round=self.rounds, turn=number, message=redact(message))
        for _ in range(self.settings.max_rounds):
            self._check_stop()
            tools = tool_schemas(images, self.save_dir, stateful=self.settings.stateful)
            reply = self._ask(messages, tools, number)
            messages.append(reply.assistant_message())
            if not reply.tool_calls:
                self.answers.append(reply.text)
                return True
            self.rounds += 1
            for position, call in enumerate(reply.tool_calls, start=1):
                self._check_stop()
                for message in self._call(call, f"t{number}.r{self.rounds}.{position}", images):
                    messages.append(message)
                    self.writer.write("message", round=self.rounds, turn=number, message=redact(message))
        self.answers.append(LIMIT_ANSWER)
        self.writer.write(
            "budget_hit",
            limit="max_rounds",
            value=self.settings.max_rounds,
            turn=number,
            reason=f"turn {number + 1}: {self.settings.max_rounds} rounds of tool calls",
        )
        return False

    def _check_stop(self) -> None:
        if self.context.should_stop():
            raise EpisodeAborted(f"the run was stopped during task {self.task.task_id}")

    def _ask(self, messages: list[Message], tools: list[dict[str, Any]], number: int) -> AgentTurn:
        try:
            return ask_agent(self.agent, messages, tools, self.writer, self.rounds + 1)
        except EpisodeEnd as end:
            raise _Stop(end.status, end.reason or end.status) from None

    # -- one tool call ----------------------------------------------------------------------------------------

    def _call(self, call: ToolCall, action_id: str, images: list[str]) -> list[Message]:
        """Run one call; the messages that answer it (its ``tool`` message, then any images)."""
        self.calls += 1
        arguments, problem = trace_call(self.writer, self.rounds, action_id, call)
        added: list[ImageEntry] = []
        if problem is not None:
            result: dict[str, Any] = {"status": "error", "error": problem}
            self._observe_result(action_id, call.name, arguments, result, "none")
        elif call.name in CODE_TOOLS:
            result, added = self._run_code(call.name, arguments, action_id)
        elif call.name in WEB_TOOL_NAMES or call.name == CALCULATOR:
            result, source = (
                (calculate(arguments.get("expression")), "local")
                if call.name == CALCULATOR
                else self.web.call(call.name, arguments)
            )
            self._observe_result(action_id, call.name, arguments, result, source)
        else:
            result = {"error": f"there is no tool named {call.name!r}"}
            self._observe_result(action_id, call.name, arguments, result, "none")
        messages: list[Message] = [{"role": "tool", "tool_call_id": call.id, "name": call.name, "content": str(result)}]
        if added:
            images += [f"{self.save_dir}/{entry.name}" for entry in added]
            content = [text_part(f"The images saved by tool call {call.id}:")]
            content += [jpeg_part(entry.path) for entry in added]
            messages.append({"role": "user", "content": content})
        return messages

    def _run_code(
        self, name: str, arguments: dict[str, Any], action_id: str
    ) -> tuple[dict[str, Any], list[ImageEntry]]:
        code = arguments.get("code")
        if not isinstance(code, str) or not code.strip():
            refused = {"ok": "false", "stdout": "", "stderr": "code must be a non-empty string"}
            self._observe_result(action_id, name, arguments, refused, "none")
            return refused, []
        execution = self.interpreter.run(code)
        self.code_runs += 1
        added = self.book.ingest(self.sandbox, execution.artifacts, f"tool:{name}")
        if name == IMAGE_TOOL:
            paths = [f"{self.save_dir}/{entry.name}" for entry in added]
            result: dict[str, Any] = {
                "ok": "true" if execution.status == "ok" else "false",
                "stdout": execution.stdout,
                "stderr": _stderr(execution),
                "output_path": paths[0] if paths else "",
                "output_paths": paths,
            }
        else:
            result, added = {"stdout": execution.stdout, "stderr": _stderr(execution)}, []
        self.writer.observation(
            action_id=action_id,
            execution=execution,
            tool_result=None,
            shown=str(result),
            result=result,
            images=[entry.to_dict(self.context.run_root) for entry in added],
        )
        return result, added

    def _observe_result(
        self, action_id: str, tool: str, arguments: dict[str, Any], result: dict[str, Any], source: str
    ) -> None:
        ok = result.get("status") != "error" and "error" not in result
        record = {"tool": tool, "args": arguments, "ok": ok, "text": str(result), "data": result, "source": source}
        self.writer.observation(action_id=action_id, execution=None, tool_result=record, shown=str(result))


def _stderr(execution: Any) -> str:
    """stderr, with the error's traceback when the code failed (the official tool prints it there)."""
    parts = [execution.stderr or ""]
    if execution.error is not None:
        parts.append(execution.error.traceback or f"{execution.error.ename}: {execution.error.evalue}")
    elif execution.status not in ("ok", "error"):
        parts.append(f"execution {execution.status}: {execution.crash_reason or 'no result'}")
    return "\n".join(p for p in parts if p)


def jpeg_part(path: str | Path) -> dict[str, Any]:
    """An image as the official runner sends it: RGB JPEG, quality 85, inline base64."""
    from PIL import Image

    with Image.open(path) as image:
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="JPEG", quality=85, optimize=True)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{data}"}}
