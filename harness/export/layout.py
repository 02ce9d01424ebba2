"""Export a run to the official Agentic-MME runners' output layout, file for file, for the official tools.

For every episode trace ``RUN/episodes/<task_id>.jsonl`` it writes the folder the official runner
would have written, ``OUT/runs/{general|atomic}/{model}/{stem}/`` (``stem``: the task file's stem,
``safe_name``-cleaned in general mode; the model with ``/`` and ``:`` as ``_``):

- ``orig.png`` (``orig_K.png`` for several inputs), ``tool_images/`` (general: the files the code
  saved, by their names; atomic: ``transformed_image_1.png``, ``_2``... in output order);
- ``model_answer.txt``, ``conversation.json`` (full tool schemas as a JSON string, tool-call
  arguments as objects), ``image_index.json``, ``tool_use_list.json`` (official entries and order,
  :mod:`.official_entries`), ``run_meta.json`` (the official keys per mode, ``task_file`` the
  dataset's JSON file);
- ``raw_model_output_turn_K.txt`` (and ``raw_model_output_final.txt`` for an answer given after
  a budget ran out), general mode: ``model_code_turn_K.py``, ``exec_stdout_turn_K.txt``,
  ``exec_stderr_turn_K.txt``, a ``replay_general_rollout.py`` (``replay_general.py`` when no code ran);
- ``search_cache/{task_id}/serper_search_N.json`` / ``serper_lens_N.json`` with request and response;
- ``pixelbox.json``: pixelbox's own data (trace, status, the executed entries in true order with
  parameters and lineage, artifact names), the only file official tools do not know.

An unfinished episode is exported without ``run_meta.json``, which is how the official evaluator
recognises an incomplete run. Artifact files must still exist (a missing one is an
:class:`ExportError` naming it). The file-by-file table: ``docs/export.md``.
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
from pixelbox.harness.export.official_entries import (
    VARIANT_DRIVERS,
    atomic_entries,
    code_blocks,
    exec_stderr,
    general_entries,
    runner_variant,
)
from pixelbox.harness.export.tool_use import tool_use_list
from pixelbox.harness.modes import ATOMIC, CODE
from pixelbox.harness.traces.episode import EpisodeRecords, NotAnEpisodeTrace, read_episode
from pixelbox.harness.traces.store import find_traces

__all__ = ["ExportError", "ExportedEpisode", "export_episode", "export_run", "official_folder"]


class ExportError(ValueError):
    """A run cannot be exported as it stands; the message names the file and what is missing."""


MODE_DIRS = {CODE: "general", ATOMIC: "atomic"}
"""The official runners' output folders, ``runs/general/{model}`` and ``runs/atomic/{model}``."""
MODE_NAMES = {CODE: "general_rollout", ATOMIC: "atomic"}
DRIVERS = {CODE: "script_rollout", ATOMIC: "tools"}
SIDECAR = "pixelbox.json"
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
    """Export every episode trace of ``run_dir`` under ``out/runs/``; returns what was written."""
    root = Path(run_dir)
    traces = find_traces(root)
    if not traces:
        raise ExportError(f"no episode traces under {root} (expected {root}/episodes/<task_id>.jsonl)")
    return [export_episode(path, out, run_dir=root) for path in traces]


def model_dir(model: str) -> str:
    """The official runners' folder name for a model (``/`` and ``:`` become ``_``)."""
    return model.replace("/", "_").replace(":", "_") or "unnamed"


def safe_name(text: str, limit: int = 80) -> str:
    """The official general runner's run-folder name for a task file stem."""
    cleaned = re.sub(r"[^a-zA-Z0-9_\-\.]+", "_", text)
    return cleaned[:limit]


def official_folder(out: str | Path, mode: str, model: str, stem: str) -> Path:
    """``out/runs/{general|atomic}/{model}/{stem}`` as the official runners name it."""
    name = safe_name(stem) if mode == CODE else stem
    return Path(out) / "runs" / MODE_DIRS.get(mode, mode) / model_dir(model) / name


def export_episode(trace: str | Path, out: str | Path, *, run_dir: str | Path | None = None) -> ExportedEpisode:
    """Export one episode trace to its official run folder (replacing an earlier export of it)."""
    try:
        episode = read_episode(trace)
    except NotAnEpisodeTrace as exc:
        raise ExportError(str(exc)) from None
    base = Path(run_dir) if run_dir is not None else Path(trace).parent.parent
    sources = _artifact_sources(episode, base)
    inputs = _input_images(episode)
    task_file, task = _task_file(episode, Path(out))
    target = official_folder(out, episode.mode, episode.model, task_file.stem).resolve()
    if target.exists():
        shutil.rmtree(target)
    (target / "tool_images").mkdir(parents=True)
    origs = _write_inputs(inputs, target)
    names = _copy_artifacts(sources, target / "tool_images", numbered=episode.mode == ATOMIC)
    paths = {index: str(target / "tool_images" / name) for index, name in names.items()}
    official_id = str(task.get("task_id", "") or "")
    code_paths = _write_turn_files(episode, target)
    warnings = _warnings(episode)
    if episode.mode == ATOMIC:
        entries, counts, failed = atomic_entries(episode, paths.get)
        warnings += failed
        images = _atomic_images(episode, origs, paths)
    else:
        entries, counts = general_entries(episode, target / "tool_images", code_paths)
        images = _general_images(episode, origs, paths)
    _write_json(target / "tool_use_list.json", entries)
    _write_json(target / "image_index.json", images)
    _write_json(target / "conversation.json", conversation(episode, images, names, official_id))
    (target / "model_answer.txt").write_text(episode.answer, encoding="utf-8")
    _write_replay(target, code_paths, episode.mode)
    _write_search_cache(episode, target / "search_cache" / (official_id or target.name))
    _write_json(target / SIDECAR, _sidecar(episode, names, paths))
    if episode.end is not None:
        meta = _run_meta(episode, target, task_file, official_id, origs, counts, len(images), warnings)
        _write_json(target / "run_meta.json", meta)
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
    kept, unseen = episode.stored_images(), _unseen(episode)
    for record in episode.all_artifacts():
        if int(record["index"]) in unseen:
            continue
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


def _unseen(episode: EpisodeRecords) -> set[int]:
    """The images a block with a save name (``save_as``: the DeepEyes/Thyme runners' turn file) wrote under
    other names: those runners never see them in ``tool_images/``, nor did the model (the trace keeps them)."""
    return {
        int(artifact["index"])
        for step in episode.steps
        if step.is_code and isinstance(step.action.get("save_as"), dict)
        for artifact in step.artifacts
        if artifact.get("name") != step.action["save_as"].get("name")
    }


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


def _copy_artifacts(sources: dict[int, tuple[str, Path]], folder: Path, *, numbered: bool) -> dict[int, str]:
    """Copy every artifact into ``tool_images/``; returns index -> file name.

    ``numbered`` (atomic mode) names them ``transformed_image_1.png``, ``_2``... in output order, as
    the official toolbox does whatever the image index; otherwise a file keeps the name the code
    gave it (a repeated name gets the index appended).
    """
    names: dict[int, str] = {}
    for step, (index, (name, source)) in enumerate(sorted(sources.items()), start=1):
        chosen = f"transformed_image_{step}.png" if numbered else name
        if chosen in names.values():
            stem, dot, ext = name.rpartition(".")
            chosen = f"{stem}_{index}.{ext}" if dot else f"{name}_{index}"
        if numbered and source.suffix.lower() != ".png":
            with Image.open(source) as opened:
                opened.save(folder / chosen, "PNG")
        else:
            shutil.copyfile(source, folder / chosen)
        names[index] = chosen
    return names


def _general_images(episode: EpisodeRecords, origs: list[Path], paths: dict[int, str]) -> list[dict[str, Any]]:
    """``image_index.json`` of the general runner: inputs, then each block's new files by their number."""
    images = _input_entries(origs, first_label_numbered=True)
    numbered = re.compile(r"transformed_image_(\d+)\.png", re.IGNORECASE)
    for step in episode.steps:
        if not step.is_code:
            continue
        for artifact in step.artifacts:
            path = paths.get(int(artifact["index"]))
            if path is None:
                continue
            match = numbered.match(Path(path).name)
            index = int(match.group(1)) if match else len(images)
            images.append({"index": index, "path": path, "label": f"generated in turn {step.round - 1}"})
    return images


def _atomic_images(episode: EpisodeRecords, origs: list[Path], paths: dict[int, str]) -> list[dict[str, Any]]:
    """``image_index.json`` of the atomic runner: inputs, then every tool output by image index."""
    images = _input_entries(origs, first_label_numbered=False)
    for step in episode.steps:
        given = step.action.get("arguments")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
        for artifact in step.artifacts:
            path = paths.get(int(artifact["index"]))
            if path is None:
                continue
            name = str(step.action.get("name") or "image")
            label = str(arguments.get("label") or f"{name} from image {arguments.get('image_index', 0)}")
            images.append({"index": len(images), "path": path, "label": label})
    return images


def _input_entries(origs: list[Path], *, first_label_numbered: bool) -> list[dict[str, Any]]:
    if len(origs) == 1:
        return [{"index": 0, "path": str(origs[0]), "label": "original input image"}]
    entries = []
    for k, path in enumerate(origs):
        plain = k == 0 and not first_label_numbered
        entries.append(
            {
                "index": k,
                "path": str(path),
                "label": "original input image" if plain else f"original input image {k + 1}",
            }
        )
    return entries


# -- text files ------------------------------------------------------------------------------------


def _write_turn_files(episode: EpisodeRecords, target: Path) -> list[Path]:
    """Raw outputs per turn; in general mode the code, stdout and stderr per block. Returns the code files."""
    turns = episode.turns
    final_after_budget = any(r.get("kind") == "budget_hit" for r in episode.records) and episode.end is not None
    for position, turn in enumerate(turns):
        k = int(turn.get("round") or 1) - 1
        text = raw_turn_text(turn)
        if final_after_budget and position == len(turns) - 1 and not turn.get("tool_calls"):
            (target / "raw_model_output_final.txt").write_text(str(turn.get("text") or ""), encoding="utf-8")
        (target / f"raw_model_output_turn_{k}.txt").write_text(text, encoding="utf-8")
    if episode.mode == ATOMIC:
        return []
    written = []
    blocks = code_blocks(episode)
    for (step, _), (name, code) in zip(blocks, code_files(episode).items(), strict=True):
        (target / name).write_text(code, encoding="utf-8")
        suffix = name.removeprefix("model_code_turn_").removesuffix(".py")
        execution = step.execution or {}
        (target / f"exec_stdout_turn_{suffix}.txt").write_text(str(execution.get("stdout") or ""), encoding="utf-8")
        (target / f"exec_stderr_turn_{suffix}.txt").write_text(exec_stderr(execution), encoding="utf-8")
        written.append(target / name)
    return written


REPLAY_HEAD = """# Re-runs this folder's code blocks in order, as they ran in the episode (written by pixelbox export).
import os
import runpy
from pathlib import Path

RUN_DIR = Path(__file__).resolve().parent
ORIG = RUN_DIR / "orig.png"
OUT = RUN_DIR / "tool_images"
OUT.mkdir(parents=True, exist_ok=True)
os.environ["ORIGINAL_IMAGE_PATH"] = str(ORIG)
os.environ["PROCESSED_IMAGE_SAVE_PATH"] = str(OUT)
latest = ORIG
"""


def _write_replay(target: Path, code_paths: list[Path], mode: str) -> None:
    """``replay_general_rollout.py`` (``replay_general.py`` when no block ran); none in atomic mode."""
    if mode == ATOMIC:
        return
    lines = [REPLAY_HEAD]
    for k, path in enumerate(code_paths):
        lines += [
            f"print('== block {k} ==')",
            'os.environ["LOCAL_INPUT_IMAGE_PATH"] = str(latest)',
            f"runpy.run_path(str(RUN_DIR / {path.name!r}), run_name='__main__')",
            'saved = sorted(OUT.glob("transformed_image_*.png"))',
            "latest = saved[-1] if saved else latest",
            "",
        ]
    lines.append("print('outputs in', OUT)")
    name = "replay_general_rollout.py" if code_paths else "replay_general.py"
    (target / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _write_search_cache(episode: EpisodeRecords, folder: Path) -> None:
    """``serper_search_N.json`` / ``serper_lens_N.json`` per distinct request, with request and response."""
    written: dict[str, list[dict[str, Any]]] = {"serper_search": [], "serper_lens": []}
    for step in episode.steps:
        result = step.tool_result
        if result is None or not result.get("ok"):
            continue
        tool = str(result.get("tool") or step.action.get("name"))
        args = dict(result.get("args") or {})
        if tool == "google_search":
            prefix = "serper_search"
            request = {
                "q": args.get("query", ""),
                "gl": args.get("gl"),
                "hl": args.get("hl"),
                "autocorrect": bool(args.get("autocorrect", True)),
                "page": int(args.get("page", 1) or 1),
                "type": args.get("type", "search"),
            }
        elif tool == "google_lens_search":
            prefix = "serper_lens"
            request = {k: v for k, v in args.items() if k in ("url", "image_url", "page", "num")}
        else:
            continue
        if request in written[prefix]:
            continue
        written[prefix].append(request)
        record = {"tool": prefix, "timestamp": step.action.get("t"), "request": request, "response": result.get("data")}
        _write_json(folder / f"{prefix}_{len(written[prefix])}.json", record)


def _task_file(episode: EpisodeRecords, out: Path) -> tuple[Path, dict[str, Any]]:
    """The dataset's task JSON (what ``run_meta.task_file`` names) and its content.

    A task read from a dataset file points at that file; one from JSONL (or whose file is gone) is
    written to ``out/runs/tasks/<task_id>.json`` in the official shape.
    """
    task = episode.task
    source = Path(str(task.get("source") or ""))
    if task.get("source") and source.suffix == ".json" and source.is_file():
        loaded = json.loads(source.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            return source.resolve(), loaded
    raw = task.get("raw") if isinstance(task.get("raw"), dict) and task.get("raw") else None
    content = (
        dict(raw)
        if raw
        else {
            "task_id": episode.task_id,
            "input": {"prompt": task.get("prompt", "")},
            "meta": {"level": task.get("level")},
            "golden_answer": task.get("answer") or {"value": ""},
            "process_evaluation": {},
        }
    )
    path = (out / "runs" / "tasks" / f"{path_component(episode.task_id)}.json").resolve()
    _write_json(path, content)
    return path, content


def _sidecar(episode: EpisodeRecords, names: dict[int, str], paths: dict[int, str]) -> dict[str, Any]:
    """pixelbox's own data for this run folder: what official tools do not read."""
    end = episode.end or {}
    return {
        "pixelbox": episode.start.get("pixelbox"),
        "task_id": episode.task_id,
        "mode": episode.mode,
        "model": episode.model,
        "trace": str(episode.path.resolve()),
        "status": end.get("status"),
        "reason": end.get("reason"),
        "runtime": episode.start.get("runtime"),
        "artifacts": {str(k): v for k, v in sorted(names.items())},
        "executed": tool_use_list(episode, paths.get),
    }


def _driver(episode: EpisodeRecords) -> str:
    """The official runner's ``driver``: per mode, or the DeepEyes/Thyme variant's in general mode."""
    variant = runner_variant(episode) if episode.mode == CODE else None
    return VARIANT_DRIVERS[variant] if variant else DRIVERS.get(episode.mode, "pixelbox")


def _run_meta(
    episode: EpisodeRecords,
    target: Path,
    task_file: Path,
    task_id: str,
    origs: list[Path],
    counts: dict[str, Any],
    total_images: int,
    warnings: list[str],
) -> dict[str, Any]:
    """``run_meta.json`` with exactly the official runner's keys, in its order, for the episode's mode."""
    paths = {
        "run_dir": str(target),
        "orig": str(origs[0]) if origs else "",
        "processed_dir": str(target / "tool_images"),
    }
    head = {
        "task_id": task_id,
        "task_file": str(task_file),
        "mode": MODE_NAMES.get(episode.mode, episode.mode),
        "driver": _driver(episode),
        "model": episode.model,
        "temperature": _temperature(episode),
    }
    if episode.mode == ATOMIC:
        search = counts["search_hist"]
        return {
            **head,
            "usage": _usage(episode.turns),
            "effective_tool_calls": counts["effective_tool_calls"],
            "total_images": total_images,
            "paths": paths,
            "image_tool_analysis": counts["image_tool_analysis"],
            "search_analysis": {
                "search_enabled": "google_search" in (episode.start.get("tools") or []),
                "search_tool_calls": sum(search.values()),
                "search_tool_hist": search,
            },
            "warnings": warnings,
        }
    return {
        **head,
        "paths": paths,
        "usage": _usage(episode.turns),
        "effective_tool_calls": counts["effective_tool_calls"],
        "total_images": total_images,
        "code_analysis": counts["code_analysis"],
        "search_analysis": counts["search_analysis"],
        "warnings": warnings,
    }


def _temperature(episode: EpisodeRecords) -> float:
    agent = episode.start.get("agent") if isinstance(episode.start.get("agent"), dict) else {}
    value = (agent or {}).get("temperature", _config_value(episode, "temperature"))
    try:
        return float(value) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def _config_value(episode: EpisodeRecords, key: str) -> Any:
    config = episode.start.get("config")
    return config.get(key) if isinstance(config, dict) else None


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
            notes.append(f"[runtime] {record.get('reason') or record.get('limit')}")
        elif record.get("kind") == "error":
            notes.append(f"[{record.get('where')}] {record.get('message')}")
    return notes
