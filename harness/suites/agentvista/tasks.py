"""AgentVista tasks in the released formats: ``val.json`` (a JSON list), JSONL, or the parquet split.

A record names its id (``doc_id`` or ``question_id``), its question (``problem`` or ``question``,
with one ``<image>`` placeholder per image, which the official runner counts and then strips), its
images (``images``: paths relative to the image folder, which defaults to the record file's
folder; in parquet, image structs with the bytes inline) and its gold answer (``solution``; the
parquet split calls it ``answer``). ``domain`` and ``subdomain`` are kept when present.

As the official runner does, the number of images shown is the number of placeholders when the
question has any (never more than the record lists), else every listed image. A bad record is a
:class:`TaskRecordError` naming the file, the record and the field; :func:`load_tasks` collects
them in ``errors`` and still returns the good records (``strict=True`` raises on the first).
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelbox.harness.suites.shared import LoadedTasks, TaskRecordError

PLACEHOLDER = re.compile(r"<image>", re.IGNORECASE)
ID_KEYS = ("doc_id", "question_id")
QUESTION_KEYS = ("problem", "question")
ANSWER_KEYS = ("solution", "answer")


@dataclass(frozen=True)
class VistaTask:
    """One AgentVista task: the question as the model sees it (placeholders removed), its images, the gold."""

    task_id: str
    question: str
    images: tuple[Path, ...]
    solution: str
    raw_question: str = ""
    domain: str | None = None
    subdomain: str | None = None
    source: str = ""

    @property
    def prompt(self) -> str:
        """The question text (the name the shared machinery reads)."""
        return self.question

    @property
    def category(self) -> str | None:
        """The task's category for per-category tables: its domain."""
        return self.domain

    def to_dict(self) -> dict[str, Any]:
        """JSON view for traces (``episode_start``) and scores."""
        return {
            "task_id": self.task_id,
            "suite": "agentvista",
            "question": self.question,
            "raw_question": self.raw_question,
            "images": [str(p) for p in self.images],
            "solution": self.solution,
            "domain": self.domain,
            "subdomain": self.subdomain,
            "source": self.source,
            "raw": {  # the shape the shared episode view reads (reports show the conversation and the gold)
                "task_id": self.task_id,
                "input": {"prompt": self.question},
                "golden_answer": {"value": self.solution},
                "domain": self.domain,
            },
        }


def load_tasks(
    source: str | Path,
    ids: Iterable[str] | None = None,
    *,
    image_folder: str | Path | None = None,
    strict: bool = False,
) -> LoadedTasks[VistaTask]:
    """The tasks of ``source`` (a ``.json``/``.jsonl``/``.parquet`` file, or a folder holding ``val.json``,
    ``*.jsonl`` or ``*.parquet``); only ``ids`` (in source order) if given."""
    path = _record_file(Path(source))
    folder = Path(image_folder) if image_folder is not None else path.parent
    wanted = None if ids is None else {str(i) for i in ids}
    loaded: LoadedTasks[VistaTask] = LoadedTasks()
    for number, record in _records(path):
        try:
            task = task_from_record(record, folder, f"{path} record {number}")
        except TaskRecordError as exc:
            if strict:
                raise
            loaded.errors.append(exc)
            continue
        if wanted is None or task.task_id in wanted:
            loaded.tasks.append(task)
    if wanted is not None:
        missing = wanted - {t.task_id for t in loaded.tasks}
        if missing:
            raise TaskRecordError(f"{path}: no usable task with id {', '.join(sorted(missing))}")
    return loaded


def task_from_record(record: Any, folder: Path, where: str) -> VistaTask:
    """One record as a task; :class:`TaskRecordError` says which field is wrong (``where`` names the record)."""
    if isinstance(record, _BadLine):
        raise TaskRecordError(f"{where}: {record}")
    if not isinstance(record, dict):
        raise TaskRecordError(f"{where}: a record must be a JSON object, got {type(record).__name__}")
    task_id = _first(record, ID_KEYS, where, kinds=(str, int))
    where = f"{where} ({ID_KEYS[0] if 'doc_id' in record else ID_KEYS[1]} {task_id})"
    question = _first(record, QUESTION_KEYS, where, kinds=(str,))
    solution = _first(record, ANSWER_KEYS, where, kinds=(str, int, float))
    listed = _image_list(record.get("images"), folder, where)
    wanted = len(PLACEHOLDER.findall(question)) or len(listed)
    if wanted and not listed:
        raise TaskRecordError(f"{where}: the question has {wanted} <image> placeholder(s) but 'images' is empty")
    chosen = tuple(listed[: min(wanted, len(listed))] if wanted else listed)
    for image in chosen:
        if not image.is_file():
            raise TaskRecordError(
                f"{where}: image {image} does not exist; put the images beside the record file or pass the image "
                "folder (the official --image-folder)"
            )
    return VistaTask(
        task_id=str(task_id),
        question=PLACEHOLDER.sub("", question).strip(),
        images=chosen,
        solution=str(solution),
        raw_question=question,
        domain=_optional_text(record.get("domain")),
        subdomain=_optional_text(record.get("subdomain")),
        source=where,
    )


# -- reading files ---------------------------------------------------------------------------------


def _record_file(path: Path) -> Path:
    if path.is_file():
        return path
    if path.is_dir():
        for pattern in ("val.json", "*.json", "*.jsonl", "*.parquet", "data/*.parquet"):
            found = sorted(path.glob(pattern))
            if found:
                return found[0]
        raise TaskRecordError(f"{path} holds no val.json, *.jsonl or *.parquet; point --tasks at the record file")
    raise TaskRecordError(f"{path} does not exist; point --tasks at AgentVista's val.json (or a JSONL/parquet file)")


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    if path.suffix == ".parquet":
        yield from enumerate(_parquet_records(path), start=1)
        return
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TaskRecordError(
                f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
        yield from enumerate(records, start=1)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, _BadLine(f"line {number} is not valid JSON ({exc.msg})")


class _BadLine(str):
    """A JSONL line that does not parse; it becomes that record's error."""


def _parquet_records(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise TaskRecordError(
            f"{path}: reading parquet needs pyarrow; install it (pip install 'pixelbox[parquet]') or use val.json"
        ) from None
    rows = pq.read_table(path).to_pylist()
    images_dir = Path(tempfile.gettempdir()) / f"pixelbox-agentvista-{_file_sha(path)[:16]}"
    for number, row in enumerate(rows, start=1):
        if isinstance(row.get("images"), list):
            row["images"] = [_inline_image(item, images_dir, number, k) for k, item in enumerate(row["images"])]
    return rows


def _inline_image(item: Any, images_dir: Path, number: int, k: int) -> Any:
    """A parquet image struct (``{"bytes", "path"}``) written to a file; other values pass unchanged."""
    if not isinstance(item, dict) or not isinstance(item.get("bytes"), (bytes, bytearray)):
        return item.get("path") if isinstance(item, dict) else item
    name = Path(str(item.get("path") or f"record{number}_image{k}.png")).name
    target = images_dir / f"{number}-{k}-{name}"
    if not target.is_file():
        images_dir.mkdir(parents=True, exist_ok=True)
        target.write_bytes(bytes(item["bytes"]))
    return str(target)


def _file_sha(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- fields ----------------------------------------------------------------------------------------


def _first(record: dict[str, Any], keys: tuple[str, ...], where: str, kinds: tuple[type, ...]) -> Any:
    for key in keys:
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, kinds) or (isinstance(value, str) and not value.strip()):
            raise TaskRecordError(f"{where}: '{key}' must be a non-empty {' or '.join(k.__name__ for k in kinds)}")
        return value
    raise TaskRecordError(f"{where}: missing {' or '.join(repr(k) for k in keys)}")


def _image_list(value: Any, folder: Path, where: str) -> list[Path]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TaskRecordError(f"{where}: 'images' must be a list of image paths relative to the image folder")
    return [Path(v) if Path(v).is_absolute() else folder / v for v in value]


def _optional_text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
