"""Tasks: the Agentic-MME dataset layout and a JSONL format for users' own tasks, both read into ``Task``.

Agentic-MME layout::

    ROOT/json/NNNN.json                one task per file (task_id, input.prompt, meta.level,
                                       golden_answer, process_evaluation)
    ROOT/images/image_NNNN.png         its image, or image_NNNN_1.png, image_NNNN_2.png, ... for several

JSONL (one task per line; image paths relative to the JSONL file)::

    {"id": "t1", "prompt": "...", "images": ["a.png"], "answer": "42", "level": 1, "checkpoints": [...]}

``answer`` may be a plain value or an object ``{value, match_type, tolerance}``. Every task keeps
``raw``, the task in the official JSON shape, so the exporter and the scorer read one format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pixelbox.harness.tasks.schema import (
    ValidationError,
    check_answer,
    check_checkpoints,
    check_process,
    is_missing,
    lookup,
    optional_level,
    require_id,
    require_text,
)

__all__ = ["Task", "TaskSourceError", "ValidationError", "load_jsonl_tasks", "load_official_tasks", "load_tasks"]

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
    """Read tasks from an Agentic-MME root (has ``json/``), one of its ``json/NNNN.json`` files, or a ``.jsonl``.

    ``ids`` keeps only those task ids (in the source order); an unknown id is an error.
    """
    source = Path(path).expanduser().resolve()
    if source.is_dir() and (source / "json").is_dir():
        tasks = load_official_tasks(source)
    elif source.is_file() and source.suffix == ".jsonl":
        tasks = load_jsonl_tasks(source)
    elif source.is_file() and source.suffix == ".json" and source.parent.name == "json":
        tasks = [_read_official(source, source.parent.parent, _index_images(source.parent.parent / "images"))]
    else:
        raise TaskSourceError(
            f"{source}: not a task source; expected an Agentic-MME directory (with json/ and images/), "
            "one of its json/NNNN.json files, or a .jsonl file"
        )
    return _select(tasks, ids, source)


def load_official_tasks(root: Path) -> list[Task]:
    """Every ``json/*.json`` task under an Agentic-MME root, sorted by file name."""
    files = sorted(p for p in (root / "json").iterdir() if p.suffix == ".json")
    if not files:
        raise TaskSourceError(f"{root / 'json'}: no .json task files found")
    images = _index_images(root / "images")
    return _unique([_read_official(f, root, images) for f in files])


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


def _index_images(images_dir: Path) -> dict[str, list[tuple[int, Path]]]:
    """Group ``image_KEY[_K].ext`` files by KEY in one directory scan (fast for hundreds of tasks)."""
    index: dict[str, list[tuple[int, Path]]] = {}
    if not images_dir.is_dir():
        return index
    for entry in images_dir.iterdir():
        match = _IMAGE_NAME.match(entry.stem)
        if match and entry.suffix.lower() in IMAGE_SUFFIXES:
            order = int(match["k"]) if match["k"] is not None else -1
            index.setdefault(match["key"], []).append((order, entry))
    return {key: sorted(found) for key, found in index.items()}


def _read_official(path: Path, root: Path, images: dict[str, list[tuple[int, Path]]]) -> Task:
    file = str(path)
    raw = _load_json_object(path)
    task_id = require_id(raw, "task_id", file)
    answer = check_answer(lookup(raw, "golden_answer"), "golden_answer", file)
    process = lookup(raw, "process_evaluation")
    process = {} if is_missing(process) or process is None else check_process(process, "process_evaluation", file)
    return Task(
        task_id=task_id,
        prompt=require_text(raw, "input.prompt", file),
        images=_official_images(path, root, images, task_id),
        answer=answer,
        level=optional_level(raw, "meta.level", file),
        checkpoints=tuple(process.get("checkpoints") or ()),
        source=path,
        format="agentic-mme",
        raw=raw,
    )


def _load_json_object(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValidationError(str(path), "(document)", f"valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(raw, dict):
        raise ValidationError(str(path), "(document)", "a JSON object", type(raw).__name__)
    return raw


def _official_images(
    path: Path, root: Path, images: dict[str, list[tuple[int, Path]]], task_id: str
) -> tuple[Path, ...]:
    found = images.get(path.stem) or images.get(task_id)
    if found:
        return tuple(p.resolve() for _, p in found)
    raise ValidationError(
        str(path), "images", f"an image file {root / 'images'}/image_{path.stem}.png (or image_{path.stem}_1.png, ...)"
    )


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


def _unique(tasks: Sequence[Task]) -> list[Task]:
    seen: dict[str, Task] = {}
    for task in tasks:
        if task.task_id in seen:
            first = seen[task.task_id].source
            raise ValidationError(str(task.source), "task_id", f"a unique task id (also used by {first})", task.task_id)
        seen[task.task_id] = task
    return list(tasks)


def _select(tasks: list[Task], ids: Iterable[str] | None, source: Path) -> list[Task]:
    if ids is None:
        return tasks
    wanted = set(ids)
    missing = sorted(wanted - {t.task_id for t in tasks})
    if missing:
        raise TaskSourceError(f"{source}: no task with id {', '.join(missing)}")
    return [t for t in tasks if t.task_id in wanted]
