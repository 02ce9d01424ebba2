"""Tasks: the Agentic-MME dataset layout and a JSONL format for users' own tasks, both read into ``Task``.

Agentic-MME layout (read as the official runner reads it: :mod:`.official`)::

    ROOT/json/NNNN.json                one task per file (task_id, input.prompt, meta.level,
                                       golden_answer, process_evaluation)
    ROOT/image[s]/image_NNNN.png       its image, or image_NNNN_1.png, image_NNNN_2.png, ... for several

JSONL (one task per line; image paths relative to the JSONL file)::

    {"id": "t1", "prompt": "...", "images": ["a.png"], "answer": "42", "level": 1, "checkpoints": [...]}

``answer`` may be a plain value or an object ``{value, match_type, tolerance}``. Every task keeps
``raw``, the task in the official JSON shape, so the exporter and the scorer read one format.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pixelbox.harness.tasks.official import (
    IMAGE_DIRS,
    SAFE_ID,
    Normalizer,
    TaskFormatWarning,
    TaskNote,
    numeric_key,
    official_images,
    read_document,
    task_files,
    unloaded_images,
    warn,
)
from pixelbox.harness.tasks.schema import (
    ValidationError,
    check_answer,
    check_checkpoints,
    check_process,
    optional_level,
    require_id,
    require_text,
)

__all__ = [
    "Task",
    "TaskFormatWarning",
    "TaskNote",
    "TaskSourceError",
    "ValidationError",
    "load_jsonl_tasks",
    "load_official_tasks",
    "load_tasks",
    "load_tasks_report",
]

TaskFormat = Literal["agentic-mme", "jsonl"]
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
_IMAGE_NAME = re.compile(r"^image_(?P<key>\w+?)(?:_(?P<k>\d+))?$")
JSONL_FIELDS = ("id", "prompt", "images", "answer", "level", "checkpoints", "ordering_constraints", "efficiency")


class TaskSourceError(ValueError):
    """The path given is not something tasks can be read from."""


@dataclass(frozen=True)
class Task:
    """One task, whatever file it came from.

    ``images`` are absolute host paths (image 0 first). ``answer`` is the golden answer object
    ``{value, match_type, tolerance}``. ``raw`` is the task in the official Agentic-MME JSON shape
    (verbatim for dataset files, built for JSONL tasks).
    """

    task_id: str
    prompt: str
    images: tuple[Path, ...]
    answer: dict[str, Any]
    level: int | None = None
    checkpoints: tuple[dict[str, Any], ...] = ()
    source: Path | None = None
    format: TaskFormat = "jsonl"
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def answer_value(self) -> Any:
        """The expected answer's value."""
        return self.answer.get("value")

    @property
    def process_evaluation(self) -> dict[str, Any]:
        """Checkpoints, ordering constraints and efficiency reference (empty when the task has none)."""
        return dict(self.raw.get("process_evaluation") or {})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable description (for traces and run manifests).

        ``raw`` is the task as read (checkpoints included), so a trace can be scored even after
        the task files have moved.
        """
        return {
            "task_id": self.task_id,
            "prompt": self.prompt,
            "images": [str(p) for p in self.images],
            "answer": self.answer,
            "level": self.level,
            "format": self.format,
            "source": None if self.source is None else str(self.source),
            "raw": self.raw,
        }


def load_tasks(path: str | Path, ids: Iterable[str] | None = None) -> list[Task]:
    """Read tasks from an Agentic-MME root (has ``json/``), a directory of task files, one task file, or a ``.jsonl``.

    ``ids`` keeps only those task ids (in the source order); an unknown id is an error. Every
    normalization of an official task file is a :class:`TaskFormatWarning`.
    """
    tasks, notes = load_tasks_report(path, ids)
    for note in notes:
        warn(note)
    return tasks


def load_tasks_report(path: str | Path, ids: Iterable[str] | None = None) -> tuple[list[Task], list[TaskNote]]:
    """:func:`load_tasks` and the notes on what was normalized (no warnings emitted)."""
    source = Path(path).expanduser().resolve()
    notes: list[TaskNote] = []
    if source.is_dir() and (source / "json").is_dir():
        tasks = load_official_tasks(source / "json", notes)
    elif source.is_dir() and task_files(source):
        tasks = load_official_tasks(source, notes)
    elif source.is_file() and source.suffix == ".jsonl":
        tasks = load_jsonl_tasks(source)
    elif source.is_file() and source.suffix == ".json":
        tasks = [read_official_task(source, notes)]
    else:
        raise TaskSourceError(
            f"{source}: not a task source; expected an Agentic-MME directory (with json/ and image/ or images/), "
            "a directory of task .json files, one task .json file, or a .jsonl file"
        )
    return _select(tasks, ids, source), notes


def load_official_tasks(folder: Path, notes: list[TaskNote] | None = None) -> list[Task]:
    """Every ``*.json`` task in ``folder`` (an Agentic-MME ``json/`` directory), sorted by file name.

    Accepts an Agentic-MME root too (its ``json/``). Notes on normalizations go to ``notes``.
    """
    if (folder / "json").is_dir():
        folder = folder / "json"
    files = task_files(folder)
    if not files:
        raise TaskSourceError(f"{folder}: no .json task files found")
    sink = [] if notes is None else notes
    return _unique([read_official_task(f, sink) for f in files], sink)


def load_jsonl_tasks(path: Path) -> list[Task]:
    """Every task in a JSONL file; blank lines are skipped."""
    tasks = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                tasks.append(_read_jsonl_line(line, f"{path}:{number}", path.parent))
    if not tasks:
        raise TaskSourceError(f"{path}: no tasks (the file is empty)")
    return _unique(tasks)


# -- Agentic-MME files --------------------------------------------------------------------------


def read_official_task(path: Path, notes: list[TaskNote]) -> Task:
    """One official task file, its images found by the official lookup (root: the file's grandparent)."""
    raw = read_document(path)
    reader = Normalizer(path, raw)
    task_id = reader.task_id()
    prompt = reader.prompt()
    answer = reader.answer()
    level = reader.level()
    process = reader.process()
    images = official_images(path, path.parent.parent)
    if not images:
        images = _by_id(path, task_id)
        if images:
            reader.note("images", f"found by task id as image_{task_id}; the official lookup finds none", "deviation")
    for extra in unloaded_images(path, path.parent.parent, images):
        reader.note(
            "images",
            f"{extra.name} is not loaded (the official lookup stops at the first gap in _1, _2, ...)",
            "deviation",
        )
    notes.extend(reader.notes)
    if not images:
        key = numeric_key(path) or "NNNN"
        where = " or ".join(str(path.parent.parent / d) for d in IMAGE_DIRS)
        raise ValidationError(
            str(path), "images", f"an image file image_{key}.png (or image_{key}_1.png, ...) in {where}"
        )
    return Task(
        task_id=task_id,
        prompt=prompt,
        images=tuple(images),
        answer=answer,
        level=level,
        checkpoints=tuple(process.get("checkpoints") or ()),
        source=path,
        format="agentic-mme",
        raw=reader.raw,
    )


def _by_id(path: Path, task_id: str) -> list[Path]:
    """pixelbox's older lookup (``image_<task id>[_K]``), kept for sets whose files are not numbered."""
    for name in IMAGE_DIRS:
        folder = path.parent.parent / name
        if not folder.is_dir():
            continue
        found = []
        for entry in folder.iterdir():
            match = _IMAGE_NAME.match(entry.stem)
            if match and match["key"] == task_id and entry.suffix.lower() in IMAGE_SUFFIXES:
                found.append((int(match["k"]) if match["k"] is not None else -1, entry.resolve()))
        if found:
            return [p for _, p in sorted(found)]
    return []


# -- JSONL --------------------------------------------------------------------------------------


def _read_jsonl_line(line: str, where: str, base: Path) -> Task:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValidationError(where, "(line)", f"one JSON object per line ({exc.msg})") from exc
    if not isinstance(raw, dict):
        raise ValidationError(where, "(line)", "a JSON object", type(raw).__name__)
    unknown = sorted(set(raw) - set(JSONL_FIELDS))
    if unknown:
        known = ", ".join(JSONL_FIELDS)
        raise ValidationError(where, unknown[0], f"no such field (known fields: {known})", raw[unknown[0]])
    task_id = require_id(raw, "id", where)
    answer = _jsonl_answer(raw, where)
    level = optional_level(raw, "level", where)
    checkpoints = check_checkpoints(raw.get("checkpoints", []), "checkpoints", where)
    process = check_process(
        {k: raw[k] for k in ("checkpoints", "ordering_constraints", "efficiency") if k in raw}, "(process)", where
    )
    official: dict[str, Any] = {
        "task_id": task_id,
        "input": {"prompt": require_text(raw, "prompt", where)},
        "meta": {} if level is None else {"level": level},
        "golden_answer": answer,
        "process_evaluation": process,
    }
    return Task(
        task_id=task_id,
        prompt=official["input"]["prompt"],
        images=_jsonl_images(raw, where, base),
        answer=answer,
        level=level,
        checkpoints=tuple(checkpoints),
        source=Path(where.rsplit(":", 1)[0]),
        format="jsonl",
        raw=official,
    )


def _jsonl_answer(raw: dict[str, Any], where: str) -> dict[str, Any]:
    if "answer" not in raw:
        raise ValidationError(where, "answer", "the expected answer (a value, or {value, match_type, tolerance})")
    answer = raw["answer"]
    if isinstance(answer, dict):
        return check_answer(answer, "answer", where)
    if answer is None or isinstance(answer, list):
        raise ValidationError(where, "answer", "a string, a number or an object with 'value'", answer)
    return {"value": answer, "match_type": "exact"}


def _jsonl_images(raw: dict[str, Any], where: str, base: Path) -> tuple[Path, ...]:
    images = raw.get("images")
    if isinstance(images, str):
        images = [images]
    expected = "a non-empty list of image paths (relative to the JSONL file)"
    if "images" not in raw:
        raise ValidationError(where, "images", expected)
    if not isinstance(images, list) or not images or not all(isinstance(p, str) and p for p in images):
        raise ValidationError(where, "images", expected, raw["images"])
    paths = []
    for i, name in enumerate(images):
        path = (base / name).resolve()
        if not path.is_file():
            raise ValidationError(where, f"images[{i}]", f"an existing image file (looked for {path})", name)
        paths.append(path)
    return tuple(paths)


# -- whole sets ---------------------------------------------------------------------------------


def _unique(tasks: Sequence[Task], notes: list[TaskNote] | None = None) -> list[Task]:
    """Tasks with distinct ids: an official file whose id is taken is renamed by its file stem (noted)."""
    seen: dict[str, Task] = {}
    kept = []
    for task in tasks:
        if task.task_id in seen and task.format == "agentic-mme" and task.source is not None and notes is not None:
            stem = task.source.stem
            if stem not in seen and SAFE_ID.match(stem):
                first = seen[task.task_id].source
                notes.append(
                    TaskNote(
                        str(task.source),
                        "task_id",
                        f"{task.task_id!r} is also used by {first}; using the file stem {stem!r}",
                    )
                )
                task = dataclasses.replace(task, task_id=stem, raw={**task.raw, "task_id": stem})
        if task.task_id in seen:
            first = seen[task.task_id].source
            raise ValidationError(str(task.source), "task_id", f"a unique task id (also used by {first})", task.task_id)
        seen[task.task_id] = task
        kept.append(task)
    return kept


def _select(tasks: list[Task], ids: Iterable[str] | None, source: Path) -> list[Task]:
    if ids is None:
        return tasks
    wanted = set(ids)
    missing = sorted(wanted - {t.task_id for t in tasks})
    if missing:
        raise TaskSourceError(f"{source}: no task with id {', '.join(missing)}")
    return [t for t in tasks if t.task_id in wanted]
