"""MMSearch-Plus tasks: the released arrow dataset (``save_to_disk`` shards) or JSONL, with field decryption.

The released rows carry ``question``, ``answer`` (every acceptable answer), ``arxiv_id`` and
``video_url`` encrypted: each is base64, XORed with the SHA-256 digest of the benchmark's name
(``"MMSearch-Plus"``) repeated to the ciphertext's length, then UTF-8 (the official
``decrypt_after_load.py`` does the same after ``load_dataset``). Images (``img_1``..``img_5``, the
unused ones null) are not encrypted; they are HF ``Image`` structs (``{"bytes", "path"}``) and are
written out once, content-addressed, so the sandbox gets them as files.

Rows have no id: a task is ``mmsp-NNN`` by its row number over the shards in order (what the
official loader's index is). A row may also carry ``som_boxes`` (our extension: per image a list
of ``[x1, y1, x2, y2]`` pixel boxes), used for Set-of-Mark instead of our own region proposals.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pixelbox.harness.suites.shared import LoadedTasks, TaskRecordError

CANARY = "MMSearch-Plus"
"""The benchmark's name; the SHA-256 of it is the XOR key of the encrypted fields."""
ENCRYPTED = ("question", "arxiv_id", "video_url")
MAX_IMAGES = 5


@dataclass(frozen=True)
class SearchTask:
    """One MMSearch-Plus question with its images and every acceptable answer."""

    task_id: str
    question: str
    answers: tuple[str, ...]
    images: tuple[Path, ...]
    category: str = ""
    difficulty: str = ""
    subtask: str = ""
    arxiv_id: str = ""
    video_url: str = ""
    som_boxes: tuple[tuple[tuple[float, float, float, float], ...], ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "question": self.question,
            "answer": list(self.answers),
            "images": [str(p) for p in self.images],
            "category": self.category,
            "difficulty": self.difficulty,
            "level": self.difficulty,
            "subtask": self.subtask,
            "arxiv_id": self.arxiv_id,
            "video_url": self.video_url,
            "som_boxes": None if self.som_boxes is None else [[list(b) for b in boxes] for boxes in self.som_boxes],
        }


def _key(canary: str = CANARY) -> bytes:
    return hashlib.sha256(canary.encode("utf-8")).digest()


def decrypt(text: str, canary: str = CANARY) -> str:
    """One encrypted field in clear: base64-decode, XOR with sha256(canary) repeated, UTF-8."""
    if not text:
        return text
    data = base64.b64decode(text, validate=True)
    key = _key(canary)
    return bytes(b ^ key[i % len(key)] for i, b in enumerate(data)).decode("utf-8")


def encrypt(text: str, canary: str = CANARY) -> str:
    """The inverse of :func:`decrypt` (tests and demos write released-shaped records with it)."""
    if not text:
        return text
    data, key = text.encode("utf-8"), _key(canary)
    return base64.b64encode(bytes(b ^ key[i % len(key)] for i, b in enumerate(data))).decode("ascii")


def image_cache() -> Path:
    """Where extracted dataset images are kept (``PIXELBOX_CACHE`` or ``~/.cache/pixelbox``)."""
    from pixelbox.harness.suites.shared import cache_dir

    return cache_dir("mmsearch-plus", "images")


def load_tasks(
    source: str | Path, ids: Iterable[str] | None = None, *, encrypted: bool | None = None
) -> LoadedTasks[SearchTask]:
    """Tasks of an arrow dataset directory (or one ``.arrow`` file), or a JSONL/JSON file of records.

    ``encrypted``: None decides per record (a question that is valid base64 decrypting to UTF-8 is
    taken as encrypted), True/False forces it.
    """
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such MMSearch-Plus dataset (a save_to_disk folder, .arrow or .jsonl)")
    wanted = set(ids) if ids is not None else None
    loaded: LoadedTasks[SearchTask] = LoadedTasks()
    folder = path if path.is_dir() else path.parent
    for where, number, row in _rows(path):
        task_id = str(row.get("task_id") or f"mmsp-{number:03d}")
        if wanted is None or task_id in wanted:
            loaded.add(partial(_task, row, task_id, folder, encrypted), f"{where}, record {number} ({task_id})")
    return loaded


def _rows(path: Path) -> Iterator[tuple[str, int, dict[str, Any]]]:
    if path.suffix in (".jsonl", ".json"):
        text = path.read_text(encoding="utf-8")
        records = (
            json.loads(text) if path.suffix == ".json" else [json.loads(x) for x in text.splitlines() if x.strip()]
        )
        for number, row in enumerate(records):
            yield str(path), number, row
        return
    files = sorted(path.glob("*.arrow")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"{path}: no .arrow shards (expected data-0000N-of-0000M.arrow from save_to_disk)")
    number = 0
    for shard in files:
        for row in _arrow_rows(shard):
            yield str(shard), number, row
            number += 1


def _arrow_rows(shard: Path) -> Iterator[dict[str, Any]]:
    """Rows of one ``save_to_disk`` shard (an Arrow IPC stream; a file-format table is read too)."""
    import pyarrow as pa

    with pa.memory_map(str(shard), "r") as source:
        try:
            table = pa.ipc.open_stream(source).read_all()
        except pa.ArrowInvalid:
            table = pa.ipc.open_file(source).read_all()
    yield from table.to_pylist()


def _task(row: dict[str, Any], task_id: str, base: Path, encrypted: bool | None) -> SearchTask:
    question = _text(row, "question")
    answers = row.get("answer")
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise TaskRecordError("field 'answer' must be a non-empty list of strings (every acceptable answer)")
    secret = _is_encrypted(question) if encrypted is None else encrypted
    clear = (lambda s: _decrypt_field(s)) if secret else (lambda s: s)
    images = _images(row, base)
    return SearchTask(
        task_id=task_id,
        question=clear(question),
        answers=tuple(clear(a) for a in answers),
        images=images,
        category=str(row.get("category") or ""),
        difficulty=str(row.get("difficulty") or ""),
        subtask=str(row.get("subtask") or ""),
        arxiv_id=clear(str(row.get("arxiv_id") or "")),
        video_url=clear(str(row.get("video_url") or "")),
        som_boxes=_boxes(row.get("som_boxes"), len(images)),
    )


def _text(row: dict[str, Any], name: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise TaskRecordError(f"field {name!r} is missing or empty")
    return value


def _is_encrypted(text: str) -> bool:
    try:
        decrypt(text)
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def _decrypt_field(text: str) -> str:
    try:
        return decrypt(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise TaskRecordError(f"an encrypted field does not decrypt with sha256({CANARY!r}): {exc}") from None


def _images(row: dict[str, Any], base: Path) -> tuple[Path, ...]:
    found: list[Path] = []
    for k in range(1, MAX_IMAGES + 1):
        value = row.get(f"img_{k}")
        if value is None:
            continue
        found.append(_image_file(value, base, k))
    stated = row.get("num_images")
    if isinstance(stated, int) and stated != len(found):
        raise TaskRecordError(f"num_images is {stated} but {len(found)} of img_1..img_5 are set")
    if not found:
        raise TaskRecordError("no image: img_1..img_5 are all null")
    return tuple(found)


def _image_file(value: Any, base: Path, k: int) -> Path:
    if isinstance(value, str):
        path = Path(value) if os.path.isabs(value) else base / value
        if not path.is_file():
            raise TaskRecordError(f"img_{k}: no such image file {path}")
        return path
    if isinstance(value, dict) and isinstance(value.get("bytes"), (bytes, bytearray)):
        data = bytes(value["bytes"])
        ext = os.path.splitext(str(value.get("path") or ""))[1].lower() or ".png"
        target = image_cache() / f"{hashlib.sha256(data).hexdigest()}{ext}"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(target.suffix + f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
        return target
    if isinstance(value, dict) and isinstance(value.get("path"), str):
        return _image_file(value["path"], base, k)
    raise TaskRecordError(
        f"img_{k} must be an HF Image struct {{bytes, path}} or a file path, got {type(value).__name__}"
    )


def _boxes(value: Any, n_images: int) -> tuple[tuple[tuple[float, float, float, float], ...], ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != n_images:
        raise TaskRecordError(f"som_boxes must be a list with one list of boxes per image ({n_images})")
    out = []
    for per_image in value:
        boxes = []
        for box in per_image or []:
            if not (isinstance(box, list) and len(box) == 4 and all(isinstance(v, (int, float)) for v in box)):
                raise TaskRecordError(f"som_boxes: each box must be [x1, y1, x2, y2] in pixels, got {box!r}")
            if box[2] <= box[0] or box[3] <= box[1]:
                raise TaskRecordError(f"som_boxes: box {box} is empty (x2 > x1 and y2 > y1 are needed)")
            boxes.append((float(box[0]), float(box[1]), float(box[2]), float(box[3])))
        out.append(tuple(boxes))
    return tuple(out)
