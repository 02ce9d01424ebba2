"""Agentic-MME task files read as the official runner reads them, with a note for every normalization.

The official runner takes any JSON object: the prompt is ``input.prompt`` (else empty), the task id
``task_id`` (else empty: its run folder is named by the file stem anyway), and the images are found
from the *file name*, not the id: the first run of digits in the stem, zero-padded to 4, gives
``image_NNNN_1``, ``image_NNNN_2``, ... (consecutive, ``.png``/``.jpg``/``.jpeg``) in the first of
``ROOT/image/`` and ``ROOT/images/`` that has ``_1``; else a single ``image_NNNN`` in the first that
has it. ``ROOT`` is the task file's grandparent. So ``9.json`` finds ``image_0009.png``, and an
``image_0162.png`` beside ``image_0162_1.png`` and ``_2`` is not loaded.

We load the same tasks. What the rest of pixelbox needs in a fixed shape (a file-safe unique id, a
golden answer with a known match type, an integer level, a numeric tolerance) is normalized in
``Task.raw`` with one :class:`TaskNote` per change; the dataset file itself is never changed, and the
official scorer semantics read it as it is. Refused (no loader could use them): a file that is not
a JSON object, a task whose images the official lookup cannot find, and a ``process_evaluation``
whose checkpoints are not objects with ids (the official evaluator fails on those).
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelbox.harness.tasks.schema import LEVELS, MATCH_TYPES, ValidationError, check_process

OFFICIAL_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
IMAGE_DIRS = ("image", "images")
"""Where the official lookup searches, in order, under the dataset root."""
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class TaskNote:
    """One deviation from the documented task format: where, which field, and what was done about it.

    ``severity`` is ``normalized`` (loaded, a value in ``Task.raw`` differs from the file),
    ``deviation`` (loaded as is, but it is not the documented format or the official code reads it
    differently) or ``unusable`` (not loaded).
    """

    file: str
    field: str
    message: str
    severity: str = "normalized"

    def __str__(self) -> str:
        return f"{self.file}: field '{self.field}': {self.message}"


class TaskFormatWarning(UserWarning):
    """A task was loaded after normalizing a field (the message says which and how)."""


def warn(note: TaskNote) -> None:
    """Emit one :class:`TaskFormatWarning` for a note."""
    warnings.warn(str(note), TaskFormatWarning, stacklevel=3)


def numeric_key(path: Path) -> str | None:
    """The image key the official lookup derives from a task file name (first digits, 4 wide)."""
    found = re.search(r"(\d+)", path.stem)
    return None if found is None else str(int(found.group(1))).zfill(4)


def official_images(path: Path, root: Path) -> list[Path]:
    """The images the official runner gives a task file (empty when it finds none)."""
    key = numeric_key(path)
    if key is None:
        return []
    folders = [root / name for name in IMAGE_DIRS if (root / name).exists()]
    for folder in folders:
        several: list[Path] = []
        while True:
            number = len(several) + 1
            candidates = [folder / f"image_{key}_{number}{s}" for s in OFFICIAL_IMAGE_SUFFIXES]
            hit = next((c for c in candidates if c.exists()), None)
            if hit is None:
                break
            several.append(hit.resolve())
        if several:
            return several
    for folder in folders:
        for suffix in OFFICIAL_IMAGE_SUFFIXES:
            single = folder / f"image_{key}{suffix}"
            if single.exists():
                return [single.resolve()]
    return []


def unloaded_images(path: Path, root: Path, loaded: list[Path]) -> list[Path]:
    """Files named like this task's images that the official lookup does not load (a gap, a single beside _1)."""
    key = numeric_key(path)
    if key is None:
        return []
    pattern = re.compile(rf"^image_{key}(_\d+)?\.(png|jpe?g)$", re.IGNORECASE)
    found = []
    for name in IMAGE_DIRS:
        folder = root / name
        if folder.is_dir():
            found += [p.resolve() for p in folder.iterdir() if pattern.match(p.name)]
    return sorted(p for p in found if p not in loaded)


def task_files(folder: Path) -> list[Path]:
    """The task files of a directory as the official runner lists them (``*.json``, sorted, no dot files)."""
    return sorted(p for p in folder.glob("*.json") if p.is_file())


def read_document(path: Path) -> dict[str, Any]:
    """The task file's JSON object (anything else is unusable)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValidationError(str(path), "(document)", f"valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(raw, dict):
        raise ValidationError(str(path), "(document)", "a JSON object", type(raw).__name__)
    return raw


class Normalizer:
    """Builds the normalized copy of one task file and the notes saying what changed."""

    def __init__(self, path: Path, raw: dict[str, Any]) -> None:
        self.path, self.file = path, str(path)
        self.original = raw
        self.raw = copy.deepcopy(raw)
        self.notes: list[TaskNote] = []

    def note(self, field: str, message: str, severity: str = "normalized") -> None:
        self.notes.append(TaskNote(self.file, field, message, severity))

    def task_id(self) -> str:
        value = self.raw.get("task_id")
        stem = self.path.stem
        if value is None or (isinstance(value, str) and not value.strip()):
            self.note("task_id", f"missing; using the file stem {stem!r} (the official run folder name)")
            new = stem if SAFE_ID.match(stem) else _safe(stem)
        elif isinstance(value, bool) or not isinstance(value, (str, int)):
            new = _safe(stem)
            self.note("task_id", f"{value!r} is not a string or integer; using {new!r}")
        elif not SAFE_ID.match(str(value)):
            new = _safe(str(value))
            self.note("task_id", f"{value!r} is not file-name safe; using {new!r} (the file keeps the original)")
        else:
            return str(value)
        self.raw["task_id"] = new
        return new

    def prompt(self) -> str:
        value = (self.raw.get("input") or {}).get("prompt") if isinstance(self.raw.get("input"), dict) else None
        if isinstance(value, str) and value.strip():
            return value
        self.note("input.prompt", "missing or empty; the official runner sends an empty prompt", "deviation")
        text = value if isinstance(value, str) else ""
        given = self.raw.get("input")
        self.raw["input"] = {**(given if isinstance(given, dict) else {}), "prompt": text}
        return text

    def level(self) -> int | None:
        meta = self.raw.get("meta")
        value = meta.get("level") if isinstance(meta, dict) else None
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value in LEVELS:
            return value
        if isinstance(value, str) and value.strip() in ("1", "2", "3"):
            self.raw["meta"]["level"] = int(value.strip())
            number = int(value.strip())
            self.note("meta.level", f"text {value!r} read as {number} (the official summary leaves it out of levels)")
            return int(value.strip())
        self.note("meta.level", f"{value!r} is not a level 1, 2 or 3; treated as no level", "deviation")
        self.raw["meta"].pop("level", None)
        return None

    def answer(self) -> dict[str, Any]:
        golden = self.raw.get("golden_answer")
        if not isinstance(golden, dict):
            self.note(
                "golden_answer",
                "missing; the official scorer then compares with an empty value (every answer contains it)",
            )
            golden = {"value": "", "match_type": "contains"}
        golden = dict(golden)
        if "value" not in golden:
            self.note("golden_answer.value", "missing; the official scorer compares with an empty value")
            golden["value"] = ""
        kind = golden.get("match_type", "contains")
        if kind not in MATCH_TYPES:
            self.note("golden_answer.match_type", f"{kind!r} is unknown; scored as the official default, 'contains'")
            golden["match_type"] = "contains"
        golden = self._tolerance(golden)
        self.raw["golden_answer"] = golden
        return golden

    def _tolerance(self, golden: dict[str, Any]) -> dict[str, Any]:
        value = golden.get("tolerance")
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            return golden
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.note(
                "golden_answer.tolerance",
                f"{value!r} is not a number; using 0 (the official scorer fails on it)",
                "deviation",
            )
            number = 0.0
        else:
            self.note("golden_answer.tolerance", f"text {value!r} read as the number {number:g}")
        golden["tolerance"] = number
        return golden

    def process(self) -> dict[str, Any]:
        process = self.raw.get("process_evaluation")
        if process is None:
            return {}
        return check_process(process, "process_evaluation", self.file)


def _safe(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")
    return cleaned or "task"
