"""``tool_use_list.json`` entries as the official Agentic-MME runners write them, from a trace.

General (code) mode, as the official general runner builds the list after the episode:

1. every web-tool call, in call order: ``{tool_name, arguments, output, turn, index, timestamp}``
   (no ``raw_tool_name``: the runner's function-calling path writes none);
2. the operations the official static reading lists for each executed code block
   (:func:`pixelbox.tracer.static.official_tool_arguments`), block by block:
   ``{index, tool_name, raw_tool_name: "python_image_processing", arguments: {op, save, line},
   output: {ok, output_path, output_paths}, timestamp}``, the output found by the save's file
   name in ``tool_images/``;
3. one ``run_visual_processing_code`` / ``script_exec`` entry per executed block.

Then ``index`` is renumbered from 0. Runs of the DeepEyes/Thyme runner variants (model
``deepeyes:...`` / ``thyme:...``) follow those runners: an operation's arguments say ``operation``
instead of ``op``, ``effective_tool_calls`` counts the web-tool calls and the executed blocks (not
the listed operations), and Thyme's search histogram counts ``download_image`` too.

Atomic mode keeps one entry per call in call order; a failed image tool call is left out, as the
official atomic runner leaves it out. What actually executed
(every operation with its parameters and lineage) goes to pixelbox's sidecar, never into these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pixelbox.harness.traces.episode import EpisodeRecords, Step, iso_time
from pixelbox.tracer.static import official_summary, official_tool_arguments

SEARCH_TOOLS = ("google_search", "google_lens_search", "fetch_webpage")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tiff", ".tif")
VARIANT_DRIVERS = {"deepeyes": "deepeyes_local", "thyme": "thyme_local"}
"""The runner variants' ``run_meta.driver``, by the agent prefix of the episode's model."""
HIST_TOOLS = {"thyme": (*SEARCH_TOOLS, "download_image")}
"""Tools the variant's ``search_tool_hist`` counts (default :data:`SEARCH_TOOLS`)."""
PYTHON_EXE = "python"
"""What ``arguments.python_exe`` says: the kernel runs code, not a python executable of the host."""


def utc_now() -> str:
    """An ISO timestamp in UTC (what the official runner stamps entries with)."""
    return datetime.now(timezone.utc).isoformat()


def code_blocks(episode: EpisodeRecords) -> list[tuple[Step, str]]:
    """Every executed code block with its code, in order (what the official runner reads)."""
    return [(s, str(s.action.get("code") or "")) for s in episode.steps if s.is_code and s.action.get("code")]


def search_output(step: Step) -> dict[str, Any]:
    """A web tool's result in the official shape (``context`` is what the model was shown)."""
    result = step.tool_result or {}
    name = str(result.get("tool") or step.action.get("name") or "")
    if not result.get("ok"):
        return {"ok": False, "error": str(result.get("error") or "tool failed")}
    args = dict(result.get("args") or {})
    text = str(result.get("text") or "")
    if name == "google_search":
        return {
            "tool": name,
            "query": args.get("query", ""),
            "gl": args.get("gl"),
            "hl": args.get("hl"),
            "page": int(args.get("page", 1) or 1),
            "type": args.get("type", "search"),
            "context": text,
            "raw": result.get("data"),
        }
    if name == "google_lens_search":
        data = result.get("data") if isinstance(result.get("data"), dict) else {}
        return {
            "tool": name,
            "page": int(args.get("page", 1) or 1),
            "num": int(args.get("num", 5) or 5),
            "final_image_url": (data or {}).get("image_url") or args.get("image_url"),
            "context": text,
            "raw": result.get("data"),
        }
    if name == "fetch_webpage":
        return {"url": args.get("url", ""), "text": text}
    return {"ok": bool(result.get("ok")), "context": text}


def _arguments(step: Step) -> dict[str, Any]:
    arguments = step.action.get("arguments")
    return dict(arguments) if isinstance(arguments, dict) else {}


def runner_variant(episode: EpisodeRecords) -> str | None:
    """``deepeyes`` or ``thyme`` when the episode was played by that runner variant's agent, else None."""
    prefix = str(episode.model or "").partition(":")[0]
    return prefix if prefix in VARIANT_DRIVERS else None


def general_entries(
    episode: EpisodeRecords, tool_images: Path, code_paths: Sequence[Path]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """General mode entries and the counts ``run_meta`` reports (effective calls, analyses)."""
    variant = runner_variant(episode)
    searches: list[dict[str, Any]] = []
    for step in episode.steps:
        if step.is_code:
            continue
        searches.append(
            {
                "tool_name": str(step.action.get("name") or ""),
                "arguments": _arguments(step),
                "output": search_output(step) if step.tool_result is not None else {"ok": False},
                "turn": step.round - 1,
                "index": len(searches),
                "timestamp": iso_time(step.action.get("t")),
            }
        )
    blocks = code_blocks(episode)
    files = {p.name: p for p in tool_images.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES}
    key = "operation" if variant else "op"
    listed = official_tool_arguments([c for _, c in blocks])
    operations = [_operation(i, args, files, key) for i, args in enumerate(listed)]
    executions = [_execution(step, path) for (step, _), path in zip(blocks, code_paths, strict=True)]
    entries = searches + operations + executions
    stamp = utc_now()
    for index, entry in enumerate(entries):
        entry["index"] = index
        entry["timestamp"] = stamp
    summary = dict(official_summary([c for _, c in blocks]))
    summary["num_images_found"] = len(files)
    hist: dict[str, int] = {}
    for entry in searches:
        if entry["tool_name"] in HIST_TOOLS.get(variant or "", SEARCH_TOOLS):
            hist[entry["tool_name"]] = hist.get(entry["tool_name"], 0) + 1
    counts = {
        "effective_tool_calls": len(searches) + (len(executions) if variant else len(operations)),
        "code_analysis": summary,
        "search_analysis": {"search_tool_calls": sum(hist.values()), "search_tool_hist": hist},
    }
    return entries, counts


def _operation(index: int, arguments: dict[str, Any], files: dict[str, Path], key: str) -> dict[str, Any]:
    save = str(arguments.get("save") or "")
    path = files.get(save) if save else None
    paths = [str(path.resolve())] if path is not None else []
    return {
        "index": index,
        "tool_name": arguments["op"],
        "raw_tool_name": "python_image_processing",
        "arguments": {key: arguments["op"], "save": save, "line": int(arguments.get("line") or 0)},
        "output": {"ok": "true" if paths else "false", "output_path": paths[0] if paths else "", "output_paths": paths},
        "timestamp": None,
    }


def _execution(step: Step, script: Path) -> dict[str, Any]:
    execution = step.execution or {}
    ok = execution.get("status") == "ok"
    return {
        "tool_name": "run_visual_processing_code",
        "raw_tool_name": "script_exec",
        "arguments": {"python_exe": PYTHON_EXE, "turn": step.round - 1},
        "output": {
            "ok": "true" if ok else "false",
            "returncode": 0 if ok else 1,
            "stdout": str(execution.get("stdout") or ""),
            "stderr": exec_stderr(execution),
            "script_path": str(script.resolve()),
        },
    }


def exec_stderr(execution: dict[str, Any]) -> str:
    """The block's stderr, with its error's traceback as a subprocess would have printed it."""
    text = str(execution.get("stderr") or "")
    error = execution.get("error")
    if isinstance(error, dict):
        trace = error.get("traceback")
        lines = "\n".join(trace) if isinstance(trace, list) else f"{error.get('ename')}: {error.get('evalue')}"
        text = f"{text}{lines}\n" if text.endswith("\n") or not text else f"{text}\n{lines}\n"
    return text


ImageName = Callable[[int], str | None]
"""Artifact index -> the absolute path the export gave it (None when it has none)."""


def atomic_entries(
    episode: EpisodeRecords, path_of: ImageName
) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    """Atomic mode entries, the counts ``run_meta`` reports, and warnings for failed image tool calls."""
    entries: list[dict[str, Any]] = []
    warnings: list[str] = []
    image_hist: dict[str, int] = {}
    search_hist: dict[str, int] = {}
    for step in episode.steps:
        name = str(step.action.get("name") or "")
        output: dict[str, Any] | None
        if step.tool_result is not None or name in SEARCH_TOOLS:
            output = search_output(step) if step.tool_result is not None else {"ok": False, "error": "not run"}
            if name in SEARCH_TOOLS:
                search_hist[name] = search_hist.get(name, 0) + 1
        else:
            output = _image_output(step, path_of)
            if output is None:
                warnings.append(f"Tool {name} error: {_error_text(step)}")
                continue
            image_hist[name] = image_hist.get(name, 0) + 1
        entries.append(
            {
                "index": len(entries),
                "tool_name": name,
                "raw_tool_name": name,
                "arguments": _arguments(step),
                "output": output,
                "turn": step.round - 1,
                "timestamp": iso_time(step.action.get("t")),
            }
        )
    counts = {
        "effective_tool_calls": len(entries),
        "image_tool_analysis": {"image_tool_calls": sum(image_hist.values()), "image_tool_hist": image_hist},
        "search_hist": search_hist,
    }
    return entries, counts, warnings


def _image_output(step: Step, path_of: ImageName) -> dict[str, Any] | None:
    execution = step.execution or {}
    if execution.get("status") != "ok" or not step.artifacts:
        return None
    artifact = step.artifacts[-1]
    path = path_of(int(artifact["index"]))
    if path is None:
        return None
    arguments = _arguments(step)
    label = str(arguments.get("label") or "")
    return {
        "ok": "true",
        "op": str(step.action.get("name") or ""),
        "source_image_index": int(arguments.get("image_index", 0) or 0),
        "new_image_index": int(artifact["index"]),
        "output_path": path,
        "label": label,
        "size": [artifact.get("width"), artifact.get("height")],
    }


def _error_text(step: Step) -> str:
    execution = step.execution or {}
    error = execution.get("error")
    if isinstance(error, dict):
        return f"{error.get('ename')}: {error.get('evalue')}"
    return str(execution.get("stderr") or execution.get("status") or "no image produced").strip()
