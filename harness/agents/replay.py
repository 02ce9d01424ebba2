"""An agent that plays back recorded assistant turns: for tests, demos and re-running a trajectory.

A recording is a list of turns. Accepted files:

- ``.json``: a list of turns, ``{"turns": [...]}``, or ``{"tasks": {TASK_ID: [turns]}}``;
- ``.jsonl``: one turn per line, or a pixelbox episode trace (its ``turn`` records are replayed);
- a directory holding ``TASK_ID.json`` or ``TASK_ID.jsonl`` per task.

A turn is a string (text only) or an object with ``text`` (or ``content``) and ``tool_calls``, each
call ``{name, arguments, id?}`` (arguments an object or a JSON string) or in the OpenAI
``{id, type, function: {name, arguments}}`` shape.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pixelbox.harness.agents.base import AgentError, AgentTurn, Message, ToolCall, ToolSchema, Usage
from pixelbox.harness.agents.messages import content_text


class RecordingError(AgentError):
    """A recording file is missing, unreadable or has a malformed turn; the message says where."""


class ReplayExhausted(AgentError):
    """The episode asked for more turns than the recording holds."""


class ReplayAgent:
    """Returns the recorded turns in order, ignoring the messages it is sent."""

    def __init__(self, turns: Sequence[AgentTurn], *, model: str = "replay", source: str = "<memory>") -> None:
        self._turns = list(turns)
        self._next = 0
        self._model = model
        self.source = source

    @property
    def model(self) -> str:
        """The name recorded in traces (``replay`` unless given)."""
        return self._model

    @property
    def endpoint(self) -> str:
        """Where the turns come from, for reports' endpoint field: the recording's folder (its file names
        the task, which reports show anyway)."""
        return f"replay of {Path(self.source).parent}"

    @property
    def remaining(self) -> int:
        """Turns not yet played."""
        return len(self._turns) - self._next

    def next_turn(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AgentTurn:
        """The next recorded turn; :class:`ReplayExhausted` when there is none."""
        if self._next >= len(self._turns):
            raise ReplayExhausted(
                f"recording {self.source} has {len(self._turns)} turn(s) and the episode asked for turn "
                f"{self._next + 1}; the recorded run must have continued differently (or add the missing turns)"
            )
        turn = self._turns[self._next]
        self._next += 1
        return turn

    @classmethod
    def from_turns(cls, turns: Sequence[Any], *, model: str = "replay", source: str = "<memory>") -> ReplayAgent:
        """Build from turn objects in any accepted shape (see the module docstring)."""
        parsed = [parse_turn(t, f"{source} turn {i + 1}", i) for i, t in enumerate(turns)]
        return cls(parsed, model=model, source=source)

    @classmethod
    def from_file(cls, path: str | Path, task_id: str | None = None, *, model: str = "replay") -> ReplayAgent:
        """Load a recording; ``task_id`` picks one task from a directory or a ``{"tasks": ...}`` file."""
        location = Path(path)
        if location.is_dir():
            location = _task_file(location, task_id)
        turns = _read_turns(location, task_id)
        return cls.from_turns(turns, model=model, source=str(location))


def _task_file(directory: Path, task_id: str | None) -> Path:
    if task_id is None:
        raise RecordingError(f"{directory} is a directory of recordings; say which task to replay")
    for suffix in (".jsonl", ".json"):
        candidate = directory / f"{task_id}{suffix}"
        if candidate.is_file():
            return candidate
    raise RecordingError(f"no recording for task {task_id!r} in {directory} (expected {task_id}.json or .jsonl)")


def _read_turns(path: Path, task_id: str | None) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordingError(f"cannot read recording {path}: {exc.strerror}") from exc
    if path.suffix == ".jsonl":
        return _jsonl_turns(text, path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordingError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    return _json_turns(data, path, task_id)


def _jsonl_turns(text: str, path: Path) -> list[Any]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise RecordingError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
    if rows and all(isinstance(r, dict) and "kind" in r for r in rows):
        return [r for r in rows if r["kind"] == "turn"]
    return rows


def _json_turns(data: Any, path: Path, task_id: str | None) -> list[Any]:
    if isinstance(data, dict) and isinstance(data.get("tasks"), dict):
        if task_id not in data["tasks"]:
            raise RecordingError(f"{path}: no recording for task {task_id!r} (has {', '.join(data['tasks'])})")
        data = data["tasks"][task_id]
    if isinstance(data, dict) and "turns" in data:
        data = data["turns"]
    if not isinstance(data, list):
        raise RecordingError(f"{path}: expected a list of turns, {{'turns': [...]}} or {{'tasks': {{id: [...]}}}}")
    return data


def parse_turn(raw: Any, where: str, index: int) -> AgentTurn:
    """One recorded turn in any accepted shape -> :class:`AgentTurn`."""
    if isinstance(raw, str):
        return AgentTurn(text=raw, raw=raw)
    if not isinstance(raw, dict):
        raise RecordingError(f"{where}: expected a string or an object with 'text' and/or 'tool_calls'")
    text = raw["text"] if "text" in raw else content_text(raw.get("content"))
    calls = raw.get("tool_calls") or []
    if not isinstance(text, str) or not isinstance(calls, list):
        raise RecordingError(f"{where}: 'text' must be a string and 'tool_calls' a list")
    usage = Usage.from_response(raw.get("usage"))
    tool_calls = tuple(_parse_call(c, f"{where} tool call {k + 1}", f"call_{index}_{k}") for k, c in enumerate(calls))
    return AgentTurn(text=text, tool_calls=tool_calls, usage=usage, raw=raw)


def _parse_call(raw: Any, where: str, default_id: str) -> ToolCall:
    if not isinstance(raw, dict):
        raise RecordingError(f"{where}: expected an object with 'name' and 'arguments'")
    nested = raw.get("function")
    function: dict[str, Any] = nested if isinstance(nested, dict) else raw
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise RecordingError(f"{where}: missing the tool 'name'")
    arguments = function.get("arguments", function.get("arguments_json", {}))
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return ToolCall(id=str(raw.get("id") or default_id), name=name, arguments_json=arguments)
