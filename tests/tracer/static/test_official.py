"""The official reading reproduces the official Agentic-MME runner's ast_ops, case by case.

The expected outputs were derived by running the official code on each block
(``scripts/official_cases.py``); nothing here imports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pixelbox.tracer.static import (
    official_operations,
    official_reading,
    official_saves,
    official_summary,
    official_tool_arguments,
)

CASES: list[dict[str, Any]] = json.loads((Path(__file__).parent / "official_cases.json").read_text())["cases"]


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 150
    assert sum(1 for c in CASES if c["operations"]) >= 100, "most cases list something"


@pytest.mark.parametrize("case", CASES, ids=[f"case{i:03d}" for i in range(len(CASES))])
def test_matches_the_official_reading(case: dict[str, Any]) -> None:
    ops = [
        {"op": o.op, "line": o.line, "col": o.col, "save": o.save, "loop_count": o.loop_count}
        for o in official_operations(case["code"])
    ]
    assert ops == case["operations"], case["code"]
    saves = [
        {
            "image_index": s.image_index,
            "line": s.line,
            "col": s.col,
            "filename": s.filename,
            "op_guess": s.op_guess,
            "standard_name": s.standard_name,
        }
        for s in official_saves(case["code"])
    ]
    assert saves == case["saves"], case["code"]


def test_the_documented_quirks() -> None:
    crop_then_resize = (
        "img = img.crop((0, 0, 9, 9))\nimg = img.resize((90, 90))\nimg.save('/x/transformed_image_1.png')\n"
    )
    assert [o.op for o in official_operations(crop_then_resize)] == ["crop"]
    assert official_tool_arguments([crop_then_resize]) == [{"op": "crop", "save": "transformed_image_1.png", "line": 1}]
    assert official_operations("from PIL import ImageOps\nimg = ImageOps.mirror(img)\n") == []
    assert official_operations("img = img.crop((0, 0, 1, 1)\n") == []
    assert not official_reading("img = img.crop((0, 0, 1, 1)\n").parsed


def test_entries_follow_blocks_in_order_and_the_summary_counts_them() -> None:
    blocks = ["img.rotate(90)\nimg.save('transformed_image_1.png')\n", "img.crop((0, 0, 1, 1))\n"]
    assert [a["op"] for a in official_tool_arguments(blocks)] == ["rotate", "crop"]
    assert official_summary(blocks) == {
        "num_detected_ops": 2,
        "primitive_op_hist": {"rotate": 1, "crop": 1},
        "num_saves": 1,
    }
