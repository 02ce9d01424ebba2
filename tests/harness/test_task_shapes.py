"""The 14 dataset shapes the official Agentic-MME loader accepts load here as it loads them.

Expected images follow the official lookup (first digits of the file stem, 4 wide; ``_1``, ``_2``...
consecutive in the first of ``image/``, ``images/`` that has ``_1``, else the single image), checked
against the official ``dataset_utils.resolve_image_path`` on these layouts. Each normalization is a
warning naming the file and the field.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from pixelbox.harness.tasks import TaskFormatWarning, load_tasks, load_tasks_report
from tests.harness.servers import png_bytes


def task(**overrides: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "task_id": "0001",
        "input": {"prompt": "What is written?"},
        "meta": {"level": 2},
        "golden_answer": {"value": "STOP", "match_type": "contains"},
        "process_evaluation": {
            "checkpoints": [{"id": "V1", "axis": "V", "code_check": {"verifier": "verify_crop_ast"}}]
        },
    }
    for key, value in overrides.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return raw


# name: (task file name, task json, image files (dir/name), expected image paths, expected id, notes' fields)
SHAPES: dict[str, tuple[str, dict[str, Any], list[str], list[str], str, set[str]]] = {
    "standard": ("0001.json", task(), ["images/image_0001.png"], ["images/image_0001.png"], "0001", set()),
    "jpg image": (
        "0002.json",
        task(task_id="0002"),
        ["images/image_0002.jpg"],
        ["images/image_0002.jpg"],
        "0002",
        set(),
    ),
    "several images": (
        "0003.json",
        task(task_id="0003"),
        ["images/image_0003_2.png", "images/image_0003_1.png"],
        ["images/image_0003_1.png", "images/image_0003_2.png"],
        "0003",
        set(),
    ),
    "image/ folder": (
        "0004.json",
        task(task_id="0004"),
        ["image/image_0004.png"],
        ["image/image_0004.png"],
        "0004",
        set(),
    ),
    "unpadded file name": ("9.json", task(task_id="9"), ["image/image_0009.png"], ["image/image_0009.png"], "9", set()),
    "unknown match_type": (
        "0006.json",
        task(task_id="0006", golden_answer={"value": "STOP", "match_type": "fuzzy"}),
        ["images/image_0006.png"],
        ["images/image_0006.png"],
        "0006",
        {"golden_answer.match_type"},
    ),
    "no task_id": (
        "0007.json",
        task(task_id=None),
        ["images/image_0007.png"],
        ["images/image_0007.png"],
        "0007",
        {"task_id"},
    ),
    "id with spaces": (
        "0008.json",
        task(task_id="task 8 b"),
        ["images/image_0008.png"],
        ["images/image_0008.png"],
        "task_8_b",
        {"task_id"},
    ),
    "level as text": (
        "0010.json",
        task(task_id="0010", meta={"level": "1"}),
        ["images/image_0010.png"],
        ["images/image_0010.png"],
        "0010",
        {"meta.level"},
    ),
    "tolerance as text": (
        "0011.json",
        task(task_id="0011", golden_answer={"value": "3", "match_type": "numeric", "tolerance": "0"}),
        ["images/image_0011.png"],
        ["images/image_0011.png"],
        "0011",
        {"golden_answer.tolerance"},
    ),
    "no golden_answer": (
        "0012.json",
        task(task_id="0012", golden_answer=None),
        ["images/image_0012.png"],
        ["images/image_0012.png"],
        "0012",
        {"golden_answer"},
    ),
    "single beside _1 and _2": (
        "0162.json",
        task(task_id="0162"),
        ["images/image_0162.png", "images/image_0162_1.png", "images/image_0162_2.png"],
        ["images/image_0162_1.png", "images/image_0162_2.png"],
        "0162",
        {"images"},
    ),
    "several in images/ beat a single in image/": (
        "0013.json",
        task(task_id="0013"),
        ["image/image_0013.png", "images/image_0013_1.png"],
        ["images/image_0013_1.png"],
        "0013",
        {"images"},
    ),
    "named file, no prompt": (
        "task 14.json",
        task(task_id="0014", input={}),
        ["images/image_0014.png"],
        ["images/image_0014.png"],
        "0014",
        {"input.prompt"},
    ),
}


def build(root: Path, name: str, raw: dict[str, Any], images: list[str]) -> Path:
    (root / "json").mkdir(parents=True)
    (root / "json" / name).write_text(json.dumps(raw), encoding="utf-8")
    for image in images:
        (root / image).parent.mkdir(exist_ok=True)
        (root / image).write_bytes(png_bytes(8, 8))
    return root


def test_there_are_fourteen_shapes() -> None:
    assert len(SHAPES) == 14


@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
def test_loads_as_the_official_loader_does(tmp_path: Path, shape: str) -> None:
    name, raw, images, expected, task_id, fields = SHAPES[shape]
    root = build(tmp_path / "set", name, raw, images)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [loaded] = load_tasks(root)
    assert list(loaded.images) == [(root / p).resolve() for p in expected]
    assert loaded.task_id == task_id
    assert loaded.source == (root / "json" / name).resolve()
    said = [str(w.message) for w in caught if issubclass(w.category, TaskFormatWarning)]
    assert {f for f in fields if any(f"field '{f}'" in s for s in said)} == fields
    assert all(str(root / "json" / name) in s for s in said), said
    if not fields:
        assert said == []
    assert json.loads((root / "json" / name).read_text()) == raw, "the dataset file is never changed"


def test_normalized_values_are_what_pixelbox_scores_with(tmp_path: Path) -> None:
    cases = {
        "0010.json": task(task_id="0010", meta={"level": "1"}),
        "0011.json": task(task_id="0011", golden_answer={"value": "3", "match_type": "numeric", "tolerance": "0"}),
        "0012.json": task(task_id="0012", golden_answer=None),
        "0006.json": task(task_id="0006", golden_answer={"value": "STOP", "match_type": "fuzzy"}),
    }
    (tmp_path / "json").mkdir()
    (tmp_path / "images").mkdir()
    for name, raw in cases.items():
        (tmp_path / "json" / name).write_text(json.dumps(raw))
        (tmp_path / "images" / f"image_{name[:4]}.png").write_bytes(png_bytes(8, 8))
    tasks, notes = load_tasks_report(tmp_path)
    by_id = {t.task_id: t for t in tasks}
    assert by_id["0010"].level == 1 and by_id["0010"].raw["meta"]["level"] == 1
    assert by_id["0011"].answer["tolerance"] == 0.0
    assert by_id["0012"].answer == {"value": "", "match_type": "contains"}
    assert by_id["0006"].answer["match_type"] == "contains"
    assert len(notes) == 4 and all(n.severity == "normalized" for n in notes)


def test_what_no_loader_can_use_is_still_refused(tmp_path: Path) -> None:
    from pixelbox.harness.tasks import ValidationError

    build(tmp_path / "a", "0001.json", task(), [])
    with pytest.raises(ValidationError, match=r"image_0001\.png"):
        load_tasks(tmp_path / "a")
    build(tmp_path / "b", "abc.json", task(task_id="abc"), ["images/image_abc.png"])
    [loaded] = load_tasks_report(tmp_path / "b")[0]
    assert loaded.images[0].name == "image_abc.png", "pixelbox's id lookup, noted as a deviation"


def test_tasks_check_lists_deviations_and_fails_only_on_unusable_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pixelbox.cli import main

    root = build(tmp_path / "set", "0010.json", task(task_id="0010", meta={"level": "1"}), ["images/image_0010.png"])
    bad_order = task(
        task_id="0020", process_evaluation={"checkpoints": [], "ordering_constraints": [{"sequence": ["X"]}]}
    )
    (root / "json" / "0020.json").write_text(json.dumps(bad_order))
    (root / "images" / "image_0020.png").write_bytes(png_bytes(8, 8))
    assert main(["tasks", "check", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"normalized: {root / 'json' / '0010.json'}: field 'meta.level'" in out
    assert (
        f"deviation: {root / 'json' / '0020.json'}: field 'process_evaluation.ordering_constraints[0].sequence'" in out
    )
    (root / "json" / "0030.json").write_text("[1, 2]")
    assert main(["tasks", "check", str(root)]) == 1
    out = capsys.readouterr().out
    assert f"unusable: {root / 'json' / '0030.json'}: field '(document)'" in out
