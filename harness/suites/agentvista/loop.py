"""The AgentVista episode as the official runner plays it, on pixelbox's sandbox and traces.

The system prompt, then one user message with every input image followed by the question. Each
model call is a turn. A turn with tool calls runs only the first one (the official runner sends
``parallel_tool_calls=False`` and executes ``tool_calls[0]``); its result goes back as a ``tool``
message ``{"result": text}``, and images it produced follow in one user message ("Images from tool
output: ..."). A turn without tool calls ends the episode: its ``<answer>`` is the answer, else the
episode ends unparsed (officially "Could not parse model response"). Budgets: 30 turns, 100 images
(inputs included), and a text-only token estimate (characters / 4) that stops the episode once it
reaches 65,536 - 8,192; ``image_search`` and ``web_search`` are each allowed 100 successful calls.

Where we differ (docs/agentvista.md): every tool call gets a ``tool`` reply, including refused and
failed ones (the official runner sends only a user message there, which OpenAI-compatible servers
reject as an unanswered call); code output blocks come in a fixed order (stdout, stderr, results,
images, error) rather than message order.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pixelbox.harness.agents.base import Agent, AgentError, AgentTurn, Message, ToolCall
from pixelbox.harness.agents.messages import image_part, text_part
from pixelbox.harness.episode import (
    EpisodeAborted,
    EpisodeEnd,
    EpisodeOutcome,
    ask_agent,
    play_until_end,
    record_failed_start,
    redact,
    start_fields,
    trace_call,
)
from pixelbox.harness.episode.budgets import Budget
from pixelbox.harness.episode.codemode import extract_answer
from pixelbox.harness.episode.imagebook import ImageEntry
from pixelbox.harness.suites import EpisodeContext
from pixelbox.harness.suites.agentvista import tools as vt
from pixelbox.harness.suites.agentvista.images import input_names, prepare
from pixelbox.harness.suites.agentvista.official import official_from_env
from pixelbox.harness.suites.agentvista.tasks import VistaTask
from pixelbox.runtime.execution import Execution

MAX_IMAGES = 100
MAX_TOTAL_TOKENS = 65_536
MAX_COMPLETION_TOKENS = 8_192
TOKEN_STOP = MAX_TOTAL_TOKENS - MAX_COMPLETION_TOKENS
UNPARSED = "Error: Could not parse model response."

SYSTEM_PROMPT = """You answer questions about images as a visual research agent.

Tools you can call:
1. web_search - look facts up on the web
2. image_search - find images by text, or pages showing an image (reverse search)
3. visit - read a web page with a stated goal
4. code_interpreter - run Python to inspect, crop, enhance or measure the images, or to calculate

How to work:
1. Look closely at the images and the question.
2. Reason step by step, and say why before each tool call.
3. Call the tool that helps most; one tool per turn, never several at once.
4. Keep going, turn after turn, until the evidence is enough.
5. Then give the final answer between <answer> and </answer>.

A reply without a tool call ends the task, so that reply must contain your <answer>...</answer>."""


@dataclass(frozen=True)
class PreparedTask:
    """The task as the sandbox gets it: the official resized copies of its images as inputs."""

    task: VistaTask
    images: tuple[Path, ...]

    @property
    def task_id(self) -> str:
        return self.task.task_id

    def to_dict(self) -> dict[str, Any]:
        return {**self.task.to_dict(), "prepared_images": [str(p) for p in self.images]}


@dataclass
class _Images:
    """The episode's images by name (``original_image``..., ``tool_image_N``), kept on the host."""

    directory: Path
    entries: dict[str, ImageEntry] = field(default_factory=dict)

    def add_inputs(self, paths: tuple[Path, ...]) -> None:
        from PIL import Image

        for index, (path, name) in enumerate(zip(paths, input_names(len(paths)), strict=True)):
            with Image.open(path) as image:
                width, height = image.size
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            self.entries[name] = ImageEntry(index, name, path, width, height, digest, "input")

    def ingest(self, sandbox: Any, artifacts: list[dict[str, Any]]) -> list[ImageEntry]:
        added = []
        for record in sorted(artifacts, key=lambda r: int(r["index"])):
            name = f"tool_image_{int(record['index'])}"
            if name in self.entries:
                continue
            data = sandbox.download(str(record.get("relpath") or record.get("kernel_path") or record["path"]))
            self.directory.mkdir(parents=True, exist_ok=True)
            ext = os.path.splitext(str(record.get("name") or ""))[1] or ".png"
            target = self.directory / f"{name}{ext}"
            target.write_bytes(data)
            width, height = record.get("width"), record.get("height")
            entry = ImageEntry(
                int(record["index"]),
                name,
                target,
                width if isinstance(width, int) else None,
                height if isinstance(height, int) else None,
                hashlib.sha256(data).hexdigest(),
                "code",
            )
            self.entries[name] = entry
            added.append(entry)
        return added

    def read(self, name: str) -> bytes | None:
        entry = self.entries.get(name)
        return entry.path.read_bytes() if entry is not None else None


def jpeg_part(path: Path) -> dict[str, Any]:
    """The image as the official runner sends it: a base64 JPEG (quality 85) data URL."""
    from PIL import Image

    with Image.open(path) as image:
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="JPEG", quality=85)
    return image_part(buffer.getvalue(), mime="image/jpeg")


class VistaEpisode:
    """One AgentVista task played with one agent in one started sandbox, writing the context's trace."""

    def __init__(self, task: PreparedTask, agent: Agent, sandbox: Any, context: EpisodeContext) -> None:
        self.task, self.agent, self.sandbox, self.context = task, agent, sandbox, context
        self.writer = context.writer
        self.budget = Budget(context.config.budgets)
        self.images = _Images(Path(context.images_dir))
        self.images.add_inputs(task.images)
        self.searches = vt.SearchCounts()
        self.tools = vt.tool_schemas(web=context.web is not None)
        self.messages: list[Message] = []
        self.tokens = 0

    def run(self) -> EpisodeOutcome:
        self._start()
        status, reason, answer = play_until_end(self._loop, self.writer)
        totals = {
            **self.budget.snapshot(),
            "images": len(self.images.entries),
            "token_estimate": self.tokens,
            "searches": dict(self.searches.used),
        }
        self.writer.episode_end(status=status, reason=reason, answer=answer, totals=totals)
        n_images = len(self.images.entries)
        return EpisodeOutcome(
            self.task.task_id, status, reason, answer, self.budget.rounds, self.budget.tool_calls, n_images
        )

    # -- the loop ---------------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            if self.context.should_stop():
                raise EpisodeAborted(f"the run was stopped during task {self.task.task_id}")
            self._check_limits()
            turn = self._ask()
            call = turn.tool_calls[0] if turn.tool_calls else None
            message = turn.assistant_message()
            if call is not None:
                message["tool_calls"] = [call.to_message()]
            self.messages.append(message)
            self.tokens += len(turn.text or "") // 4
            if call is None:
                answer = extract_answer(turn.text or "")
                if answer is None:
                    raise EpisodeEnd("no_answer", "the reply had no tool call and no <answer>", UNPARSED)
                raise EpisodeEnd("answered", None, answer)
            self._run_call(call)

    def _check_limits(self) -> None:
        hit = self.budget.start_round()
        if hit is not None:
            self.writer.budget_hit(hit)
            raise EpisodeEnd("budget_exhausted", hit.reason, "Error: Reached max turns without a definitive answer.")
        if len(self.images.entries) >= MAX_IMAGES:
            self.writer.write("budget_hit", limit="max_images", allowed=MAX_IMAGES, used=len(self.images.entries))
            raise EpisodeEnd(
                "budget_exhausted", f"budget exhausted: {MAX_IMAGES} images", "Error: Reached max image limit."
            )
        if self.tokens >= TOKEN_STOP:
            self.writer.write("budget_hit", limit="max_total_tokens", allowed=TOKEN_STOP, used=self.tokens)
            reason = f"budget exhausted: token estimate {self.tokens} >= {TOKEN_STOP}"
            raise EpisodeEnd("budget_exhausted", reason, "Error: Reached max token limit.")

    def _ask(self) -> AgentTurn:
        return ask_agent(self.agent, self.messages, self.tools, self.writer, self.budget.rounds)

    # -- one tool call ----------------------------------------------------------------------------

    def _run_call(self, call: ToolCall) -> None:
        hit = self.budget.admit_tool_call()
        if hit is not None:
            self.writer.budget_hit(hit)
            raise EpisodeEnd("budget_exhausted", hit.reason, "Error: Reached max turns without a definitive answer.")
        action_id = f"r{self.budget.rounds}.1"
        is_code = call.name == vt.CODE_TOOL
        arguments, problem = trace_call(
            self.writer, self.budget.rounds, action_id, call, code_argument="code" if is_code else None
        )
        if problem is not None:
            self._reply(call, action_id, f"Error: {problem}", error=problem)
            return
        refused = self.searches.exceeded(call.name)
        if refused is not None:
            self._reply(call, action_id, f"{refused}\n\nPlease continue your reasoning with a different approach.")
            return
        if is_code:
            self._run_code(call, action_id, arguments)
        elif call.name in vt.SCHEMAS and call.name != vt.CODE_TOOL and self.context.web is not None:
            self._run_web(call, action_id, arguments)
        else:
            offered = ", ".join(t["function"]["name"] for t in self.tools)
            text = f"Error: there is no tool named {call.name!r}; the tools are: {offered}"
            self._reply(call, action_id, text, error=text[7:])

    def _run_code(self, call: ToolCall, action_id: str, arguments: dict[str, Any]) -> None:
        code = arguments.get("code")
        if not isinstance(code, str) or not code.strip():
            self._reply(call, action_id, "Error: code must be a non-empty string of Python", error="no code")
            return
        execution = self.sandbox.execute(code, timeout=self.budget.execution_timeout())
        self.budget.note_execution(execution.status)
        added = self.images.ingest(self.sandbox, execution.artifacts)
        text = code_result_text(execution, added)
        self.searches.count(call.name)
        self._reply(call, action_id, text, execution=execution, images=added)

    def _run_web(self, call: ToolCall, action_id: str, arguments: dict[str, Any]) -> None:
        assert self.context.web is not None
        summaries: list[dict[str, Any]] = []
        text, result = vt.run_web_tool(
            self.context.web, call.name, arguments, self.images.read, self._summarizer(summaries)
        )
        ok = not text.startswith("Error:")
        if ok:
            self.searches.count(call.name)
        self._reply(call, action_id, text, tool_result=result, error=None if ok else text[7:], summaries=summaries)

    def _summarizer(self, record: list[dict[str, Any]]) -> vt.Summarize:
        def summarize(url: str, goal: str, content: str) -> str:
            try:
                turn = self.agent.next_turn(vt.summary_request(url, goal, content), [])
            except AgentError as exc:
                record.append({"error": str(exc)})
                return f"(the page could not be summarised: {exc})\n\n{content[:4000]}"
            record.append(turn.to_dict())
            return turn.text or ""

        return summarize

    def _reply(
        self,
        call: ToolCall,
        action_id: str,
        text: str,
        *,
        execution: Execution | None = None,
        tool_result: Any = None,
        images: list[ImageEntry] | None = None,
        error: str | None = None,
        summaries: list[dict[str, Any]] | None = None,
    ) -> None:
        images = images or []
        shown = {"result": text}
        new: list[Message] = [{"role": "tool", "tool_call_id": call.id, "content": json.dumps(shown)}]
        if images:
            usage = self.searches.usage_line() if call.name in vt.SEARCH_LIMITS else ""
            parts = [jpeg_part(entry.path) for entry in images]
            parts.append(text_part(f"Images from tool output: {text}{usage}"))
            new.append({"role": "user", "content": parts})
        self.tokens += len(text) // 4
        self.writer.observation(
            action_id=action_id,
            execution=execution,
            tool_result=tool_result.to_dict() if hasattr(tool_result, "to_dict") else tool_result,
            shown=text,
            images=[entry.to_dict(self.context.run_root) for entry in images],
            error=error,
            **({"summary_turns": summaries} if summaries else {}),
        )
        for message in new:
            self.messages.append(message)
            self.writer.write("message", round=self.budget.rounds, message=redact(message))

    # -- start ------------------------------------------------------------------------------------

    def _system_prompt(self) -> tuple[str, str]:
        """The official text from the user's checkout, else ``--system-prompt``, else ours; and which it is."""
        official = official_from_env()
        if official is not None:
            return official.system_prompt, official.source
        if self.context.config.templates.system is not None:
            return self.context.config.templates.system, "--system-prompt"
        return SYSTEM_PROMPT, "pixelbox"

    def _start(self) -> None:
        question = self.task.task.question
        system, source = self._system_prompt()
        inputs = [self.images.entries[name] for name in input_names(len(self.task.images))]
        content = [jpeg_part(entry.path) for entry in inputs]
        content.append(text_part(question))
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": content}]
        self.tokens = len(system + question) // 4
        config = self.context.config
        self.writer.write(
            "episode_start",
            **start_fields(self.task, self.agent, self.sandbox, config),
            suite="agentvista",
            system_prompt_source=source,
            tools=[t["function"]["name"] for t in self.tools],
            messages=[redact(m) for m in self.messages],
            images=[e.to_dict(self.context.run_root) for e in inputs],
        )


def code_result_text(execution: Execution, added: list[ImageEntry]) -> str:
    """The ``code_interpreter`` result: one fenced block per kind of output, as the official tool writes them."""
    blocks: list[tuple[str, str]] = []
    if execution.stdout:
        blocks.append(("stdout", execution.stdout))
    if execution.stderr:
        blocks.append(("stderr", execution.stderr))
    for output in execution.outputs:
        plain = output.data.get("text/plain")
        if isinstance(plain, str) and not output.files:
            blocks.append((output.type, plain))
    blocks += [("display_data", f"[Image: {entry.name}, file: {entry.path.name}]") for entry in added]
    if execution.error is not None:
        blocks.append(("error", execution.error.traceback or f"{execution.error.ename}: {execution.error.evalue}"))
    elif execution.status in ("timeout", "crashed"):
        blocks.append(("error", execution.crash_reason or f"the code did not finish ({execution.status})"))
    text = "".join(f"\n\n{kind}:\n\n```\n{body}\n```" for kind, body in blocks)
    return text if text.strip() else "Finished execution."


def run_vista_episode(task: VistaTask, agent: Agent, context: EpisodeContext) -> EpisodeOutcome:
    """Prepare the task's images, start its sandbox, play the episode, and always close the sandbox."""
    try:
        prepared = PreparedTask(task, _prepare_inputs(task, Path(context.images_dir)))
        sandbox = context.make_sandbox(prepared)
    except Exception as exc:
        return record_failed_start(task, agent.model, context.config, context.writer, "runtime", exc)  # type: ignore[arg-type]
    try:
        return VistaEpisode(prepared, agent, sandbox, context).run()
    finally:
        sandbox.close()


def _prepare_inputs(task: VistaTask, images_dir: Path) -> tuple[Path, ...]:
    names = input_names(len(task.images))
    return tuple(prepare(path, images_dir / "inputs", name) for path, name in zip(task.images, names, strict=True))
