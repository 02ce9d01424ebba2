"""Ops called from C code (``operator.methodcaller``, ``functools.reduce``, ``itertools.starmap``),
axis swaps (``a.T``, ``a.transpose``, ``np.transpose``, PIL ``TRANSPOSE``) and crop boxes that
reach outside their image, run in the shared IPython shell like the corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pixelbox.kernel.recorder as recorder_pkg
from pixelbox.tracer.events import parse_events
from pixelbox.tracer.lineage import artifact_chain
from pixelbox.tracer.replay import verify
from tests.tracer.conftest import Kernelish
from tests.tracer.test_lineage import W, coordinate_image, covered_root_box

HEADER = "import functools, itertools, operator\nimport numpy as np\nfrom PIL import Image\n"


def run(kernel: Kernelish, body: str) -> list[dict[str, Any]]:
    """Run ``body`` after :data:`HEADER` (line numbers below count from the body's first line)."""
    result = kernel.run(HEADER + body)
    assert result.result.success, result.result.error_in_exec or result.result.error_before_exec
    assert result.problems == []
    offset = HEADER.count("\n")
    return [{**e, "line": e["src"]["line"] - offset} for e in result.events]


def summary(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (e["op"], e["line"], e["params"].get("box_px") or e["params"].get("angle") or e["params"].get("method"))
        for e in events
    ]


# -- operations called through operator / functools / itertools ----------------------------------


def test_methodcaller_is_recorded_as_the_bound_method(kernel: Kernelish, sandbox_env: Path) -> None:
    events = run(
        kernel,
        "img = Image.new('RGB', (40, 30))\n"
        "a = operator.methodcaller('crop', (0, 0, 10, 10))(img)\n"
        "b = operator.methodcaller('rotate', 90, expand=True)(img)\n"
        "zoom = operator.methodcaller('resize', (20, 15))\n"
        "c = [zoom(p) for p in (a, b)]\n"
        "d = list(map(operator.methodcaller('crop', (1, 1, 5, 5)), [img, a]))\n"
        "e = operator.methodcaller('getpixel', (0, 0))(img)\n",
    )
    assert summary(events) == [
        ("crop", 2, [0, 0, 10, 10]),
        ("rotate", 3, 90.0),
        ("resize", 5, None),
        ("resize", 5, None),
        ("crop", 6, [1, 1, 5, 5]),
        ("crop", 6, [1, 1, 5, 5]),
    ]
    assert events[0]["api"] == "PIL.Image.Image.crop" and events[1]["params"]["expand"] is True
    assert events[2]["params"]["size"] == [20, 15] and events[3]["inputs"] == [events[1]["output"]]
    assert events[5]["inputs"] == [events[0]["output"]]


def test_attrgetter_reduce_starmap_and_partial_of_methodcaller(kernel: Kernelish, sandbox_env: Path) -> None:
    events = run(
        kernel,
        "img = Image.new('RGB', (40, 30))\n"
        "a = operator.attrgetter('crop')(img)((1, 2, 21, 22))\n"
        "b = functools.reduce(Image.Image.crop, [(0, 0, 30, 20), (5, 5, 15, 15)], img)\n"
        "c = list(itertools.starmap(Image.Image.rotate, [(img, 90), (img, 180)]))\n"
        "turn = functools.partial(operator.methodcaller('transpose', Image.Transpose.FLIP_TOP_BOTTOM))\n"
        "d = turn(img)\n"
        "total = functools.reduce(lambda x, y: x + y, [1, 2, 3])\n",
    )
    assert summary(events) == [
        ("crop", 2, [1, 2, 21, 22]),
        ("crop", 3, [0, 0, 30, 20]),
        ("crop", 3, [5, 5, 15, 15]),
        ("rotate", 4, 90.0),
        ("rotate", 4, 180.0),
        ("flip", 6, None),
    ]
    assert events[2]["inputs"] == [events[1]["output"]]
    assert events[2]["params"]["bbox_2d_root"] == [125.0, 166.7, 375.0, 500.0]
    assert kernel.shell.user_ns["total"] == 6


def test_methodcaller_errors_and_misuse_behave_as_without_tracing(kernel: Kernelish, sandbox_env: Path) -> None:
    result = kernel.run(
        "import operator\nfrom PIL import Image\nimg = Image.new('RGB', (40, 30))\n"
        "try:\n    operator.methodcaller('crop', (0, 0, 10, 10))(img, 1)\nexcept TypeError as exc:\n"
        "    extra = str(exc)\n"
        "try:\n    operator.methodcaller('nope')(img)\nexcept AttributeError as exc:\n    missing = str(exc)\n"
        "operator.methodcaller('crop', (10, 10, 5, 5))(img)\n"
    )
    ns = kernel.shell.user_ns
    assert "expected 1 argument" in ns["extra"] and "nope" in ns["missing"]
    assert isinstance(result.result.error_in_exec, ValueError)
    (failed,) = result.events
    assert failed["op"] == "crop" and failed["status"] == "error" and failed["src"]["line"] == 12


# -- axis swaps ------------------------------------------------------------------------------------


def test_array_transposes_are_recorded_like_pil_transpose(kernel: Kernelish, sandbox_env: Path) -> None:
    events = run(
        kernel,
        "img = Image.new('RGB', (40, 30))\n"
        "a = np.asarray(img)\n"
        "t1 = a.transpose(1, 0, 2)\n"
        "t2 = np.transpose(a, (1, 0, 2))\n"
        "t3 = np.swapaxes(a, 0, 1)\n"
        "g = np.zeros((30, 40), np.uint8)\n"
        "t4 = Image.fromarray(g.T)\n"
        "t5 = img.transpose(Image.Transpose.TRANSPOSE)\n"
        "same = a.transpose(0, 1, 2)\n"
        "chw = a.transpose(2, 0, 1)\n",
    )
    transposes = [e for e in events if e["op"] == "other"]
    assert [(e["line"], e["api"], e["params"]) for e in transposes] == [
        (3, "numpy.ndarray.transpose", {"method": "transpose"}),
        (4, "numpy.transpose", {"method": "transpose"}),
        (5, "numpy.swapaxes", {"method": "transpose"}),
        (7, "numpy.ndarray.T", {"method": "transpose"}),
        (8, "PIL.Image.Image.transpose", {"method": "transpose"}),
    ]
    array_id = next(e["output"] for e in events if e["line"] == 2)
    assert [e["inputs"] for e in transposes[:3]] == [[array_id]] * 3
    fromarray = next(e for e in events if e["api"] == "PIL.Image.fromarray")
    assert fromarray["inputs"] == [transposes[3]["output"]]
    assert not [e for e in events if e["line"] in (9, 10)], "no-op and non-image reorders record nothing"


def test_a_transpose_is_recorded_on_its_own_line(kernel: Kernelish, sandbox_env: Path) -> None:
    events = run(
        kernel,
        "img = Image.new('RGB', (40, 30))\n"
        "g = np.asarray(img)[..., 0]\n"
        "t = g.T\n"
        "out = t[5:20, 3:25]\n"
        "m = np.eye(3).T\n"
        "chw = np.asarray(img).T\n",
    )
    transpose = next(e for e in events if e["op"] == "other")
    assert (transpose["line"], transpose["api"], transpose["params"]) == (3, "numpy.ndarray.T", {"method": "transpose"})
    crop = next(e for e in events if e["op"] == "crop")
    assert crop["line"] == 4 and crop["inputs"] == [transpose["output"]]
    assert not [e for e in events if e["line"] in (5, 6) and e["op"] == "other"], "only spatial swaps of images"


AXIS_CHAINS = {
    "pil_transpose": "a = root.transpose(Image.Transpose.TRANSPOSE)\nout = a.crop((30, 40, 130, 90))",
    "pil_transverse": "a = root.transpose(Image.Transpose.TRANSVERSE)\nout = a.crop((30, 40, 130, 90))",
    "ndarray_transpose": "a = np.asarray(root).transpose(1, 0, 2)\nout = a[40:90, 30:130]",
    "np_transpose_then_crop": "a = np.transpose(np.asarray(root)[10:250, 20:300], (1, 0, 2))\nout = a[5:55, 7:107]",
    "gray_dot_t": "g = np.asarray(root)[..., 0]\nout = g.T[40:90, 30:130]",
    "transpose_of_rot90": "a = np.rot90(np.asarray(root)).transpose(1, 0, 2)\nout = a[10:60, 100:220]",
}


@pytest.mark.parametrize("name", sorted(AXIS_CHAINS))
def test_boxes_compose_through_axis_swaps(name: str, kernel: Kernelish, sandbox_env: Path) -> None:
    root = coordinate_image()
    kernel.shell.user_ns["root"] = root
    recorder_pkg.register_root(root, 4)
    result = kernel.run("import numpy as np\nfrom PIL import Image\n" + AXIS_CHAINS[name])
    assert result.result.success, result.result.error_in_exec
    assert any(e["op"] == "other" and e["params"]["method"] in ("transpose", "transverse") for e in result.events)
    crop = [e for e in result.events if e["op"] == "crop"][-1]
    assert crop["params"]["root"] == "input:4" and "approximate" not in crop["params"]
    out = kernel.shell.user_ns["out"]
    pixels = np.dstack([out, out, np.zeros_like(out)]) if np.ndim(out) == 2 else out
    if name == "gray_dot_t":  # only the x channel survives: check the x extent alone
        xs = np.asarray(pixels)[..., 0].astype(int)
        assert crop["params"]["bbox_2d_root"][0::2] == pytest.approx(
            [xs.min() / W * 1000, (xs.max() + 1) / W * 1000], abs=0.11
        )
        return
    assert crop["params"]["bbox_2d_root"] == pytest.approx(covered_root_box(pixels), abs=0.11)


def test_axis_swaps_replay_consistently(kernel: Kernelish, sandbox_env: Path) -> None:
    root = coordinate_image()
    kernel.shell.user_ns["root"] = root
    recorder_pkg.register_root(root, 6)
    result = kernel.run(
        "from PIL import Image\nout = root.transpose(Image.Transpose.TRANSVERSE).crop((10, 20, 110, 220))\n"
    )
    recorder_pkg.current().link_artifact(kernel.shell.user_ns["out"], "artifact:axes")
    recorder_pkg.current().end()
    events = parse_events(recorder_pkg.current().events)
    chain = artifact_chain(events, "artifact:axes")
    assert [e.op for e in chain] == ["other", "crop", "io"]
    assert result.result.success
    verdict = verify(kernel.shell.user_ns["out"], root, chain)
    assert verdict.verdict == "consistent", verdict


# -- crop boxes outside the image ------------------------------------------------------------------


def test_boxes_outside_the_image_are_clamped_in_0_1000(kernel: Kernelish, sandbox_env: Path) -> None:
    root = coordinate_image()  # 400 x 300
    kernel.shell.user_ns["root"] = root
    recorder_pkg.register_root(root, 2)
    result = kernel.run(
        "wide = root.crop((-10, -30, 500, 150))\n"  # asks beyond three edges
        "inside = root.crop((0, 0, 400, 300))\n"  # exactly the image: not clamped
        "pad = wide.crop((0, 0, 60, 60))\n"  # inside `wide`, but its top-left is black padding
        "away = root.crop((450, 10, 480, 40))\n"  # entirely outside
    )
    assert result.result.success, result.result.error_in_exec
    wide, inside, pad, away = (e["params"] for e in result.events)
    assert wide["box_px"] == [-10, -30, 500, 150]
    assert wide["bbox_2d"] == wide["bbox_2d_root"] == [0.0, 0.0, 1000.0, 500.0]
    assert wide["clamped"] is True
    assert "clamped" not in inside and inside["bbox_2d_root"] == [0.0, 0.0, 1000.0, 1000.0]
    assert pad["box_px"] == [0, 0, 60, 60] and pad["bbox_2d"] == [0.0, 0.0, 117.6, 333.3]
    assert pad["bbox_2d_root"] == [0.0, 0.0, 125.0, 100.0] and pad["clamped"] is True
    assert away["bbox_2d"] == [1000.0, 33.3, 1000.0, 133.3] and away["clamped"] is True
