"""``conversation.json`` and the per-turn files of the official layout, rebuilt from a trace.

The trace keeps every assistant turn whole and every observation as data; the conversation is
the readable history the official runner writes: the system prompt and task prompt, each
assistant message, each tool call and tool response, and what each code block gave back.
"""

from __future__ import annotations

import json
from typing import Any

from pixelbox.harness.traces.episode import EpisodeRecords, Step

SHOWN_KEYS = ("shown", "shown_text", "observation_text", "message", "text")
"""Observation fields a harness may use for the text it showed the model; the first string found wins."""


def conversation(
    episode: EpisodeRecords, images: list[dict[str, Any]], names: dict[int, str], task_id: str | None = None
) -> dict[str, Any]:
    """The official ``conversation.json`` record (``messages`` without image bytes).

    When the trace holds the messages themselves (``episode_start.messages`` and ``message``
    records), they are used as sent; otherwise the history is rebuilt from the observations.
    ``tools`` is the offered tools' full schemas as one JSON string, as the official runners write
    it; ``task_id`` the task file's own (empty when it has none).
    """
    recorded = any(r.get("kind") == "message" for r in episode.records)
    messages = _opening(episode)
    steps = {s.action.get("action_id"): s for s in episode.steps}
    for record in episode.records:
        messages += _messages_for(record, steps, names, recorded)
    return {
        "task_id": episode.task_id if task_id is None else task_id,
        "tools": json.dumps(tool_schemas(episode), ensure_ascii=False),
        "images": images,
        "messages": messages,
        "final_answer": episode.answer,
    }


def tool_schemas(episode: EpisodeRecords) -> list[dict[str, Any]]:
    """The function-calling schemas the episode offered, rebuilt from the tool names its trace records."""
    from pixelbox.harness.tools.atomic import atomic_schemas
    from pixelbox.harness.tools.web import WEB_SCHEMAS

    names = [str(n) for n in episode.start.get("tools") or [] if isinstance(n, str)]
    known = {s["function"]["name"]: s for s in atomic_schemas()} | dict(WEB_SCHEMAS)
    offered = list(atomic_schemas()) if episode.mode == "atm" else []
    offered_names = {s["function"]["name"] for s in offered}
    offered += [known[n] for n in names if n in known and n not in offered_names]
    return offered


def _opening(episode: EpisodeRecords) -> list[dict[str, Any]]:
    """The system prompt and the task message: as recorded, else the task prompt alone."""
    sent = episode.start.get("messages")
    if isinstance(sent, list) and sent:
        return [_flat(m) for m in sent if isinstance(m, dict)]
    prompt = str(episode.task.get("prompt") or "")
    return [{"role": "user", "content": f"[Image 0: original input]\n\n{prompt}"}]


def _flat(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message with its content as text (image parts become ``[image sha256:...]``)."""
    role = "tool_response" if message.get("role") == "tool" else str(message.get("role") or "user")
    return {"role": role, "content": content_text(message.get("content"))}


def content_text(content: Any) -> str:
    """Text of a message content that is a string or a list of text / image parts."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text") or ""))
        elif isinstance(part, dict) and part.get("type") == "image_url":
            parts.append(f"[image {(part.get('image_url') or {}).get('url', '')}]")
    return "\n".join(parts)


def _messages_for(
    record: dict[str, Any], steps: dict[Any, Step], names: dict[int, str], recorded: bool
) -> list[dict[str, Any]]:
    kind = record.get("kind")
    if kind == "turn":
        out = [{"role": "assistant", "content": str(record.get("text") or "")}]
        for call in record.get("tool_calls") or []:
            content = {"name": call.get("name"), "arguments": _arguments_object(call)}
            out.append({"role": "tool_call", "content": json.dumps(content, ensure_ascii=False)})
        return out
    if kind == "message" and isinstance(record.get("message"), dict):
        return [_flat(record["message"])]
    if kind == "observation" and not recorded:
        step = steps.get(record.get("action_id"))
        role = "user" if step is not None and step.is_code else "tool_response"
        return [{"role": role, "content": observation_text(record, step, names)}]
    if kind == "budget_hit" and not recorded:
        return [{"role": "user", "content": str(record.get("reason") or f"budget hit: {record.get('limit')}")}]
    return []


def _arguments_object(call: dict[str, Any]) -> Any:
    """A tool call's arguments as the object the model sent ({} when they do not parse, as officially)."""
    if isinstance(call.get("arguments"), dict):
        return call["arguments"]
    try:
        parsed = json.loads(str(call.get("arguments_json") or "{}"))
    except json.JSONDecodeError:
        return {}
    return parsed


def observation_text(record: dict[str, Any], step: Step | None, names: dict[int, str]) -> str:
    """What the model was shown for one action: the harness's own text when recorded, else a summary."""
    for key in SHOWN_KEYS:
        if isinstance(record.get(key), str) and record[key]:
            return str(record[key])
    result = record.get("tool_result") if isinstance(record.get("tool_result"), dict) else None
    execution = record.get("execution") if isinstance(record.get("execution"), dict) else None
    if execution is None:
        return str((result or {}).get("text") or "")
    parts = [str(execution.get("stdout") or "").strip(), str(execution.get("stderr") or "").strip()]
    error = execution.get("error")
    if isinstance(error, dict):
        parts.append(f"{error.get('ename')}: {error.get('evalue')}")
    for artifact in execution.get("artifacts") or []:
        index = int(artifact["index"])
        parts.append(f"[Image {index}: {names.get(index, artifact.get('name'))}]")
    return "\n".join(p for p in parts if p)


def raw_turn_text(turn: dict[str, Any]) -> str:
    """``raw_model_output_turn_K.txt``: the assistant text, then its function calls (as officially written)."""
    parts = [str(turn.get("text") or "")]
    calls = turn.get("tool_calls") or []
    if calls:
        parts.append("\n--- Function Calls ---")
        for call in calls:
            parts += [f"Tool: {call.get('name')}", f"Arguments: {call.get('arguments_json')}"]
    return "\n".join(parts)


def code_files(episode: EpisodeRecords) -> dict[str, str]:
    """``model_code_turn_K.py`` per executed code block (K from 0; a second block in a turn gets ``_2``)."""
    files: dict[str, str] = {}
    for step in episode.steps:
        if not step.is_code:
            continue
        base = f"model_code_turn_{step.round - 1}"
        name, n = f"{base}.py", 1
        while name in files:
            n += 1
            name = f"{base}_{n}.py"
        files[name] = str(step.action.get("code") or "")
    return files
