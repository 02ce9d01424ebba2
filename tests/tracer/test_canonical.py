"""Atomic tools record the same events as equivalent code, and replay re-runs chains."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageFilter

import pixelbox.kernel.recorder as recorder_pkg
from pixelbox.kernel.atomic import canonical
from pixelbox.tracer.events import Event, parse_events, same_operation
from pixelbox.tracer.lineage import artifact_chain
from pixelbox.tracer.replay import replay_chain, similarity, verify
from tests.tracer.conftest import Kernelish, make_test_image

EQUIVALENT_CODE: dict[str, tuple[str, dict[str, object], str]] = {
    "crop": ("crop", {"bbox_2d": [100, 250, 500, 625]}, "out = img.crop((100, 200, 500, 500))"),
    "rotate": ("rotate", {"angle": 270}, "out = img.rotate(-90, expand=True)"),
    "flip": ("flip", {"direction": "both"}, "import cv2, numpy as np\nout = cv2.flip(np.asarray(img), -1)"),
    "resize": ("resize", {"scale": 0.5}, "out = img.resize((500, 400))"),
    "grayscale": ("grayscale", {}, "from PIL import ImageOps\nout = ImageOps.grayscale(img)"),
    "autocontrast": ("autocontrast", {"cutoff": 2}, "from PIL import ImageOps\nout = ImageOps.autocontrast(img, 2)"),
    "equalize": ("equalize", {}, "from PIL import ImageOps\nout = ImageOps.equalize(img)"),
    "invert": ("invert", {}, "from PIL import ImageOps\nout = ImageOps.invert(img)"),
    "blur": ("blur", {"radius": 3}, "from PIL import ImageFilter\nout = img.filter(ImageFilter.GaussianBlur(3))"),
    "sharpen": ("sharpen", {}, "from PIL import ImageFilter\nout = img.filter(ImageFilter.SHARPEN)"),
    "enhance": (
        "enhance",
        {"contrast": 1.5},
        "from PIL import ImageEnhance\nout = ImageEnhance.Contrast(img).enhance(1.5)",
    ),
}


def atomic_events(tool: str, kwargs: dict[str, object], image: Image.Image) -> list[Event]:
    rec = recorder_pkg.current()
    start = len(rec.events)
    canonical.TOOLS[tool](image, **kwargs)
    return parse_events(rec.events[start:])


@pytest.mark.parametrize("name", sorted(EQUIVALENT_CODE))
def test_atomic_tool_equals_code(name: str, kernel: Kernelish, sandbox_env: Path, test_image: Path) -> None:
    tool, kwargs, code = EQUIVALENT_CODE[name]
    img = Image.open(test_image).convert("RGB")
    kernel.shell.user_ns["img"] = img
    recorder_pkg.register_root(img, 0)
    code_events = [e for e in parse_events(kernel.run(code).events) if e.op not in ("convert", "io")]
    atomic = atomic_events(tool, kwargs, img)
    assert len(atomic) == 1 and atomic[0].api == f"pixelbox.tools.{tool}" and atomic[0].src is None
    assert same_operation(code_events[-1], atomic[0]), (code_events[-1].params, atomic[0].params)


def test_zoomed_crop_records_crop_then_resize(test_image: Path) -> None:
    img = Image.open(test_image)
    events = atomic_events("crop", {"bbox_2d": [0, 0, 500, 500], "zoom_scale": 2.0}, img)
    assert [e.op for e in events] == ["crop", "resize"]
    assert events[0].params["box_px"] == [0, 0, 500, 400]
    assert events[1].params["size"] == [1000, 800] and events[1].inputs == (events[0].output,)


@pytest.mark.parametrize(
    ("tool", "kwargs", "message"),
    [
        ("crop", {"bbox_2d": [500, 0, 100, 100]}, "x2 must exceed x1"),
        ("crop", {"bbox_2d": [0, 0, 10]}, r"\[x1, y1, x2, y2\]"),
        ("crop", {"bbox_2d": [0, 0, 10, 10], "zoom_scale": 9}, "between 0.5 and 5.0"),
        ("flip", {"direction": "diagonal"}, "horizontal"),
        ("threshold", {"value": 300}, "0-255"),
        ("denoise", {"strength": 0}, "between 1 and 30"),
        ("edge_detect", {"method": "magic"}, "canny"),
        ("resize", {}, "width and/or height"),
    ],
)
def test_bad_tool_arguments_say_what_to_pass(
    tool: str, kwargs: dict[str, object], message: str, test_image: Path
) -> None:
    with pytest.raises(canonical.ToolError, match=message):
        canonical.TOOLS[tool](Image.open(test_image), **kwargs)


def test_every_tool_records_its_own_op(test_image: Path) -> None:
    img = Image.open(test_image).convert("RGB")
    required: dict[str, dict[str, object]] = {"crop": {"bbox_2d": [0, 0, 500, 500]}, "rotate": {"angle": 30}}
    required["resize"] = {"scale": 0.5}
    required["enhance"] = {"brightness": 1.2}
    for tool in canonical.TOOLS:
        events = atomic_events(tool, required.get(tool, {}), img)
        assert [e.op for e in events] == [tool], tool


def test_replay_explains_a_real_chain(kernel: Kernelish, sandbox_env: Path, test_image: Path) -> None:
    root = Image.open(test_image).convert("RGB")
    kernel.shell.user_ns["root"] = root
    recorder_pkg.register_root(root, 0)
    run = kernel.run(
        "from PIL import ImageOps, ImageFilter\n"
        "a = root.crop((100, 50, 600, 450)).rotate(90, expand=True)\n"
        "b = ImageOps.autocontrast(a.resize((200, 250)), cutoff=1)\n"
        "c = b.filter(ImageFilter.GaussianBlur(2))\n"
        "c.save('c.png')\n"
    )
    recorder_pkg.current().link_artifact("c.png", "artifact:c")
    chain = artifact_chain(parse_events(run.events), "artifact:c")
    artifact = Image.open(sandbox_env.parent / "c.png")
    result = verify(artifact, root, chain)
    assert result.verdict == "consistent" and result.score is not None and result.score > 0.98


def test_replay_catches_events_that_do_not_explain_the_image(
    kernel: Kernelish, sandbox_env: Path, tmp_path: Path
) -> None:
    root = Image.open(make_test_image(tmp_path / "root.png"))
    kernel.shell.user_ns["root"] = root
    run = kernel.run("out = root.crop((0, 0, 400, 400)).filter(__import__('PIL.ImageFilter').ImageFilter.FIND_EDGES)")
    events = parse_events(run.events)
    honest, _ = replay_chain(root, events)
    assert honest is not None
    claimed = Image.open(tmp_path / "root.png").crop((500, 0, 900, 400)).filter(ImageFilter.FIND_EDGES)
    assert verify(claimed, root, events).verdict == "inconsistent"
    assert similarity(honest, kernel.shell.user_ns["out"]) > 0.99


def test_replay_is_unverifiable_for_ops_without_parameters(test_image: Path) -> None:
    drawn = Event(
        seq=0, exec=0, op="draw", status="ok", api="cv2.rectangle", src=None, inputs=("img:0",), output="img:1"
    )
    root = Image.open(test_image)
    result = verify(root, root, [drawn])
    assert result.verdict == "unverifiable" and "cv2.rectangle" in result.reason
