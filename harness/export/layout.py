"""Export a run to the official Agentic-MME output layout, so the official evaluator can score it.

For every episode trace ``RUN/episodes/<task_id>.jsonl`` it writes ``OUT/{mode}/{model}/{task_id}/``:

- ``orig.png`` (``orig_K.png`` for several inputs) and ``task.json`` (the task; ``run_meta.task_file``);
- ``tool_images/``: every artifact the episode produced, copied from the run;
- ``model_answer.txt``, ``conversation.json``, ``tool_use_list.json`` (true chronological order,
  see :mod:`pixelbox.harness.export.tool_use`), ``run_meta.json``;
- ``raw_model_output_turn_K.txt`` and ``model_code_turn_K.py`` (K from 0), ``search_cache/``.

An unfinished episode is exported without ``run_meta.json``, which is how the official evaluator
recognises an incomplete run (it scores it as failed). Artifact files must still exist: a sandbox
deletes its workspace when it closes, so a run has to keep its own copies; a missing file is an
:class:`ExportError` naming it (nothing is written for that episode).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from pixelbox.harness.export.conversation import code_files, conversation, raw_turn_text
from pixelbox.harness.export.tool_use import effective_calls, tool_use_list
from pixelbox.harness.modes import ATOMIC, CODE
from pixelbox.harness.traces.episode import EpisodeRecords, NotAnEpisodeTrace, read_episode
from pixelbox.harness.traces.store import find_traces
from pixelbox.harness.web.cache import CACHE_VERSION, cache_key, normalize_args

__all__ = ["ExportError", "ExportedEpisode", "export_episode", "export_run"]


class ExportError(ValueError):
    """A run cannot be exported as it stands; the message names the file and what is missing."""


MODE_NAMES = {CODE: "general_rollout", ATOMIC: "atomic_tools"}
ARTIFACT_PATH_KEYS = ("host_path",)
"""Artifact record fields tried after the run's own copy (``host_path`` is the sandbox workspace, gone once
the sandbox closed, unless a harness pointed it at a copy)."""


@dataclass(frozen=True)
class ExportedEpisode:
    """Where one episode went and whether it was finished."""

    task_id: str
    mode: str
    model: str
    directory: Path
    finished: bool


def export_run(run_dir: str | Path, out: str | Path) -> list[ExportedEpisode]:
    """Export every episode trace of ``run_dir`` under ``out``; returns what was written."""
    root = Path(run_dir)
    traces = find_traces(root)
    if not traces:
        raise ExportError(f"no episode traces under {root} (expected {root}/episodes/<task_id>.jsonl)")
    return [export_episode(path, out, run_dir=root) for path in traces]


def export_episode(trace: str | Path, out: str | Path, *, run_dir: str | Path | None = None) -> ExportedEpisode:
    """Export one episode trace to ``out/{mode}/{model}/{task_id}/`` (replacing an earlier export of it)."""
    try:
        episode = read_episode(trace)
    except NotAnEpisodeTrace as exc:
        raise ExportError(str(exc)) from None
    base = Path(run_dir) if run_dir is not None else Path(trace).parent.parent
    sources = _artifact_sources(episode, base)
    inputs = _input_images(episode)
    target = Path(out) / path_component(episode.mode) / path_component(episode.model) / path_component(episode.task_id)
    if target.exists():
        shutil.rmtree(target)
    (target / "tool_images").mkdir(parents=True)
    origs = _write_inputs(inputs, target)
    names = _copy_artifacts(sources, target / "tool_images")
    paths = {index: str(target / "tool_images" / name) for index, name in names.items()}
    entries = tool_use_list(episode, paths.get)
    _write_json(target / "tool_use_list.json", entries)
    images = [{"index": k, "path": str(p), "label": "original input"} for k, p in enumerate(origs)]
    images += [{"index": i, "path": paths[i], "label": _label(episode, i)} for i in sorted(paths)]
    _write_json(target / "conversation.json", conversation(episode, images, names))
    (target / "model_answer.txt").write_text(episode.answer, encoding="utf-8")
    _write_turn_files(episode, target)
    _write_search_cache(episode, target / "search_cache")
    task_file = target / "task.json"
    _write_json(task_file, _task_json(episode))
    if episode.end is not None:
        _write_json(target / "run_meta.json", _run_meta(episode, target, task_file, origs, entries, len(images)))
    return ExportedEpisode(episode.task_id, episode.mode, episode.model, target, episode.end is not None)


def path_component(text: str) -> str:
    """A single path component: anything but letters, digits, '.', '_', '-' becomes '_'."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")
    return cleaned or "unnamed"


def _write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")


# -- images -------------------------------------------------------------------------------------


def _artifact_sources(episode: EpisodeRecords, run_dir: Path) -> dict[int, tuple[str, Path]]:
    """Artifact index -> (file name, readable file); :class:`ExportError` for the first that is gone."""
    sources: dict[int, tuple[str, Path]] = {}
    kept = episode.stored_images()
    for record in episode.all_artifacts():
        index, name = int(record["index"]), str(record.get("name") or f"image_{record['index']}.png")
        candidates = [_resolve(kept[index], run_dir)] if index in kept else []
        candidates += [_resolve(record.get(key), run_dir) for key in ARTIFACT_PATH_KEYS if record.get(key)]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            looked = ", ".join(str(c) for c in candidates) or "(the record names no file)"
            raise ExportError(
                f"{episode.path}: artifact {index} ({name}) is missing; looked for {looked}. A sandbox deletes "
                "its workspace when it closes, so the run must keep a copy of every artifact in the run directory"
            )
        sources[index] = (name, found)
    return sources


def _resolve(value: Any, run_dir: Path) -> Path:
    path = Path(str(value))
    return path if path.is_absolute() else run_dir / path


def _input_images(episode: EpisodeRecords) -> list[Path]:
    images = [Path(str(p)) for p in episode.task.get("images") or []]
    for image in images:
        if not image.is_file():
            raise ExportError(f"{episode.path}: input image {image} of task {episode.task_id} no longer exists")
    return images


def _write_inputs(images: list[Path], target: Path) -> list[Path]:
    """``orig.png`` for one input, ``orig_0.png``, ``orig_1.png``... for several (always PNG)."""
    names = ["orig.png"] if len(images) == 1 else [f"orig_{k}.png" for k in range(len(images))]
    written = []
    for image, name in zip(images, names, strict=True):
        with Image.open(image) as opened:
            opened.save(target / name, "PNG")
        written.append(target / name)
    return written


def _copy_artifacts(sources: dict[int, tuple[str, Path]], folder: Path) -> dict[int, str]:
    """Copy every artifact into ``tool_images/``; returns index -> file name (renamed if a name repeats)."""
    names: dict[int, str] = {}
    for index, (name, source) in sorted(sources.items()):
        chosen = name
        if chosen in names.values():
            stem, dot, ext = name.rpartition(".")
            chosen = f"{stem}_{index}.{ext}" if dot else f"{name}_{index}"
        shutil.copyfile(source, folder / chosen)
        names[index] = chosen
    return names


def _label(episode: EpisodeRecords, index: int) -> str:
    step = next((s for s in episode.steps if any(int(a["index"]) == index for a in s.artifacts)), None)
    return f"generated in turn {step.round - 1}" if step is not None else "generated"


# -- text files ------------------------------------------------------------------------------------


def _write_turn_files(episode: EpisodeRecords, target: Path) -> None:
    for turn in episode.turns:
        k = int(turn.get("round") or 1) - 1
        (target / f"raw_model_output_turn_{k}.txt").write_text(raw_turn_text(turn), encoding="utf-8")
    for name, code in code_files(episode).items():
        (target / name).write_text(code, encoding="utf-8")


def _write_search_cache(episode: EpisodeRecords, folder: Path) -> None:
    """Every web-tool result, one file per call in the web cache's own format (replayable offline)."""
    folder.mkdir(parents=True, exist_ok=True)
    for step in episode.steps:
        result = step.tool_result
        if result is None:
            continue
        tool, args = str(result.get("tool") or step.action.get("name")), dict(result.get("args") or {})
        record = {
            "v": CACHE_VERSION,
            "tool": tool,
            "args": normalize_args(args),
            "ok": bool(result.get("ok")),
            "data": result.get("data"),
            "error": result.get("error"),
        }
        _write_json(folder / f"{tool}-{cache_key(tool, args)}.json", record)


def _task_json(episode: EpisodeRecords) -> dict[str, Any]:
    """The task in the official shape: as recorded, else its source file, else rebuilt from the summary."""
    task = episode.task
    if isinstance(task.get("raw"), dict) and task["raw"]:
        return dict(task["raw"])
    source = Path(str(task.get("source") or ""))
    if task.get("source") and source.suffix == ".json" and source.is_file():
        loaded = json.loads(source.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            return loaded
    return {
        "task_id": episode.task_id,
        "input": {"prompt": task.get("prompt", "")},
        "meta": {"level": task.get("level")},
        "golden_answer": task.get("answer") or {"value": ""},
        "process_evaluation": {},
    }


def _run_meta(
    episode: EpisodeRecords,
    target: Path,
    task_file: Path,
    origs: list[Path],
    entries: list[dict[str, Any]],
    total_images: int,
) -> dict[str, Any]:
    end = episode.end or {}
    return {
        "task_id": episode.task_id,
        "task_file": str(task_file.resolve()),
        "mode": MODE_NAMES.get(episode.mode, episode.mode),
        "driver": "pixelbox",
        "model": episode.model,
        "paths": {
            "run_dir": str(target.resolve()),
            "orig": str(origs[0].resolve()) if origs else "",
            "processed_dir": str((target / "tool_images").resolve()),
        },
        "usage": _usage(episode.turns),
        "effective_tool_calls": effective_calls(entries),
        "total_images": total_images,
        "warnings": _warnings(episode),
        "pixelbox": {
            "trace": str(episode.path.resolve()),
            "status": end.get("status"),
            "reason": end.get("reason"),
            "runtime": episode.start.get("runtime"),
        },
    }


def _usage(turns: Iterable[dict[str, Any]]) -> dict[str, int]:
    totals = {"api_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for turn in turns:
        totals["api_calls"] += 1
        usage = turn.get("usage") or {}
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            totals[key] += int(usage.get(key) or 0)
    return totals


def _warnings(episode: EpisodeRecords) -> list[str]:
    notes = []
    for record in episode.records:
        if record.get("kind") == "budget_hit":
            notes.append(f"[budget] {record.get('reason') or record.get('limit')}")
        elif record.get("kind") == "error":
            notes.append(f"[{record.get('where')}] {record.get('message')}")
    return notes
