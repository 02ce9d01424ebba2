"""Turning what an action gave back into what the model is shown.

- code blocks: stdout and stderr (cut to a budget, keeping head and tail, with a notice), the
  error with the agent's own traceback, the I/O layer's normalization one-liners, and a timeout
  or crash said in plain words (with whether variables survived);
- atomic tools: the kernel's one-line summary, or ``Error: ToolError: ...``;
- web tools: the tool result's text;
- new images: a user message with, for each, a line naming its index and file and the image
  itself as a data URL (many chat APIs do not perceive images inside tool messages).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pixelbox.harness.agents.base import Message
from pixelbox.harness.agents.messages import image_part, text_part
from pixelbox.harness.episode.imagebook import ImageEntry
from pixelbox.runtime.execution import Execution

DEFAULT_TEXT_CHARS = 8000
"""Characters of stdout (and, separately, stderr) shown per action."""
TRACEBACK_CHARS = 4000


def cut(text: str, limit: int) -> str:
    """``text`` when it fits, else its head and tail around a notice saying how much was left out."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    dropped = len(text) - head - tail
    return f"{text[:head]}\n[... {dropped} characters cut from this output ...]\n{text[-tail:]}"


def code_observation(execution: Execution, *, text_chars: int = DEFAULT_TEXT_CHARS) -> str:
    """The text shown for one executed code block."""
    parts = [_status_line(execution)]
    parts += _streams(execution, text_chars)
    if execution.status == "error" and execution.error is not None:
        trace = execution.error.traceback or f"{execution.error.ename}: {execution.error.evalue}"
        parts.append("Error:\n" + _tail(trace, TRACEBACK_CHARS))
    parts += _normalization_lines(execution)
    parts += _runtime_notices(execution)
    if execution.status == "ok" and len(parts) == 1 and not execution.artifacts:
        parts.append("(no output; use print() to see values)")
    return "\n".join(parts)


def tool_observation(execution: Execution) -> str:
    """The text shown for an atomic tool call: its summary line, or the error without a traceback."""
    if execution.status == "ok":
        return execution.stdout.strip() or "done"
    if execution.status == "error" and execution.error is not None:
        return f"Error: {execution.error.ename}: {execution.error.evalue}"
    lines = [_status_line(execution), *_runtime_notices(execution)]
    return "\n".join(lines)


def images_message(intro: str, images: Sequence[ImageEntry], notes: Sequence[str] = ()) -> Message:
    """A user message carrying ``intro``, any ``notes`` and each new image with its index and name."""
    content: list[dict[str, Any]] = []
    text = "\n\n".join(t for t in (intro, *notes) if t)
    if text:
        content.append(text_part(text))
    for image in images:
        content.append(text_part(f"{image.label()}:"))
        content.append(image_part(image.path))
    return {"role": "user", "content": content}


def image_lines(images: Sequence[ImageEntry]) -> str:
    """``New images: image 1 (...), image 2 (...)`` (empty when there are none)."""
    return "New images: " + ", ".join(image.label() for image in images) if images else ""


def _status_line(execution: Execution) -> str:
    if execution.status == "ok":
        return "The code ran successfully."
    if execution.status == "error":
        return "The code raised an error."
    if execution.status == "timeout":
        return "The code took too long and was stopped."
    reason = f": {execution.crash_reason}" if execution.crash_reason else ""
    return f"The Python kernel died{reason}. All variables were lost; re-import and reload what you need."


def _streams(execution: Execution, limit: int) -> list[str]:
    parts = []
    for name, text in (("stdout", execution.stdout), ("stderr", execution.stderr)):
        if text.strip():
            parts.append(f"{name}:\n{cut(text.rstrip(), limit)}")
    return parts


def _normalization_lines(execution: Execution) -> list[str]:
    lines = [str(n.get("message")) for n in execution.normalizations if n.get("message")]
    return ["Note: " + line for line in lines]


def _runtime_notices(execution: Execution) -> list[str]:
    if execution.status in ("timeout", "crashed") or execution.state_lost:
        notices = list(execution.notices)
        if execution.state_lost and not any("lost" in n for n in notices):
            notices.append("the kernel was replaced and all variables were lost")
        return ["Note: " + n for n in notices]
    return []


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[... traceback start cut ...]\n" + text[-limit:]
