"""What the agent sees of an error or warning shows its own code, never the instrumentation."""

from __future__ import annotations

import traceback
from pathlib import Path

from tests.tracer.conftest import Kernelish

FAILING = """from PIL import Image
img = Image.new("RGB", (100, 80))
def zoom(im, box):
    return im.crop(box).resize((10, 10), "bogus")
out = img.rotate(45)
z = zoom(out, (0, 0, 50, 50))
"""


def test_traceback_text_shows_only_agent_lines(kernel: Kernelish, sandbox_env: Path) -> None:
    run = kernel.run(FAILING)
    assert type(run.result.error_in_exec).__name__ == "ValueError"
    shown = run.stdout
    assert 'return im.crop(box).resize((10, 10), "bogus")' in shown
    assert "z = zoom(out, (0, 0, 50, 50))" in shown
    assert "__pbx__" not in shown and "recorder" not in shown
    formatted = "".join(traceback.format_exception(run.result.error_in_exec))
    assert "pixelbox/kernel/recorder" not in formatted and "__pbx__" not in formatted


def test_the_failing_op_is_an_error_event_and_later_ops_are_absent(kernel: Kernelish, sandbox_env: Path) -> None:
    run = kernel.run(FAILING)
    assert [(e["op"], e["status"]) for e in run.events] == [("rotate", "ok"), ("crop", "ok"), ("resize", "error")]
    assert run.events[-1]["error"]["type"] == "ValueError"
    assert run.events[-1]["output"] is None


def test_warnings_quote_the_original_line(kernel: Kernelish, sandbox_env: Path) -> None:
    source = (
        "import linecache, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    warnings.warn('look')\n"
        "print(linecache.getline(caught[0].filename, caught[0].lineno).strip())\n"
    )
    run = kernel.run(source)
    assert run.stdout.strip() == "warnings.warn('look')"


def test_error_raised_directly_in_cell_is_not_affected(kernel: Kernelish, sandbox_env: Path) -> None:
    run = kernel.run("x = 1\nraise KeyError('missing ' + str(x))\n")
    assert isinstance(run.result.error_in_exec, KeyError)
    assert "raise KeyError('missing ' + str(x))" in run.stdout
