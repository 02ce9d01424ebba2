"""The conversation of an episode as reports show it: what the model was told, what it said between
its actions (its prose, reasoning and tool calls), what each action gave back, and how it ended.

Read from the trace's records in order. Actions are entries that point at their interaction (its
code, observation and images are in the episode record already); a user message's text is kept
only where it says more than the observations of its round (code-mode results are repeated there
verbatim). Long texts are cut, with the number of characters left out, so reports stay small.
"""

from __future__ import annotations

from typing import Any

from pixelbox.harness.traces import Trace

from .runmeta import object_at

MAX_TEXT = 20_000


def conversation_of(trace: Trace) -> tuple[dict[str, Any], ...]:
    """The episode's conversation entries (``role`` system, user, assistant, action, error, budget, end)."""
    entries: list[dict[str, Any]] = []
    shown: dict[Any, set[str]] = {}
    actions = 0
    for record in trace.records:
        kind = record.get("kind")
        if kind == "episode_start":
            entries += _opening(record.get("messages") or [])
        elif kind == "turn":
            entries.append(_assistant(record))
        elif kind == "action":
            entries.append({"role": "action", "round": record.get("round"), "interaction": actions})
            actions += 1
        elif kind == "observation":
            shown.setdefault(_round_of(entries), set()).add(str(record.get("shown") or ""))
        elif kind == "message":
            entry = _feedback(record, shown.get(record.get("round"), set()))
            if entry is not None:
                entries.append(entry)
        elif kind in ("error", "budget_hit", "episode_end"):
            entries.append(_ending(record))
    return tuple(entries)


def _opening(messages: list[Any]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        if isinstance(message, dict) and message.get("role") in ("system", "user"):
            text, images = _content(message.get("content"))
            out.append({"role": message["role"], "text": _cut(text), "images": images})
    return out


def _assistant(turn: dict[str, Any]) -> dict[str, Any]:
    usage = object_at(turn, "usage")
    calls = [
        {"name": str(c.get("name")), "arguments": _cut(str(c.get("arguments_json") or ""), 4000)}
        for c in turn.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    return {
        "role": "assistant",
        "round": turn.get("round"),
        "text": _cut(str(turn.get("text") or "")),
        "reasoning": _cut(str(turn.get("reasoning") or "")),
        "tool_calls": calls,
        "tokens": usage.get("total_tokens"),
        "latency": turn.get("latency"),
        "attempts": turn.get("attempts"),
    }


def _feedback(record: dict[str, Any], observed: set[str]) -> dict[str, Any] | None:
    message = record.get("message")
    if not isinstance(message, dict) or message.get("role") != "user":
        return None  # tool messages repeat their action's observation
    parts = message.get("content")
    texts = (
        [p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
        if isinstance(parts, list)
        else [str(parts or "")]
    )
    kept = [t for t in texts if t.strip() and t not in observed and not t.startswith("Images from ")]
    images = (
        sum(1 for p in parts if isinstance(p, dict) and p.get("type") == "image_url") if isinstance(parts, list) else 0
    )
    if not kept:
        return None
    return {"role": "user", "round": record.get("round"), "text": _cut("\n".join(kept)), "images": images}


def _ending(record: dict[str, Any]) -> dict[str, Any]:
    kind = record["kind"]
    if kind == "error":
        return {"role": "error", "where": record.get("where"), "text": _cut(str(record.get("message") or ""))}
    if kind == "budget_hit":
        return {"role": "budget", "text": str(record.get("reason") or record.get("limit") or "")}
    return {
        "role": "end",
        "status": record.get("status"),
        "text": str(record.get("reason") or ""),
        "answer": record.get("answer"),
    }


def _content(content: Any) -> tuple[str, int]:
    if not isinstance(content, list):
        return str(content or ""), 0
    texts = [str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"]
    images = sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
    return "\n".join(texts), images


def _round_of(entries: list[dict[str, Any]]) -> Any:
    return next((e.get("round") for e in reversed(entries) if e["role"] == "action"), None)


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [{len(text) - limit} more characters in the trace]"
