"""AgentVista's released record formats load; bad records are reported one by one; images are prepared
to the official sizes (hand-checked)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from pixelbox.harness.suites import SUITES
from pixelbox.harness.suites.agentvista.images import ImagePrepError, prepare, target_size
from pixelbox.harness.suites.agentvista.tasks import TaskRecordError, load_tasks


def _image(path: Path, size: tuple[int, int] = (64, 48)) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, (200, 10, 10)).save(path)
    return path.name


def test_val_json_with_doc_and_question_ids_and_placeholders(tmp_path: Path) -> None:
    records = [
        {"doc_id": 7, "problem": "<image>\nWhat is it?", "images": [_image(tmp_path / "a.jpg")], "solution": "C. a"},
        {
            "question_id": "q2",
            "question": "<image> and <image>: which is larger?",
            "images": [_image(tmp_path / "b.png"), _image(tmp_path / "c.png"), _image(tmp_path / "d.png")],
            "solution": "the first",
            "domain": "Science",
        },
    ]
    (tmp_path / "val.json").write_text(json.dumps(records))
    loaded = load_tasks(tmp_path)  # a folder holding val.json
    assert not loaded.errors
    first, second = loaded.tasks
    assert (first.task_id, first.question, first.solution) == ("7", "What is it?", "C. a")
    assert first.images == (tmp_path / "a.jpg",)
    # two placeholders: two of the three listed images are shown, as the official runner counts them
    assert second.images == (tmp_path / "b.png", tmp_path / "c.png")
    assert second.question == "and : which is larger?" and second.category == "Science"
    assert [t.task_id for t in load_tasks(tmp_path / "val.json", ids=["q2"]).tasks] == ["q2"]


def test_bad_records_are_reported_and_the_rest_still_load(tmp_path: Path) -> None:
    good = {"question_id": "ok", "problem": "<image>Q", "images": [_image(tmp_path / "img" / "x.png")]}
    lines = [
        json.dumps({**good, "solution": "yes"}),
        "{not json",
        json.dumps({"problem": "Q", "images": ["img/x.png"], "solution": "a"}),
        json.dumps({"question_id": "noimg", "problem": "<image>Q", "images": ["img/missing.png"], "solution": "a"}),
        json.dumps({"question_id": "nogold", "problem": "<image>Q", "images": ["img/x.png"]}),
        json.dumps({"question_id": "empty", "problem": "<image>Q", "images": [], "solution": "a"}),
    ]
    source = tmp_path / "tasks.jsonl"
    source.write_text("\n".join(lines).replace('"x.png"', '"img/x.png"'))
    loaded = load_tasks(source)
    assert [t.task_id for t in loaded.tasks] == ["ok"]
    messages = [str(e) for e in loaded.errors]
    assert len(messages) == 5 and all(str(source) in m for m in messages)
    assert "record 2" in messages[0] and "not valid JSON" in messages[0]
    assert "missing 'doc_id' or 'question_id'" in messages[1]
    assert "question_id noimg" in messages[2] and "missing.png does not exist" in messages[2]
    assert "missing 'solution' or 'answer'" in messages[3]
    assert "'images' is empty" in messages[4]
    with pytest.raises(TaskRecordError, match="not valid JSON"):
        load_tasks(source, strict=True)
    assert SUITES.get("agentvista").load_tasks(source)[0].task_id == "ok"


def test_parquet_split_with_answer_and_inline_images(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    Image.new("RGB", (30, 20), (0, 0, 255)).save(buffer, format="PNG")
    table = pa.Table.from_pylist(
        [
            {
                "question_id": "p1",
                "problem": "<image>\nColour?",
                "images": [{"bytes": buffer.getvalue(), "path": "blue.png"}],
                "answer": "blue",
                "domain": "Everyday",
                "subdomain": "Colours",
            }
        ]
    )
    pq.write_table(table, tmp_path / "train-00000-of-00002.parquet")
    (task,) = load_tasks(tmp_path / "train-00000-of-00002.parquet").tasks
    assert (task.task_id, task.solution, task.subdomain) == ("p1", "blue", "Colours")
    with Image.open(task.images[0]) as image:
        assert image.size == (30, 20)


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ((400, 300), (392, 308)),  # each side to the nearest multiple of 28
        ((28, 28), (56, 56)),  # under 4*28*28 pixels: scaled up
        ((2000, 1500), (1624, 1204)),  # 3 M pixels: scaled down to <= 2 M, then floored to multiples of 28
        ((560, 420), (560, 420)),  # already fits
    ],
)
def test_target_size_hand_checked(size: tuple[int, int], expected: tuple[int, int]) -> None:
    width, height = target_size(*size)
    assert (width, height) == expected
    assert width % 28 == 0 and height % 28 == 0 and width * height <= 2_000_000


def test_prepare_writes_an_rgb_copy_and_refuses_extreme_shapes(tmp_path: Path) -> None:
    source = tmp_path / "rgba.png"
    Image.new("RGBA", (400, 300), (1, 2, 3, 4)).save(source)
    out = prepare(source, tmp_path / "out", "original_image")
    with Image.open(out) as image:
        assert (image.mode, image.size) == ("RGB", (392, 308))
    assert prepare(source, tmp_path / "out", "original_image") == out
    thin = tmp_path / "thin.png"
    Image.new("RGB", (2010, 10)).save(thin)
    with pytest.raises(ImagePrepError, match="aspect ratio"):
        prepare(thin, tmp_path / "out", "original_image")
