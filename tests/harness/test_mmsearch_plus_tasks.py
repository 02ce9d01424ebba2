"""MMSearch-Plus loading and Set-of-Mark regions: an encrypted arrow dataset in the released on-disk layout
(written here with pyarrow directly, encrypted here with hashlib and base64), bad records, and our
deterministic region proposals and overlay."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from PIL import Image, ImageDraw

from pixelbox.harness.suites import SUITES
from pixelbox.harness.suites.mmsearch_plus import som
from pixelbox.harness.suites.mmsearch_plus.tasks import decrypt, load_tasks

KEY = hashlib.sha256(b"MMSearch-Plus").digest()


def _enc(text: str) -> str:
    data = text.encode("utf-8")
    return base64.b64encode(bytes(b ^ KEY[i % 32] for i, b in enumerate(data))).decode()


def _png(size: tuple[int, int], colour: tuple[int, int, int]) -> bytes:
    import io

    buffer = io.BytesIO()
    image = Image.new("RGB", size, (200, 200, 200))
    ImageDraw.Draw(image).rectangle((20, 20, size[0] // 2, size[1] // 2), fill=colour)
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def released(rows: list[dict[str, Any]], folder: Path, shards: int = 2) -> Path:
    """``rows`` as save_to_disk writes them: Arrow IPC stream shards data-0000i-of-0000n.arrow and state.json."""
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    fields = [("question", pa.string()), ("answer", pa.list_(pa.string())), ("num_images", pa.int64())]
    fields += [(name, pa.string()) for name in ("arxiv_id", "video_url", "category", "difficulty", "subtask")]
    fields += [(f"img_{k}", image) for k in range(1, 6)]
    schema = pa.schema(fields)
    folder.mkdir(parents=True)
    per = (len(rows) + shards - 1) // shards
    for i in range(shards):
        table = pa.Table.from_pylist(rows[i * per : (i + 1) * per], schema=schema)
        shard = folder / f"data-{i:05d}-of-{shards:05d}.arrow"
        with pa.OSFile(str(shard), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
            writer.write_table(table)
    (folder / "state.json").write_text(json.dumps({"_data_files": [], "_split": "train"}))
    return folder


def row(question: str, answers: list[str], images: list[bytes], **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "question": _enc(question),
        "answer": [_enc(a) for a in answers],
        "num_images": len(images),
        "arxiv_id": "",
        "video_url": _enc("https://v.example.org/x"),
        "category": "Sports",
        "difficulty": "difficult",
        "subtask": "s",
    }
    for k in range(1, 6):
        record[f"img_{k}"] = {"bytes": images[k - 1], "path": f"i{k}.png"} if k <= len(images) else None
    return {**record, **extra}


def test_encrypted_arrow_dataset_loads_in_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIXELBOX_CACHE", str(tmp_path / "cache"))
    rows = [
        row("Which stadium is shown?", ["Camp Nou", "Spotify Camp Nou"], [_png((300, 200), (255, 0, 0))]),
        row(
            "Who painted the mural (Ünïcode)?",
            ["Ana Ñúñez"],
            [_png((120, 90), (0, 0, 255)), _png((64, 64), (0, 255, 0))],
        ),
        row("Broken", ["x"], [_png((50, 50), (0, 0, 0))], num_images=3),
    ]
    folder = released(rows, tmp_path / "mmsearch_plus")
    loaded = load_tasks(folder)
    assert [t.task_id for t in loaded.tasks] == ["mmsp-000", "mmsp-001"]
    first, second = loaded.tasks
    assert first.question == "Which stadium is shown?"
    assert first.answers == ("Camp Nou", "Spotify Camp Nou")
    assert first.video_url == "https://v.example.org/x" and first.arxiv_id == ""
    assert second.question == "Who painted the mural (Ünïcode)?" and second.answers == ("Ana Ñúñez",)
    assert [Image.open(p).size for p in second.images] == [(120, 90), (64, 64)]
    assert second.images[0].read_bytes() == rows[1]["img_1"]["bytes"]  # images are not encrypted
    (error,) = loaded.errors
    assert "data-00001-of-00002.arrow, record 2 (mmsp-002)" in str(error) and "num_images is 3" in str(error)
    assert [t.task_id for t in load_tasks(folder, ids=["mmsp-001"]).tasks] == ["mmsp-001"]
    suite_tasks = SUITES.get("mmsearch-plus").load_tasks(folder)  # bad records are skipped, the rest load
    assert len(suite_tasks) == 2


def test_decrypt_matches_an_independent_computation() -> None:
    assert decrypt(_enc("The 2019 final")) == "The 2019 final"
    assert _enc("A") == base64.b64encode(bytes([ord("A") ^ KEY[0]])).decode()
    with pytest.raises(ValueError):
        decrypt("not base64!")


def test_wrong_answers_field_names_the_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIXELBOX_CACHE", str(tmp_path / "cache"))
    image = tmp_path / "a.png"
    image.write_bytes(_png((40, 40), (1, 2, 3)))
    source = tmp_path / "tasks.jsonl"
    source.write_text(
        json.dumps({"question": "plain text question?", "answer": [], "img_1": "a.png"})
        + "\n"
        + json.dumps({"question": "plain?", "answer": ["yes"], "img_1": "a.png", "som_boxes": [[[1, 2, 30, 20]]]})
        + "\n"
    )
    loaded = load_tasks(source)
    assert "field 'answer' must be a non-empty list" in str(loaded.errors[0])
    (task,) = loaded.tasks
    assert task.question == "plain?" and task.som_boxes == (((1.0, 2.0, 30.0, 20.0),),)


def _scene(path: Path) -> Path:
    image = Image.new("RGB", (400, 300), (240, 240, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((30, 40, 150, 200), fill=(20, 60, 160))
    draw.rectangle((230, 60, 360, 130), fill=(200, 30, 30))
    draw.ellipse((250, 180, 330, 260), fill=(30, 150, 40))
    image.save(path)
    return path


def test_proposals_are_deterministic_and_find_the_objects(tmp_path: Path) -> None:
    path = _scene(tmp_path / "scene.png")
    boxes = som.propose(path)
    assert boxes == som.propose(path)
    for drawn in ((30, 40, 150, 200), (230, 60, 360, 130), (250, 180, 330, 260)):
        best = max(boxes, key=lambda b: som._iou(b, drawn))
        assert som._iou(best, drawn) > 0.8, (drawn, boxes)
    assert boxes == som.reading_order(boxes, 300)


def test_overlay_draws_each_box_in_its_colour_with_a_tag(tmp_path: Path) -> None:
    path = _scene(tmp_path / "scene.png")
    marks = som.marks_for((path,))
    overlay = som.draw_overlay(path, marks, tmp_path / "overlay.png")
    drawn = Image.open(overlay).convert("RGB")
    for mark in marks:
        x1, y1, x2, y2 = mark.box
        colour = som.COLOURS[mark.index - 1]
        assert drawn.getpixel((x2 - 1, (y1 + y2) // 2)) == colour  # the right edge of the outline
        assert drawn.getpixel(((x1 + x2) // 2, y2 - 1)) == colour  # the bottom edge
    given = som.marks_for((path,), [[(10.4, 10, 50, 60.6)]])
    assert [(m.index, m.box, m.source) for m in given] == [(1, (10, 10, 50, 61), "task")]
