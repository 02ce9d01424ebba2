"""Runner-variant agents: DeepEyes and Thyme, whose models call tools in text, not by function calling.

The official repository drives these models with their own prompt and tool syntax (our reading of
``general/run_general_script_deepeyes.py`` / ``_thyme.py``; the prompts here are our own words):

- no ``tools`` request parameter: the model writes ``<think>``, then either one action (``<code>``
  with Python, or ``<tool_log>`` holding a JSON array of ``{"tool_name", "arguments"}`` objects) or
  the final ``<answer>``;
- tool results come back as a user message ``<tool_results>[{tool_name, arguments, output}]</tool_results>``;
- the images are named ``image_0.png`` (the input) and, whatever name the code gives, every image saved
  in turn K (from 0) is ``image_{K+1}.png``: a later save of the turn overwrites an earlier one, a turn
  without a save leaves a gap. Thyme's runner redirects ``PIL.Image.Image.save``, DeepEyes' also
  ``cv2.imwrite`` (:data:`SAVE_APIS`); :meth:`TextToolAgent.save_as` asks the kernel for that name;
- a turn with ``<tool_log>`` calls runs them and not its ``<code>``;
- Thyme, from its second turn on, is reminded at the top of the system prompt to answer as soon as it
  is sure.

:class:`TextToolAgent` wraps an OpenAI-compatible agent: it rewrites the conversation into that shape
before each request (system prompt, function-call history into text) and reads ``<tool_log>`` back
into tool calls, so the episode loop, tracer and scoring stay the same. ``--agent deepeyes:MODEL`` and
``--agent thyme:MODEL`` select it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pixelbox.harness.agents.base import Agent, AgentTurn, Message, ToolCall, ToolSchema
from pixelbox.harness.episode.codemode import CODE_BLOCKS, CodeBlocks

VARIANTS = ("deepeyes", "thyme")
_TOOL_LOG = re.compile(r"<tool_log>(.*?)</tool_log>", re.DOTALL | re.IGNORECASE)

_PROMPT = """You answer questions about images by thinking, acting and observing, one step per turn.

Each turn, first reason inside <think>...</think>. Then do exactly one of:
{actions}- give the final answer inside <answer>...</answer>, in a turn with no action.
Never act and answer in the same turn, and do not guess the answer while acting.

{images}

Tools for <tool_log>:
{tools}
Results come back as <tool_results>[...]</tool_results>."""
_CODE_ACTIONS = {
    "first": "- act with Python inside one <code>...</code> block to look at the images (crop, rotate, resize, "
    "enhance, flip); only the first closed block of a turn runs;\n",
    "all": "- act with Python inside <code>...</code> blocks to look at the images (crop, rotate, resize, enhance, "
    "flip); every block of the turn runs, in order;\n",
}
_LOG_ACTION = (
    "- act with tools inside <tool_log>...</tool_log>: a JSON array of\n"
    '  {"tool_name": ..., "arguments": {...}} objects;\n'
)
_CODE_IMAGES = """Images: the input is image_0.png; open it by that name. Whatever name you save under, the image
a turn saves is stored as image_N.png, N being the turn's number counted from 1 (your first turn saves
image_1.png, the third image_3.png); save one image per turn, since a second save in the same turn
replaces the first. A saved image is shown to you with its name; an image you do not save is lost.
There is no display: do not call show()."""
_TOOL_IMAGES = """Images: image 0 is the input; every image tool makes the next image (1, 2, ...), is shown to
you, and takes the image it works on as image_index."""
_IMAGE_TOOLS = frozenset({"crop", "rotate", "flip", "resize", "enhance"})
SAVE_APIS = {"thyme": ("PIL.Image.Image.save",), "deepeyes": ("PIL.Image.Image.save", "cv2.imwrite")}
"""The save calls each runner redirects to the turn's file (other writes keep the kernel's naming)."""

_THYME_REMINDER = (
    "Reminder: once you are sure of the final answer, give it right away as <answer>...</answer>; keep "
    "working only while you are still unsure.\n\n"
)


def _tool_lines(tools: Sequence[ToolSchema]) -> str:
    lines = []
    for schema in tools:
        function = schema.get("function") or {}
        name = function.get("name")
        params = sorted((function.get("parameters") or {}).get("properties") or {})
        example = json.dumps([{"tool_name": name, "arguments": {p: "..." for p in params[:1]}}])
        lines.append(f"- {name}: {function.get('description', '')} e.g. {example}")
    return "\n".join(lines) or "- (none in this run)"


def system_prompt(variant: str, tools: Sequence[ToolSchema], turn: int, code_blocks: CodeBlocks = "first") -> str:
    """The variant's system prompt for the given turn (0-based) with the offered web tools; ``code_blocks``
    is the run's reading of ``<code>`` blocks, so the prompt says what runs."""
    atomic = any((t.get("function") or {}).get("name") in _IMAGE_TOOLS for t in tools)
    text = _PROMPT.format(
        actions=_LOG_ACTION if atomic else _CODE_ACTIONS[code_blocks] + _LOG_ACTION,
        images=_TOOL_IMAGES if atomic else _CODE_IMAGES,
        tools=_tool_lines(tools),
    )
    return _THYME_REMINDER + text if variant == "thyme" and turn >= 1 else text


def parse_tool_log(text: str) -> list[ToolCall]:
    """The calls of the turn's first ``<tool_log>``: a JSON array (``[[...]]`` flattened) of objects with
    ``tool_name`` (or ``tool``/``name``) and ``arguments`` (else the object's other keys); anything else is ignored."""
    found = _TOOL_LOG.search(text or "")
    if found is None or not found.group(1).strip():
        return []
    try:
        value = json.loads(found.group(1).strip())
    except json.JSONDecodeError:
        return []
    if not isinstance(value, list):
        return []
    if len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    calls: list[ToolCall] = []
    for entry in value:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("tool_name") or entry.get("tool") or entry.get("name") or "").strip()
        if not name:
            continue
        arguments = entry.get("arguments")
        if not isinstance(arguments, dict):
            arguments = {k: v for k, v in entry.items() if k not in ("tool_name", "tool", "name")}
        calls.append(ToolCall(f"tool_log_{len(calls)}", name, json.dumps(arguments, ensure_ascii=False)))
    return calls


def text_conversation(
    variant: str, messages: Sequence[Message], tools: Sequence[ToolSchema], code_blocks: CodeBlocks = "first"
) -> list[Message]:
    """The conversation as the variant's model sees it: its system prompt, tool calls and results as text."""
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    out: list[Message] = [{"role": "system", "content": system_prompt(variant, tools, turn, code_blocks)}]
    calls: dict[str, tuple[str, Any]] = {}
    pending: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool":
            name, arguments = calls.get(str(message.get("tool_call_id")), ("", {}))
            pending.append({"tool_name": name, "arguments": arguments, "output": _text(message.get("content"))})
            continue
        if pending:
            out.append(_results(pending))
            pending = []
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except json.JSONDecodeError:
                    arguments = {}
                calls[str(call.get("id"))] = (str(function.get("name")), arguments)
            out.append({"role": "assistant", "content": _text(message.get("content"))})
        else:
            out.append(dict(message))
    if pending:
        out.append(_results(pending))
    return out


def _results(pending: list[dict[str, Any]]) -> Message:
    return {"role": "user", "content": "<tool_results>" + json.dumps(pending, ensure_ascii=False) + "</tool_results>"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(p.get("text") or "") for p in parts if isinstance(p, dict) and p.get("type") == "text")


class TextToolAgent:
    """A DeepEyes- or Thyme-style agent over an OpenAI-compatible ``inner`` agent (see the module docstring)."""

    tool_calls_replace_code = True
    """As those runners: a turn with ``<tool_log>`` calls runs them and not its ``<code>`` (the episode reads this)."""

    def __init__(self, inner: Agent, variant: str, code_blocks: CodeBlocks = "first") -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown runner variant {variant!r}; use one of {', '.join(VARIANTS)}")
        if code_blocks not in CODE_BLOCKS:
            raise ValueError(f"code_blocks must be one of {', '.join(CODE_BLOCKS)}, got {code_blocks!r}")
        self.inner, self.variant, self.code_blocks = inner, variant, code_blocks

    @property
    def model(self) -> str:
        """The model name recorded in traces: the variant and the served model."""
        return f"{self.variant}:{self.inner.model}"

    def __getattr__(self, name: str) -> Any:
        """Everything else (endpoint, preflight) is the inner agent's."""
        return getattr(self.inner, name)

    def save_as(self, round_number: int) -> dict[str, Any]:
        """The kernel save name of round ``round_number`` (from 1, the official turn K + 1): ``image_{round}.png``
        for the variant's save calls (:data:`SAVE_APIS`)."""
        return {"name": f"image_{round_number}.png", "apis": list(SAVE_APIS[self.variant])}

    def prepare_sandbox(self, sandbox: Any, task: Any) -> None:
        """Put the input in the working directory as ``image_0.png``, the name the variant's prompt uses
        (saves into the working directory are captured as the episode's images)."""
        images = list(getattr(task, "images", ()) or ())
        if images:
            sandbox.upload(Path(images[0]), "image_0.png")

    def next_turn(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AgentTurn:
        """One turn: the rewritten conversation sent without function-calling tools, ``<tool_log>`` read back."""
        turn = self.inner.next_turn(text_conversation(self.variant, messages, tools, self.code_blocks), [])
        return replace(turn, tool_calls=tuple(parse_tool_log(turn.text)))
