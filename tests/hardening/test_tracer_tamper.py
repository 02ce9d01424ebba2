"""Tracer tampering through a real Sandbox with tracing on: the trace feeds rewards, so cells
that hide, fake or bypass operations must be refused (policy), flagged (``tampered`` and a
``trace integrity`` notice) or still recorded. See docs/tracer-threat-model.md.
"""

from __future__ import annotations

from tests.hardening.support import Target, assert_contained, message

RECORDER = "globals()['__' + 'pbx__']"


def _ops(result: object) -> list[str]:
    return [str(e.get("op")) for e in getattr(result, "events", [])]


def test_deleting_the_recorder_is_flagged_and_undone(target: Target) -> None:
    result = target.run(f"del {RECORDER}\nlen('abc')")
    if target.policy:
        assert_contained(result, r"denied-builtin|PolicyViolation")
    else:
        assert result.tampered, message(result)
        assert any("deleted or rebound" in n for n in result.notices), message(result)
    after = target.run("from PIL import Image\nx = Image.new('RGB', (20, 20)).rotate(90)")
    assert after.status == "ok" and _ops(after) == ["rotate"] and not after.tampered, message(after)


def test_patching_pil_crop_is_flagged_in_every_later_cell(target: Target) -> None:
    result = target.run(
        "from PIL import Image\nImage.Image.crop = lambda self, box=None: self\n"
        "x = Image.new('RGB', (20, 20)).crop((0, 0, 5, 5))"
    )
    if target.policy:
        assert_contained(result, r"no-class-write")
    else:
        assert result.tampered and any("crop was replaced" in n for n in result.notices), message(result)
    after = target.run("from PIL import Image\ny = Image.new('RGB', (20, 20)).crop((0, 0, 5, 5))\nprint(y.size)")
    if target.policy:
        assert after.stdout == "(5, 5)\n" and _ops(after) == ["crop"], message(after)
    else:  # the patch stays, so every later cell is flagged: the trace is never silently wrong
        assert after.stdout == "(20, 20)\n" and after.tampered, message(after)
        target.run("import importlib, PIL.Image\nimportlib.reload(PIL.Image)")
        fixed = target.run("from PIL import Image\nz = Image.new('RGB', (20, 20)).crop((0, 0, 5, 5))")
        assert _ops(fixed) == ["crop"] and not fixed.tampered, message(fixed)


def test_reloading_a_module_does_not_hide_ops(target: Target) -> None:
    result = target.run(
        "import importlib, PIL.Image, numpy as np\nimportlib.reload(PIL.Image)\n"
        "x = PIL.Image.new('RGB', (20, 20)).crop((0, 0, 5, 5)).rotate(90)\ny = np.asarray(x)"
    )
    if target.policy:
        assert_contained(result, r"denied-module")
    else:  # the reloaded module has a new Image class: instances of it are still images
        assert result.status == "ok" and _ops(result) == ["crop", "rotate", "convert"], message(result)
        assert not [n for n in result.notices if "failed to describe" in n], result.notices


def test_naming_the_recorder_in_source_is_refused_before_running(target: Target) -> None:
    target.run("untouched = 1")
    for code in ("__pbx__ = None\nuntouched = 2", "__pbx__.events.append({'op': 'crop'})\nuntouched = 2"):
        result = target.run(code)
        assert result.status == "error" and result.error is not None, message(result)
        assert "reserved" in message(result), message(result)
        assert _ops(result) == []
    assert target.run("print(untouched)").stdout == "1\n", "a refused cell must run nothing"


def test_dynamic_code_is_flagged_as_untraced(target: Target) -> None:
    result = target.run("from PIL import Image\nimg = Image.new('RGB', (20, 20))\nexec('y = img.rotate(90)')")
    if target.policy:
        assert_contained(result, r"denied-builtin")
    else:
        assert result.tampered and any("exec() is not traced" in n for n in result.notices), message(result)
