"""Reading tasks: the Agentic-MME layout, JSONL, and validation errors that name file, field and expectation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pixelbox.harness.scoring.view import TaskSpec
from pixelbox.harness.tasks import Task, TaskSourceError, ValidationError, load_tasks
from tests.harness.servers import png_bytes


def official(task_id: str = "0001", **overrides: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "task_id": task_id,
        "input": {"prompt": f"Question {task_id}?"},
        "meta": {"level": 2, "domain": "signs"},
        "golden_answer": {"value": "STOP", "match_type": "exact"},
        "process_evaluation": {
            "checkpoints": [{"id": "V1", "axis": "V", "code_check": {"verifier": "verify_crop_ast"}}],
            "ordering_constraints": [{"id": "O1", "sequence": ["V1"], "max_gap": 2}],
            "efficiency": {"reference_tool_calls": 1},
        },
    }
    raw.update(overrides)
    return raw


def make_root(tmp_path: Path, tasks: dict[str, dict[str, Any]], images: list[str]) -> Path:
    (tmp_path / "json").mkdir()
    (tmp_path / "images").mkdir()
    for stem, raw in tasks.items():
        (tmp_path / "json" / f"{stem}.json").write_text(json.dumps(raw))
    for name in images:
        (tmp_path / "images" / name).write_bytes(png_bytes(8, 8))
    return tmp_path


def test_reads_the_official_layout_with_one_or_several_images(tmp_path: Path) -> None:
    root = make_root(
        tmp_path,
        {"0001": official("0001"), "0002": official("0002")},
        ["image_0001.png", "image_0002_10.png", "image_0002_2.png", "image_0002_1.png"],
    )
    one, two = load_tasks(root)
    assert (one.task_id, one.prompt, one.level, one.answer_value) == ("0001", "Question 0001?", 2, "STOP")
    assert one.images == ((root / "images" / "image_0001.png").resolve(),)
    assert [p.name for p in two.images] == ["image_0002_1.png", "image_0002_2.png"], (
        "the official lookup stops at a gap"
    )
    assert one.checkpoints[0]["id"] == "V1"
    assert one.raw == official("0001") and one.format == "agentic-mme"
    assert one.process_evaluation["efficiency"]["reference_tool_calls"] == 1


def test_loads_four_hundred_tasks(tmp_path: Path) -> None:
    stems = [f"{i:04d}" for i in range(1, 401)]
    root = make_root(tmp_path, {s: official(s) for s in stems}, [f"image_{s}.png" for s in stems])
    tasks = load_tasks(root)
    assert [t.task_id for t in tasks] == stems
    assert all(t.images[0].name == f"image_{t.task_id}.png" for t in tasks)


def test_selects_ids_and_rejects_unknown_ones(tmp_path: Path) -> None:
    root = make_root(
        tmp_path, {"0001": official("0001"), "0002": official("0002")}, ["image_0001.png", "image_0002.png"]
    )
    assert [t.task_id for t in load_tasks(root, ids=["0002"])] == ["0002"]
    with pytest.raises(TaskSourceError, match="no task with id 0003"):
        load_tasks(root, ids=["0003"])
    assert [t.task_id for t in load_tasks(root / "json" / "0002.json")] == ["0002"]


@pytest.mark.parametrize(
    ("overrides", "field", "expected"),
    [
        ({"process_evaluation": {"checkpoints": [{"axis": "V"}]}}, "process_evaluation.checkpoints[0].id", "id"),
        ({"process_evaluation": {"checkpoints": "V1"}}, "process_evaluation.checkpoints", "a list of objects"),
    ],
)
def test_official_validation_names_file_field_and_expectation(
    tmp_path: Path, overrides: dict[str, Any], field: str, expected: str
) -> None:
    raw = official("0001")
    raw.update(overrides)
    root = make_root(tmp_path, {"0001": raw}, ["image_0001.png"])
    with pytest.raises(ValidationError) as caught:
        load_tasks(root)
    error = caught.value
    assert error.file == str(root / "json" / "0001.json")
    assert error.field == field and expected in error.expected
    assert error.file in str(error) and field in str(error)


def test_missing_image_and_bad_json_are_reported(tmp_path: Path) -> None:
    root = make_root(tmp_path, {"0001": official("0001")}, [])
    with pytest.raises(ValidationError, match=r"image_0001\.png") as caught:
        load_tasks(root)
    assert caught.value.field == "images"
    (root / "json" / "0001.json").write_text("{not json")
    with pytest.raises(ValidationError, match="valid JSON"):
        load_tasks(root)


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_jsonl_tasks_resolve_images_and_build_the_official_shape(tmp_path: Path) -> None:
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "a.png").write_bytes(png_bytes())
    rows = [
        {"id": "mine-1", "prompt": "How many?", "images": ["pics/a.png"], "answer": 3, "level": 1},
        "",
        {
            "id": "mine-2",
            "prompt": "Colour?",
            "images": "pics/a.png",
            "answer": {"value": "red", "match_type": "contains"},
            "checkpoints": [{"id": "V1", "axis": "V", "visual_check": {"question": "red?", "expected_answer": "yes"}}],
        },
    ]
    first, second = load_tasks(write_jsonl(tmp_path / "tasks.jsonl", rows))
    assert first.images == ((tmp_path / "pics" / "a.png").resolve(),)
    assert first.answer == {"value": 3, "match_type": "exact"} and first.level == 1
    assert second.answer["match_type"] == "contains" and second.checkpoints[0]["id"] == "V1"
    spec = TaskSpec.from_dict(second.raw)
    assert (spec.task_id, spec.prompt, spec.golden_answer["value"]) == ("mine-2", "Colour?", "red")
    assert spec.checkpoints[0]["id"] == "V1"


@pytest.mark.parametrize(
    ("row", "where", "field", "expected"),
    [
        ({"id": "x", "prompt": "p", "images": ["a.png"], "answer": 1, "promt": "typo"}, ":2", "promt", "no such field"),
        (
            {"id": "x", "prompt": "p", "images": ["missing.png"], "answer": 1},
            ":2",
            "images[0]",
            "an existing image file",
        ),
        ({"id": "x", "prompt": "p", "images": [], "answer": 1}, ":2", "images", "a non-empty list"),
        ({"id": "x", "prompt": "p", "images": ["a.png"]}, ":2", "answer", "the expected answer"),
        ({"id": "x", "prompt": "", "images": ["a.png"], "answer": 1}, ":2", "prompt", "a non-empty string"),
        ({"id": "y", "prompt": "p", "images": ["a.png"], "answer": 1}, "", "task_id", "a unique task id"),
        ("[not json", ":2", "(line)", "one JSON object per line"),
    ],
)
def test_jsonl_validation_names_line_field_and_expectation(
    tmp_path: Path, row: Any, where: str, field: str, expected: str
) -> None:
    (tmp_path / "a.png").write_bytes(png_bytes())
    first = {"id": "y", "prompt": "p", "images": ["a.png"], "answer": 1}
    path = write_jsonl(tmp_path / "tasks.jsonl", [first, row])
    with pytest.raises(ValidationError) as caught:
        load_tasks(path)
    assert caught.value.file == f"{path}{where}"
    assert caught.value.field == field and expected in caught.value.expected


def test_unknown_sources_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TaskSourceError, match="not a task source"):
        load_tasks(tmp_path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(TaskSourceError, match="no tasks"):
        load_tasks(empty)


def test_task_to_dict_is_json_serializable(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(png_bytes())
    path = write_jsonl(tmp_path / "t.jsonl", [{"id": "z", "prompt": "p", "images": ["a.png"], "answer": "q"}])
    task: Task = load_tasks(path)[0]
    assert json.loads(json.dumps(task.to_dict()))["images"] == [str((tmp_path / "a.png").resolve())]
