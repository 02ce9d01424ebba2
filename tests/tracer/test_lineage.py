"""Boxes compose back to root coordinates: checked against the pixels themselves.

The root image encodes each pixel's own coordinates in its colour, so the root box a crop
really covers can be read back from the crop's pixels and compared with ``bbox_2d_root``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import pixelbox.kernel.recorder as recorder_pkg
from pixelbox.contract.geometry import normalize_box
from pixelbox.tracer.events import parse_events
from pixelbox.tracer.lineage import LineageError, artifact_chain, chain_for, root_of
from tests.tracer.conftest import Kernelish

W, H = 400, 300


def coordinate_image() -> Image.Image:
    ys, xs = np.mgrid[0:H, 0:W]
    rgb = np.stack([xs % 256, ys % 256, (xs // 256) * 16 + ys // 256], axis=-1).astype(np.uint8)
    return Image.fromarray(rgb)


def covered_root_box(pixels: Any) -> list[float]:
    a = np.asarray(pixels).astype(int)
    xs = a[..., 0] + 256 * (a[..., 2] // 16)
    ys = a[..., 1] + 256 * (a[..., 2] % 16)
    return normalize_box((xs.min(), ys.min(), xs.max() + 1, ys.max() + 1), (W, H))


CHAINS = {
    "flip_then_transpose": (
        "a = root.transpose(Image.FLIP_LEFT_RIGHT).transpose(Image.ROTATE_90)\nout = a.crop((30, 40, 130, 90))"
    ),
    "numpy_rot90_slice": "a = np.rot90(np.asarray(root), k=3)\nout = a[50:250, 20:120]",
    "resize_then_crop": "a = root.resize((800, 600), Image.NEAREST)\nout = a.crop((100, 60, 300, 260))",
    "cv2_rotate_flip": (
        "a = cv2.flip(cv2.rotate(np.asarray(root), cv2.ROTATE_90_CLOCKWISE), 0)\nout = a[10:110, 200:260]"
    ),
    "nested_crops": "a = root.crop((50, 50, 350, 250)).crop((10, 20, 210, 170))\nout = a.crop((5, 5, 105, 55))",
    "stepped_slice": "a = np.asarray(root)[::-1, 100:300]\nout = a[20:120, 0:100]",
    "scipy_rotate": (
        "from scipy import ndimage\na = ndimage.rotate(np.asarray(root), 90, order=0)\nout = a[10:110, 20:220]"
    ),
    "pil_rotate_cw": "a = root.rotate(-90, expand=True)\nout = a.crop((40, 100, 140, 300))",
    "resize_down_crop": "a = root.resize((200, 150), Image.NEAREST)\nout = a.crop((50, 50, 100, 100))",
}


SAMPLING_SLACK = {"resize_down_crop": 5.1}
"""Downscaling samples one pixel per output pixel, so the decoded box can be off by one source pixel."""


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_bbox_2d_root_matches_pixels(name: str, kernel: Kernelish, sandbox_env: Path) -> None:
    root = coordinate_image()
    kernel.shell.user_ns["root"] = root
    recorder_pkg.register_root(root, 7)
    run = kernel.run("import numpy as np, cv2\nfrom PIL import Image\n" + CHAINS[name])
    assert run.result.success, run.result.error_in_exec
    crop = [e for e in run.events if e["op"] == "crop"][-1]
    assert crop["params"]["root"] == "input:7"
    assert "approximate" not in crop["params"]
    expected = covered_root_box(kernel.shell.user_ns["out"])
    assert crop["params"]["bbox_2d_root"] == pytest.approx(expected, abs=SAMPLING_SLACK.get(name, 0.11))


def test_arbitrary_rotation_marks_later_boxes_approximate(kernel: Kernelish, sandbox_env: Path) -> None:
    kernel.shell.user_ns["root"] = coordinate_image()
    run = kernel.run("out = root.rotate(30, expand=True).crop((10, 10, 60, 60))")
    crop = run.events[-1]
    assert crop["op"] == "crop" and crop["params"]["approximate"] is True


def test_chain_and_artifact_link(kernel: Kernelish, sandbox_env: Path) -> None:
    root = coordinate_image()
    kernel.shell.user_ns["root"] = root
    recorder_pkg.register_root(root, 3)
    run = kernel.run(
        "a = root.crop((0, 0, 200, 150))\nb = a.resize((400, 300))\nunrelated = root.rotate(90)\nb.save('b.png')\n"
    )
    recorder_pkg.current().link_artifact("b.png", "artifact:1")
    events = parse_events(run.events)
    save = events[-1]
    assert save.op == "io" and save.artifact == "artifact:1"
    chain = artifact_chain(events, "artifact:1")
    assert [e.op for e in chain] == ["crop", "resize", "io"]
    assert root_of(chain, chain[-1].inputs[0]) == "input:3"
    assert chain_for(events, "input:3") == []
    with pytest.raises(LineageError, match="no event is linked"):
        artifact_chain(events, "artifact:404")


def test_link_before_save_event_is_attached_on_record(kernel: Kernelish, sandbox_env: Path) -> None:
    """The I/O layer links inside the patched save, before the recorder sees the save return."""
    kernel.shell.user_ns["link"] = lambda path: recorder_pkg.current().link_artifact(path, "artifact:early")
    run = kernel.run("from PIL import Image\nimg = Image.new('L', (8, 8))\nlink('early.png')\nimg.save('early.png')\n")
    assert run.events[-1]["artifact"] == "artifact:early"


def test_images_linked_but_never_saved_get_a_capture_event(kernel: Kernelish, sandbox_env: Path) -> None:
    kernel.shell.user_ns["link"] = lambda obj: recorder_pkg.current().link_artifact(obj, "artifact:shown")
    run = kernel.run("from PIL import Image\nimg = Image.new('L', (8, 8)).rotate(90)\nlink(img)\n")
    capture = run.events[-1]
    assert capture["api"] == "pixelbox.capture" and capture["artifact"] == "artifact:shown"
    assert capture["inputs"] == [run.events[0]["output"]]


def test_image_registered_while_loading_keeps_its_input_id(
    kernel: Kernelish, sandbox_env: Path, tmp_path: Path
) -> None:
    """The I/O layer wraps ``Image.open`` (keeping its name) and registers the result as ``input:K``."""
    path = tmp_path / "input.png"
    coordinate_image().save(path)
    real_open = Image.open

    @functools.wraps(real_open)
    def patched_open(fp: Any, *args: Any, **kwargs: Any) -> Image.Image:
        image = real_open(fp, *args, **kwargs)
        recorder_pkg.register_root(image, "input:5")
        return image

    kernel.shell.user_ns["path"] = str(path)
    Image.open = patched_open  # type: ignore[assignment]
    try:
        run = kernel.run("from PIL import Image\nimg = Image.open(path)\nsmall = img.crop((0, 0, 40, 30))\n")
    finally:
        Image.open = real_open  # type: ignore[assignment]
    opened, crop = run.events
    assert opened["op"] == "io" and opened["output"] == "input:5"
    assert crop["inputs"] == ["input:5"] and crop["params"]["root"] == "input:5"
    assert run.problems == []
