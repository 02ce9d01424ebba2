"""VisualToolBench tasks read from the released formats: the parquet, the downloaded JSON, or JSONL.

A record (one row of ``ScaleAI/VisualToolBench``, split ``test``) has ``id``, ``turncase``,
``num_turns``, ``prompt_category``, ``eval_focus``, ``turn_prompts``, ``turn_golden_answers``,
``turn_tool_trajectories``, ``rubrics_by_turn`` (one JSON string per turn: ``{rubric_id:
{description, weight, ...}}``) and its images: in the parquet ``images`` / ``images_by_turn`` (image
structs holding PNG bytes), in the official downloader's ``dataset.json`` ``image_paths`` /
``images_by_turn_paths`` (paths like ``data/single_turn/images/sample_K/image_I.png``).

Which images a model sees follows the official runners: a single-turn task shows the first of its
``images``; turn T of a multi-turn task shows the first image of ``images_by_turn[T]``.

A bad record is reported with its file, position, id and field (:class:`RecordError`) and left
out; the rest of the set still loads (:func:`load_tasks_report` returns both).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUITE_NAME = "visualtoolbench"
STEM_CATEGORIES = ("chemistry", "maths", "biology", "engineering", "physics")
"""``prompt_category`` values the official summary merges into ``STEM``."""


class TaskSourceError(ValueError):
    """The path is not a VisualToolBench source, or no record in it could be read."""


@dataclass(frozen=True)
class RecordError:
    """Why one record was left out: where it is, its id when known, the field and what was wrong."""

    file: str
    position: int
    task_id: str | None
    field: str
    problem: str

    def __str__(self) -> str:
        who = f" (id {self.task_id})" if self.task_id else ""
        return f"{self.file}: record {self.position}{who}: field '{self.field}': {self.problem}"


class _Bad(ValueError):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field, self.problem = field, problem


@dataclass(frozen=True)
class Rubric:
    """One weighted rubric criterion (``weight`` 1-5 in the release; weight >= 4 decides the pass rate)."""

    rubric_id: str
    description: str
    weight: float
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"rubric_id": self.rubric_id, "description": self.description, "weight": self.weight, **self.extra}


@dataclass(frozen=True)
class Turn:
    """One user turn: its prompt, the golden answer, the rubrics it is judged by and the image shown."""

    prompt: str
    golden_answer: str
    rubrics: tuple[Rubric, ...]
    image: Path | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "golden_answer": self.golden_answer,
            "rubrics": [r.to_dict() for r in self.rubrics],
            "image": str(self.image) if self.image else None,
        }


@dataclass(frozen=True)
class VtbTask:
    """One VisualToolBench task (single- or multi-turn)."""

    task_id: str
    turncase: str
    category: str
    eval_focus: str
    turns: tuple[Turn, ...]
    source: str = ""

    @property
    def images(self) -> tuple[Path, ...]:
        """Every image some turn shows, once each, in turn order (the sandbox's inputs)."""
        seen: list[Path] = []
        for turn in self.turns:
            if turn.image is not None and turn.image not in seen:
                seen.append(turn.image)
        return tuple(seen)

    @property
    def domain(self) -> str:
        """The official summary's domain: ``prompt_category`` with the STEM subjects merged."""
        return "STEM" if self.category.strip().lower() in STEM_CATEGORIES else self.category

    @property
    def prompt(self) -> str:
        """Every turn's prompt, numbered when there are several (for reports)."""
        if len(self.turns) == 1:
            return self.turns[0].prompt
        return "\n\n".join(f"[turn {n}] {t.prompt}" for n, t in enumerate(self.turns, start=1))

    def to_dict(self) -> dict[str, Any]:
        """JSON view for traces: everything scoring needs, so a scored run needs no dataset."""
        golden = "\n\n".join(t.golden_answer for t in self.turns)
        return {
            "suite": SUITE_NAME,
            "task_id": self.task_id,
            "turncase": self.turncase,
            "category": self.category,
            "domain": self.domain,
            "eval_focus": self.eval_focus,
            "turns": [t.to_dict() for t in self.turns],
            "images": [str(p) for p in self.images],
            "source": self.source,
            # how the shared report view (harness/scoring/view.TaskSpec) reads this task
            "raw": {
                "task_id": self.task_id,
                "input": {"prompt": self.prompt},
                "golden_answer": {"value": golden},
                "meta": {"category": self.domain},
            },
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> VtbTask:
        """The task back from :meth:`to_dict` (as recorded in a trace)."""
        turns = tuple(
            Turn(
                str(t["prompt"]),
                str(t.get("golden_answer") or ""),
                tuple(_rubric_from_dict(r) for r in t.get("rubrics") or ()),
                Path(t["image"]) if t.get("image") else None,
            )
            for t in raw["turns"]
        )
        return cls(
            str(raw["task_id"]),
            str(raw.get("turncase") or ""),
            str(raw.get("category") or ""),
            str(raw.get("eval_focus") or ""),
            turns,
            str(raw.get("source") or ""),
        )


def _rubric_from_dict(raw: dict[str, Any]) -> Rubric:
    extra = {k: v for k, v in raw.items() if k not in ("rubric_id", "description", "weight")}
    return Rubric(str(raw["rubric_id"]), str(raw["description"]), float(raw["weight"]), extra)


@dataclass
class LoadReport:
    """What a source gave: the tasks read and the records left out, each with its reason."""

    tasks: list[VtbTask] = field(default_factory=list)
    errors: list[RecordError] = field(default_factory=list)


def load_tasks_report(source: str | Path, ids: Iterable[str] | None = None) -> LoadReport:
    """Read every record at ``source`` (a ``.parquet``, a ``.json`` list, a ``.jsonl``, or a directory holding
    ``dataset.json``, ``single_turn/``/``multi_turn/`` or parquet files); ``ids`` keeps only those ids."""
    path = Path(source).expanduser().resolve()
    report = LoadReport()
    for file in _files(path):
        _read_file(file, report)
    if ids is not None:
        wanted = [str(i) for i in ids]
        known = {t.task_id for t in report.tasks}
        missing = [i for i in wanted if i not in known]
        if missing:
            raise TaskSourceError(f"{path}: no task with id {', '.join(missing)} (or its record is invalid)")
        report.tasks = [t for t in report.tasks if t.task_id in set(wanted)]
    if not report.tasks:
        why = "; ".join(str(e) for e in report.errors[:3]) or "it holds no records"
        raise TaskSourceError(f"{path}: no VisualToolBench task could be read ({why})")
    return report


def _files(path: Path) -> list[Path]:
    if path.is_file():
        if path.suffix not in (".json", ".jsonl", ".parquet"):
            raise TaskSourceError(f"{path}: expected a .parquet, .json or .jsonl VisualToolBench file")
        return [path]
    if not path.is_dir():
        raise TaskSourceError(f"{path} does not exist")
    candidates = [path / "dataset.json", *(path / d / "dataset.json" for d in ("single_turn", "multi_turn"))]
    candidates += [path / "data" / d / "dataset.json" for d in ("single_turn", "multi_turn")]
    found = [p for p in candidates if p.is_file()] or sorted(path.glob("*.parquet")) or sorted(path.glob("*.jsonl"))
    if not found:
        raise TaskSourceError(
            f"{path}: no VisualToolBench data here; expected dataset.json (the official downloader's layout, "
            "also under single_turn/ and multi_turn/), *.parquet (the Hugging Face release) or *.jsonl"
        )
    return found


def _read_file(file: Path, report: LoadReport) -> None:
    if file.suffix == ".parquet":
        records = _parquet_records(file)
    elif file.suffix == ".jsonl":
        records = _jsonl_records(file, report)
    else:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TaskSourceError(f"{file}: not readable as JSON: {exc}") from None
        if not isinstance(data, list):
            raise TaskSourceError(f"{file}: expected a JSON list of records, found {type(data).__name__}")
        records = list(enumerate(data))
    seen = {t.task_id for t in report.tasks}
    for position, raw in records:
        task_id = str(raw.get("id")) if isinstance(raw, dict) and raw.get("id") is not None else None
        try:
            task = parse_record(raw, file, position)
        except _Bad as bad:
            report.errors.append(RecordError(str(file), position, task_id, bad.field, bad.problem))
            continue
        if task.task_id in seen:
            report.errors.append(RecordError(str(file), position, task.task_id, "id", "a second record has this id"))
            continue
        seen.add(task.task_id)
        report.tasks.append(task)


def _jsonl_records(file: Path, report: LoadReport) -> list[tuple[int, Any]]:
    records: list[tuple[int, Any]] = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            report.errors.append(RecordError(str(file), number, None, "(line)", f"not JSON: {exc.msg}"))
    return records


def parse_record(raw: Any, file: Path, position: int) -> VtbTask:
    """One record as a task; :class:`_Bad` names the field that is wrong."""
    if not isinstance(raw, dict):
        raise _Bad("(record)", f"expected an object, got {type(raw).__name__}")
    task_id = raw.get("id", raw.get("task_id"))
    if not isinstance(task_id, (str, int)) or not str(task_id).strip():
        raise _Bad("id", "a non-empty string is required")
    prompts = raw.get("turn_prompts")
    if isinstance(prompts, str):
        prompts = [prompts]
    if prompts is None and isinstance(raw.get("prompt"), str):
        prompts = [raw["prompt"]]
    if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) and p.strip() for p in prompts):
        raise _Bad("turn_prompts", "a non-empty list of non-empty strings is required")
    goldens = _string_list(raw, "turn_golden_answers", len(prompts))
    rubrics = _rubrics(raw.get("rubrics_by_turn"), len(prompts))
    images = _turn_images(raw, file, position, len(prompts))
    turns = tuple(Turn(p, g, r, i) for p, g, r, i in zip(prompts, goldens, rubrics, images, strict=True))
    turncase = str(raw.get("turncase") or ("single-turn" if len(turns) == 1 else "multi-turn"))
    return VtbTask(
        str(task_id).strip(),
        turncase,
        str(raw.get("prompt_category") or ""),
        str(raw.get("eval_focus") or ""),
        turns,
        str(file),
    )


def _string_list(raw: dict[str, Any], name: str, count: int) -> list[str]:
    value = raw.get(name)
    if value is None:
        return [""] * count
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(name, "a list of strings (one per turn) is required")
    return [*value, *[""] * count][:count]


def _rubrics(value: Any, count: int) -> list[tuple[Rubric, ...]]:
    if value is None:
        raise _Bad("rubrics_by_turn", "rubrics are required (a JSON object string per turn)")
    if isinstance(value, (str, dict)):
        value = [value]
    if not isinstance(value, list) or len(value) < count:
        raise _Bad("rubrics_by_turn", f"one rubric object (or JSON string) per turn is required ({count} turns)")
    return [_turn_rubrics(item, n) for n, item in enumerate(value[:count])]


def _turn_rubrics(item: Any, turn: int) -> tuple[Rubric, ...]:
    where = f"rubrics_by_turn[{turn}]"
    if isinstance(item, str):
        try:
            item = json.loads(item)
        except json.JSONDecodeError as exc:
            raise _Bad(where, f"not valid JSON: {exc.msg} at character {exc.pos}") from None
    if not isinstance(item, dict) or not item:
        raise _Bad(where, "a non-empty object {rubric_id: {description, weight, ...}} is required")
    rubrics = []
    for rubric_id, body in item.items():
        if not isinstance(body, dict):
            raise _Bad(f"{where}.{rubric_id}", "an object with description and weight is required")
        description, weight = body.get("description"), body.get("weight")
        if not isinstance(description, str) or not description.strip():
            raise _Bad(f"{where}.{rubric_id}.description", "a non-empty string is required")
        if isinstance(weight, str) and weight.strip().replace(".", "", 1).isdigit():
            weight = float(weight)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
            raise _Bad(f"{where}.{rubric_id}.weight", f"a positive number is required, got {weight!r}")
        extra = {k: v for k, v in body.items() if k not in ("description", "weight")}
        rubrics.append(Rubric(str(rubric_id), description, float(weight), extra))
    return tuple(rubrics)


# -- images --------------------------------------------------------------------------------------------------


def _turn_images(raw: dict[str, Any], file: Path, position: int, count: int) -> list[Path | None]:
    """The image each turn shows (the official runners show the first one only)."""
    if count == 1:
        first = _first_path(raw, "image_paths", "images", file, position, None)
        if first is None:
            first = _first_path(raw, "images_by_turn_paths", "images_by_turn", file, position, 0)
        return [first]
    return [_first_path(raw, "images_by_turn_paths", "images_by_turn", file, position, t) for t in range(count)]


def _first_path(
    raw: dict[str, Any], paths_key: str, images_key: str, file: Path, position: int, turn: int | None
) -> Path | None:
    paths = raw.get(paths_key)
    images = raw.get(images_key)
    where = paths_key if paths is not None else images_key
    if turn is not None:
        paths = _at(paths, turn)
        images = _at(images, turn)
        where += f"[{turn}]"
    if isinstance(paths, str):
        paths = [paths]
    if isinstance(paths, list) and paths:
        return _resolve(paths[0], file, where)
    if isinstance(images, list) and images:
        return _image_file(images[0], raw, file, position, turn, where)
    if isinstance(images, (dict, str)):
        return _image_file(images, raw, file, position, turn, where)
    return None


def _at(value: Any, index: int) -> Any:
    return value[index] if isinstance(value, list) and index < len(value) else None


def _resolve(text: Any, file: Path, where: str) -> Path:
    """A downloader path (``data/single_turn/images/sample_K/image_I.png``) found beside the JSON file."""
    if not isinstance(text, str) or not text.strip():
        raise _Bad(where, f"an image path is required, got {text!r}")
    given = Path(text)
    if given.is_absolute():
        candidates = [given]
    else:
        bases = [file.parent, file.parent.parent, file.parent.parent.parent]
        candidates = [base / given for base in bases]
        if "images" in given.parts:
            tail = Path(*given.parts[given.parts.index("images") :])
            candidates.append(file.parent / tail)
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise _Bad(where, f"image {text} not found (looked in {', '.join(str(c.parent) for c in candidates[:3])})")


def _image_file(image: Any, raw: dict[str, Any], file: Path, position: int, turn: int | None, where: str) -> Path:
    """An image struct of the parquet (``{bytes, path}``) written once to ``<stem>_images/<id>/``."""
    if isinstance(image, str):
        return _resolve(image, file, where)
    data = image.get("bytes") if isinstance(image, dict) else None
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise _Bad(where, "an image with PNG/JPEG bytes is required")
    digest = hashlib.sha256(data).hexdigest()[:16]
    name = f"image_0_{digest}.png" if turn is None else f"turn_{turn}_image_0_{digest}.png"
    folder = file.parent / f"{file.stem}_images" / _safe(str(raw.get("id") or position))
    target = folder / name
    if not target.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(bytes(data))
        tmp.replace(target)
    return target


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text)[:100] or "record"


def _parquet_records(file: Path) -> list[tuple[int, Any]]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise TaskSourceError(
            f"{file}: reading parquet needs pyarrow; install it (pip install 'pixelbox[parquet]') or use the "
            "official downloader's dataset.json"
        ) from None
    try:
        rows = pq.read_table(file).to_pylist()
    except Exception as exc:  # pyarrow raises its own error types
        raise TaskSourceError(f"{file}: not a readable parquet file: {exc}") from None
    return list(enumerate(rows))


def select(tasks: Sequence[VtbTask], ids: Iterable[str] | None) -> list[VtbTask]:
    """``tasks`` with only ``ids`` (all when None)."""
    if ids is None:
        return list(tasks)
    wanted = set(ids)
    return [t for t in tasks if t.task_id in wanted]
