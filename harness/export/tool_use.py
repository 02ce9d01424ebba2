"""``tool_use_list.json`` for the official layout: every call in true chronological order.

Entries follow the order things happened in the episode: for a code block, the execution
itself (``run_visual_processing_code`` / ``script_exec``) and then each visual operation that
actually ran in it (``python_image_processing``, arguments ``op``, ``save``, ``line``); for a
function call, one entry (an atomic image tool or a web tool). The official runner instead
lists all searches first, then all operations, then all executions, so its ordering checks
cannot see the interleaving; ours keeps it. ``declared_only`` is always false: the tracer
records only operations that executed, never code that merely mentions one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pixelbox.harness.traces.episode import EpisodeRecords, Step, iso_time
from pixelbox.tracer.events import Event

EXEC_TOOL = "run_visual_processing_code"
EXEC_RAW = "script_exec"
CODE_OP_RAW = "python_image_processing"
STDOUT_CHARS = 2000

ArtifactPath = Callable[[int], str | None]
"""Maps an artifact index to its exported path (None when the episode has no such artifact)."""


def tool_use_list(episode: EpisodeRecords, path_of: ArtifactPath) -> list[dict[str, Any]]:
    """The episode's entries, numbered by ``index`` in the order they happened."""
    entries: list[dict[str, Any]] = []
    for step in episode.steps:
        if step.is_code:
            entries.append(_exec_entry(step, path_of))
            entries += [_op_entry(step, e, episode, path_of) for e in step.events if e.is_visual]
        else:
            entries.append(_call_entry(step, path_of))
    for index, entry in enumerate(entries):
        entry["index"] = index
    return entries


def effective_calls(entries: list[dict[str, Any]]) -> int:
    """Searches, atomic calls and executed visual operations; code executions themselves are not counted."""
    return sum(1 for e in entries if e["raw_tool_name"] != EXEC_RAW)


def _ok(flag: bool) -> str:
    return "true" if flag else "false"


def _paths(step: Step, path_of: ArtifactPath) -> list[str]:
    return [p for p in (path_of(int(a["index"])) for a in step.artifacts) if p]


def _exec_entry(step: Step, path_of: ArtifactPath) -> dict[str, Any]:
    execution = step.execution or {}
    error = execution.get("error") or None
    paths = _paths(step, path_of)
    return {
        "index": 0,
        "tool_name": EXEC_TOOL,
        "raw_tool_name": EXEC_RAW,
        "arguments": {"turn": step.round - 1, "action_id": step.action.get("action_id")},
        "output": {
            "ok": _ok(execution.get("status") == "ok"),
            "status": execution.get("status", "missing"),
            "stdout": str(execution.get("stdout") or "")[:STDOUT_CHARS],
            "stderr": str(execution.get("stderr") or "")[:STDOUT_CHARS],
            "error": error,
            "output_path": paths[-1] if paths else "",
            "output_paths": paths,
        },
        "turn": step.round - 1,
        "timestamp": iso_time(step.action.get("t")),
    }


def _op_entry(step: Step, event: Event, episode: EpisodeRecords, path_of: ArtifactPath) -> dict[str, Any]:
    derived = [p for p in (path_of(i) for i in episode.derived.get(event.seq, [])) if p]
    ran = event.status == "ok" and event.output is not None
    return {
        "index": 0,
        "tool_name": event.op,
        "raw_tool_name": CODE_OP_RAW,
        "arguments": {
            "op": event.op,
            "save": derived[0].rsplit("/", 1)[-1] if derived else "",
            "line": event.src.line if event.src is not None else 0,
            "params": event.params,
            "api": event.api,
        },
        "output": {
            "ok": _ok(ran and bool(derived)),
            "status": event.status,
            "output_path": derived[0] if derived else "",
            "output_paths": derived,
            "declared_only": False,
            "error": event.error,
            "event": {"seq": event.seq, "exec": event.exec, "inputs": event.inputs, "output": event.output},
        },
        "turn": step.round - 1,
        "timestamp": iso_time(step.action.get("t")),
    }


def _call_entry(step: Step, path_of: ArtifactPath) -> dict[str, Any]:
    name = str(step.action.get("name") or "")
    arguments = step.action.get("arguments")
    output = _web_output(step) if step.tool_result is not None else _tool_output(step, path_of)
    if step.tool_result is not None and step.execution is not None:
        output.update(_tool_output(step, path_of))
    return {
        "index": 0,
        "tool_name": name,
        "raw_tool_name": name,
        "arguments": arguments if isinstance(arguments, dict) else {"raw": arguments},
        "output": output,
        "turn": step.round - 1,
        "timestamp": iso_time(step.action.get("t")),
    }


def _web_output(step: Step) -> dict[str, Any]:
    result = step.tool_result or {}
    return {
        "ok": _ok(bool(result.get("ok"))),
        "context": str(result.get("text") or ""),
        "error": result.get("error"),
        "source": result.get("source"),
    }


def _tool_output(step: Step, path_of: ArtifactPath) -> dict[str, Any]:
    execution = step.execution or {}
    paths = _paths(step, path_of)
    produced = [int(a["index"]) for a in step.artifacts]
    output: dict[str, Any] = {
        "ok": _ok(execution.get("status") == "ok" and bool(paths)),
        "output_path": paths[-1] if paths else "",
        "output_paths": paths,
        "new_image_index": produced[-1] if produced else None,
        "message": str(execution.get("stdout") or "").strip()[:STDOUT_CHARS],
        "ops": [e.op for e in step.events if e.is_visual],
    }
    if execution.get("error"):
        output["error"] = execution["error"]
    return output
