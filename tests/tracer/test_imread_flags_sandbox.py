"""Reading flags in a real sandbox with the image I/O layer: the read stays the task input."""

from __future__ import annotations

from pathlib import Path

from pixelbox.runtime import Sandbox
from tests.tracer.conftest import make_test_image


def test_transforming_reads_keep_the_task_input_as_root(tmp_path: Path) -> None:
    image = make_test_image(tmp_path / "image_0001.png")
    io = {"enabled": True, "profile": "agentic-mme"}
    with Sandbox(backend="local", inputs=[image], io=io, timeout=60) as sb:
        gray = sb.execute(
            "import os, cv2\ng = cv2.imread(os.environ['ORIGINAL_IMAGE_PATH'], cv2.IMREAD_GRAYSCALE)\n"
            "c = g[100:200, 300:500]\n"
        )
        reduced = sb.execute(
            "h = cv2.imread('/mnt/data/image_0001.png', cv2.IMREAD_REDUCED_COLOR_2)\nd = h[50:100, 150:250]\n"
        )
    assert [(e["op"], e["inputs"]) for e in gray.events] == [
        ("io", []),
        ("grayscale", ["input:0"]),
        ("crop", [gray.events[1]["output"]]),
    ]
    assert [e["op"] for e in reduced.events] == ["io", "resize", "crop"]
    assert reduced.events[1]["params"]["scale"] == [0.5, 0.5]
    for crop in (gray.events[-1], reduced.events[-1]):
        assert crop["params"]["root"] == "input:0"
        assert crop["params"]["bbox_2d_root"] == [300.0, 125.0, 500.0, 250.0]
