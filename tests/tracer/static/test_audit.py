"""Audits of real executions (a real IPython shell with the recorder): each difference and its reason."""

from __future__ import annotations

from pathlib import Path

from pixelbox.tracer.static import Audit, EpisodeNames, Unreadable, audit_cell, error_line, read_cell
from pixelbox.tracer.static.reader import advance
from tests.tracer.conftest import Kernelish

OPEN = "import os\nfrom PIL import Image, ImageOps as IO\nimg = Image.open(os.environ['ORIGINAL_IMAGE_PATH'])\n"


def audit_of(kernel: Kernelish, cells: list[str]) -> list[Audit]:
    names = EpisodeNames()
    audits = []
    for cell in cells:
        run = kernel.run(cell)
        raised = error_line(run.stdout) if run.result.error_in_exec else None
        audits.append(audit_cell(cell, run.events, names=names, raised_at=raised, notices=run.problems))
        names = advance(names, read_cell(cell, names), kernel.hooks.recorder.exec_index)
    return audits


def reasons(audit: Audit) -> list[tuple[str, int, str]]:
    return [(w["op"], w["line"], w["reason"]) for w in audit.written_not_run]


def hows(audit: Audit) -> list[tuple[str | None, int | None, str]]:
    return [(r["op"], r.get("line"), r["how"]) for r in audit.run_not_written]


def test_every_reason_a_written_operation_did_not_run(kernel: Kernelish, sandbox_env: Path) -> None:
    cell = (
        OPEN
        + "if img.width > 10**6:\n    img = img.rotate(90)\n"  # 4-5: branch
        + "for box in []:\n    img.crop(box)\n"  # 6-7: loop
        + "def unused(im):\n    return im.transpose(Image.FLIP_LEFT_RIGHT)\n"  # 8-9: function
        + "try:\n    img.crop((0, 0, 5, 5))\nexcept ValueError:\n    img = IO.mirror(img)\n"  # 10-13: handler
        + "img = img.convert('L')\nprint(missing)\nimg.save('never.png')\n"  # 14-16: exception
    )
    [audit] = audit_of(kernel, [OPEN, cell])[1:]
    assert audit.available
    assert reasons(audit) == [
        ("rotate", 5, "branch at line 4 not taken"),
        ("crop", 7, "loop at line 6 ran zero times"),
        ("flip", 9, "function unused (line 8) never called"),
        ("flip", 13, "exception handler at line 12 not entered"),
        ("io", 16, "exception at line 15"),
    ]
    assert audit.run_not_written == []


def test_every_way_an_operation_runs_without_being_written(kernel: Kernelish, sandbox_env: Path) -> None:
    helper = "def zoom(im):\n    return im.crop((0, 0, 50, 50))\n"
    cell = (
        "a = zoom(img)\n"
        "b = getattr(img, 'rotate')(90)\n"
        "spin = img.rotate\nc = spin(45)\n"
        "d = list(map(IO.mirror, [img]))\n"
        "e = eval('img.crop((0, 0, 9, 9))')\n"
    )
    audits = audit_of(kernel, [OPEN, helper, cell])
    assert [w["op"] for w in audits[1].written_not_run] == ["crop"], "the helper was only defined in its cell"
    got = hows(audits[2])
    assert got[0][:2] == ("crop", 2) and got[0][2].startswith("helper defined in cell") and got[0][2].endswith("(zoom)")
    assert got[1:] == [
        ("rotate", 2, "getattr"),
        ("rotate", 4, "alias"),
        ("flip", 5, "callback"),
        (None, 6, "eval/exec"),
    ]
    assert audits[2].written_not_run == [], "spin = img.rotate is not a call: nothing written and not run"


def test_names_from_earlier_cells_and_aliases_resolve(kernel: Kernelish, sandbox_env: Path) -> None:
    later = "m = IO.mirror(img)\nfrom PIL.ImageOps import *\nx = flip(img)\n"
    audits = audit_of(kernel, [OPEN, later])
    assert audits[1].written_not_run == [] and audits[1].run_not_written == []
    written = {(w["api"], w["op"]) for w in audits[1].written}
    assert {("PIL.ImageOps.mirror", "flip"), ("PIL.ImageOps.flip", "flip")} <= written


def test_literal_and_computed_parameters() -> None:
    reading = read_cell("from PIL import Image\nimg = Image.open(p)\nc = img.crop((0, 0, w, 10))\nr = img.rotate(90)\n")
    assert not isinstance(reading, type(None))
    ops = {o.op: o for o in reading.ops}  # type: ignore[union-attr]
    assert ops["rotate"].literal == {"0": 90} and ops["rotate"].computed == ()
    assert ops["crop"].literal == {} and ops["crop"].computed == ("0",), "a box with a variable is computed"
    assert ops["io"].computed == ("0",)


def test_unreadable_cells_give_an_unavailable_audit_not_a_failure(kernel: Kernelish, sandbox_env: Path) -> None:
    newer_syntax = "def f[T](x):\n    return x\n"  # libcst reads it; this Python cannot
    audit = audit_cell(newer_syntax, [])
    assert not audit.available and "Python cannot parse this cell although libcst can" in audit.reason
    broken = audit_cell("img.crop((0, 0, 1, 1)\n", [])
    assert not broken.available and "not valid Python" in broken.reason
    deep = audit_cell("x = a" + ".b" * 3000 + "\n", [])
    assert not deep.available and deep.reason


def test_literal_parameters_are_json_even_when_python_literals_are_not() -> None:
    """Sets, bytes, complex and non-finite numbers are kept as text: audits travel in strict JSON."""
    import json

    reading = read_cell("img.rotate(1e999)\nimg.crop({1, 2})\nimg.save(b'x.png')\nimg.resize((2, 3j))\n")
    assert not isinstance(reading, Unreadable)
    literals = [o.literal["0"] for o in reading.ops]
    assert literals == ["inf", "{1, 2}", "b'x.png'", [2, "3j"]]
    json.dumps([o.to_dict() for o in reading.ops], allow_nan=False)
    blob = read_cell(f"img.save({'x' * 1000!r})\n")
    assert not isinstance(blob, Unreadable) and blob.ops[0].computed == ("0",), "a data blob is not shown"


def test_an_error_shown_without_arrows_is_placed_by_its_cell_header() -> None:
    """A policy refusal of an import prints like a syntax error: ``Cell In[1], line 2`` and no ``--->``."""
    shown = "Traceback (most recent call last):\n\n  Cell In[1], line 2\n    import shutil\n\nPolicyViolation"
    assert error_line(shown) == 2
    assert error_line("  Cell In[3], line 9\n      8 x = 1\n----> 9 y()\n") == 9, "the arrow wins"


def test_a_modules_function_is_never_guessed_to_be_an_image_method() -> None:
    """``plt.show()`` and ``np.save`` are module functions the recorder does not record, not ``Image.show``
    or ``Image.save``; a name imported by an earlier cell counts too; a real image's ``save`` still does."""
    first = "import numpy as np\nimport matplotlib.pyplot as plt\nnp.save('a', [1])\nplt.show()\nimg.save('b.png')\n"
    reading = read_cell(first, EpisodeNames())
    assert not isinstance(reading, Unreadable)
    assert [(op.op, op.line) for op in reading.ops] == [("io", 5)]
    later = read_cell("plt.show()\nplt.imshow(im)\n", advance(EpisodeNames(), reading, 1))
    assert not isinstance(later, Unreadable)
    assert [(op.api, op.line) for op in later.ops] == [("matplotlib.pyplot.imshow", 2)]
