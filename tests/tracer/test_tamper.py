"""Code that hides operations from the recorder is caught: ops are still recorded or the
execution carries integrity problems (published as a ``trace_integrity`` notice)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from tests.tracer.conftest import Kernelish

NAME = '"__" + "pbx__"'


def test_replacing_a_library_op_is_reported(kernel: Kernelish, sandbox_env: Path) -> None:
    real = Image.Image.crop
    try:
        run = kernel.run(
            "from PIL import Image\n"
            "Image.Image.crop = lambda self, box=None: self\n"
            "x = Image.new('RGB', (20, 20)).crop((0, 0, 5, 5))\n"
        )
        assert [e["op"] for e in run.events] == []
        assert any("PIL.Image.Image.crop was replaced" in p for p in run.problems)
    finally:
        Image.Image.crop = real  # type: ignore[method-assign]


def test_patching_the_recorder_class_is_reported_and_undone(kernel: Kernelish, sandbox_env: Path) -> None:
    run = kernel.run(f"rec = globals()[{NAME}]\ntype(rec).c = lambda self, fn, line, col: fn\n")
    assert any("'c' was replaced" in p for p in run.problems)
    after = kernel.run("from PIL import Image\nx = Image.new('RGB', (20, 20)).rotate(90)\n")
    assert [e["op"] for e in after.events] == ["rotate"] and after.problems == []


def test_deleting_the_recorder_mid_cell_is_reported_and_rebound(kernel: Kernelish, sandbox_env: Path) -> None:
    run = kernel.run(f"del globals()[{NAME}]\nlen('abc')\n")
    assert isinstance(run.result.error_in_exec, NameError)
    assert any("deleted or rebound" in p for p in run.problems)
    after = kernel.run("from PIL import Image\nx = Image.new('RGB', (20, 20)).rotate(90)\n")
    assert [e["op"] for e in after.events] == ["rotate"]


def test_dynamic_code_is_reported_as_untraced(kernel: Kernelish, sandbox_env: Path) -> None:
    run = kernel.run("from PIL import Image\nimg = Image.new('RGB', (20, 20))\nexec('y = img.rotate(90)')\n")
    assert run.events == []
    assert any("exec() is not traced" in p for p in run.problems)


def test_integrity_notice_is_published(kernel: Kernelish, sandbox_env: Path) -> None:
    kernel.published.clear()
    kernel.run("eval('1 + 1')\n")
    notices = [payload for kind, payload in kernel.published if kind == "notice"]
    assert notices and notices[-1]["kind"] == "trace_integrity" and notices[-1]["problems"]


def test_events_are_published_as_one_batch_per_execution(kernel: Kernelish, sandbox_env: Path) -> None:
    kernel.published.clear()
    run = kernel.run(
        "from PIL import Image\na = Image.new('RGB', (20, 20))\nb = a.rotate(90)\nc = b.crop((0, 0, 4, 4))\n"
    )
    batches = [payload for kind, payload in kernel.published if kind == "event"]
    assert batches == [run.events]
    assert [e["seq"] for e in run.events] == sorted(e["seq"] for e in run.events)
    assert len({e["exec"] for e in run.events}) == 1


def test_nested_run_cell_keeps_one_batch(kernel: Kernelish, sandbox_env: Path) -> None:
    """Cell magics such as %%capture run a cell inside the cell; its events join the outer batch."""
    kernel.shell.user_ns["inner"] = lambda: kernel.shell.run_cell("y = 1")
    run = kernel.run("from PIL import Image\na = Image.new('RGB', (8, 8)).rotate(90)\ninner()\nb = a.rotate(90)\n")
    assert [e["op"] for e in run.events] == ["rotate", "rotate"]


def test_event_flood_is_capped_and_reported(kernel: Kernelish, sandbox_env: Path) -> None:
    recorder = kernel.hooks.recorder
    saved, recorder.max_events = recorder.max_events, 5
    try:
        run = kernel.run("import numpy as np\na = np.zeros((16, 16))\nparts = [a[i:i + 4, 0:4] for i in range(8)]\n")
    finally:
        recorder.max_events = saved
    assert len(run.events) == 5
    assert any("3 event(s) beyond the cap of 5" in p for p in run.problems)
