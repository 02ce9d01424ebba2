"""What every agent returns: one assistant turn with its text, tool calls, token usage and timing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]
"""A chat message in the OpenAI chat-completions shape (``role``, ``content``, ``tool_calls``...)."""
ToolSchema = dict[str, Any]
"""A function-calling tool schema: ``{"type": "function", "function": {name, description, parameters}}``."""


class AgentError(RuntimeError):
    """The agent could not produce a turn (the model endpoint failed, or a recording ran out)."""


class ToolArgumentsError(ValueError):
    """A tool call's arguments are not a JSON object."""


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for. ``arguments_json`` is kept verbatim as the model wrote it."""

    id: str
    name: str
    arguments_json: str

    def arguments(self) -> dict[str, Any]:
        """The arguments parsed; raises :class:`ToolArgumentsError` saying what is wrong."""
        try:
            value = json.loads(self.arguments_json or "{}")
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(f"arguments of {self.name} are not valid JSON: {exc.msg}") from exc
        if not isinstance(value, dict):
            raise ToolArgumentsError(f"arguments of {self.name} must be a JSON object, got {type(value).__name__}")
        return value

    def to_message(self) -> dict[str, Any]:
        """This call in the assistant message's ``tool_calls`` shape."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments_json}}


@dataclass(frozen=True)
class Usage:
    """Token counts of one turn; ``None`` where the server did not report them."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None

    @classmethod
    def from_response(cls, raw: Any) -> Usage | None:
        """Read an OpenAI ``usage`` object; None when it is absent or not an object."""
        if not isinstance(raw, dict):
            return None
        prompt, completion = _int(raw.get("prompt_tokens")), _int(raw.get("completion_tokens"))
        total = _int(raw.get("total_tokens"))
        if total is None and prompt is not None and completion is not None:
            total = prompt + completion
        return cls(prompt, completion, total)

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(_sum(a, b) for a, b in zip(self.astuple(), other.astuple(), strict=True)))

    def astuple(self) -> tuple[int | None, int | None, int | None]:
        """``(prompt, completion, total)``."""
        return (self.prompt_tokens, self.completion_tokens, self.total_tokens)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _sum(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


@dataclass(frozen=True)
class AgentTurn:
    """One assistant turn.

    ``latency`` is the duration of the request that succeeded (seconds); ``attempts`` counts
    requests including retries. ``raw`` is the server's response body as parsed JSON (or the
    recorded turn, for replay). ``reasoning`` holds a separate reasoning channel when the server
    returns one (``reasoning_content``).
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    raw: Any = None
    latency: float = 0.0
    attempts: int = 1
    finish_reason: str | None = None
    reasoning: str | None = None
    retries: tuple[dict[str, Any], ...] = field(default=())

    def assistant_message(self) -> Message:
        """The message to append to the conversation so the next request carries this turn."""
        message: Message = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message() for call in self.tool_calls]
        return message

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable view (for traces)."""
        data = asdict(self)
        data["tool_calls"] = [asdict(c) for c in self.tool_calls]
        data["retries"] = list(self.retries)
        return data


@runtime_checkable
class Agent(Protocol):
    """Anything that produces the next assistant turn from the conversation so far."""

    @property
    def model(self) -> str:
        """The model name recorded in traces."""
        ...

    def next_turn(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AgentTurn:
        """Ask for one turn; raise :class:`AgentError` when none can be had."""
        ...
