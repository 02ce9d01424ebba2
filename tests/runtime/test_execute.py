"""Executing cells: state, streams, rich outputs and errors on every backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pixelbox.runtime import Artifact, Execution, Sandbox


def test_state_persists_and_streams_come_back(backend: dict[str, Any]) -> None:
    with Sandbox(policy=False, **backend) as sb:
        first = sb.execute("import sys\nx = 20\nprint('to out')\nprint('to err', file=sys.stderr)")
        assert first.status == "ok", first
        assert first.stdout == "to out\n"
        assert first.stderr == "to err\n"
        second = sb.execute("x * 2 + 2")
        assert second.status == "ok"
        assert second.text == "42"
        assert second.outputs[0].type == "execute_result"
        assert (first.index, second.index) == (1, 2)
        assert not second.state_lost


def test_error_has_plain_traceback_and_state_survives(backend: dict[str, Any]) -> None:
    with Sandbox(**backend) as sb:
        sb.execute("def half(v):\n    return v / 0")
        result = sb.execute("y = 5\nhalf(y)")
        assert result.status == "error"
        assert result.error is not None
        assert result.error.ename == "ZeroDivisionError"
        assert "\x1b[" not in result.error.traceback
        assert "return v / 0" in result.error.traceback
        assert sb.execute("print(y)").stdout == "5\n"


DISPLAY_CELL = (
    "from PIL import Image\nfrom IPython.display import display\ndisplay(Image.new('RGB', (32, 16), (255, 0, 0)))"
)


def test_images_are_written_to_files_not_inlined(backend: dict[str, Any]) -> None:
    """With image capture off, a displayed image stays a rich output, written to a file."""
    code = DISPLAY_CELL
    with Sandbox(io={"enabled": False}, **backend) as sb:
        result = sb.execute(code)
        assert result.status == "ok", result.error
        pngs = [o.files["image/png"] for o in result.outputs if "image/png" in o.files]
        assert len(pngs) == 1
        with open(pngs[0], "rb") as handle:
            assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
        assert "image/png" not in result.outputs[0].data
        restored = Execution.from_dict(json.loads(result.to_json()))
        assert restored == result


def test_images_are_captured_by_default_and_kept_after_close(backend: dict[str, Any], tmp_path: Path) -> None:
    """Image capture is on by default (generic profile); ``artifacts_dir`` keeps copies past ``close()``."""
    kept = tmp_path / "kept"
    with Sandbox(artifacts_dir=kept, **backend) as sb:
        result = sb.execute(DISPLAY_CELL + "\nImage.new('L', (8, 4)).save('small.png')")
        assert result.status == "ok", result.error
        assert [(a.capture, a.width, a.height) for a in result.artifacts] == [("displayed", 32, 16), ("saved", 8, 4)]
        first = result.artifacts[0]
        assert isinstance(first, Artifact) and first["width"] == first.width == 32
        assert Path(first.host_path).parent == kept
        raw = json.loads(result.to_json())
        assert raw["artifacts"][0]["name"] == first.name and raw["artifacts"][0]["exec_index"] == result.index
        assert Execution.from_dict(raw) == result
    assert sorted(p.name for p in kept.iterdir()) == sorted(a.name for a in result.artifacts)
    assert first.read_bytes().startswith(b"\x89PNG")


def test_output_caps_keep_head_and_tail_with_marker(backend: dict[str, Any]) -> None:
    with Sandbox(stdout_cap=1000, **backend) as sb:
        result = sb.execute("for i in range(20000):\n    print(f'line {i}')")
        assert result.status == "ok"
        assert result.stdout.startswith("line 0\n")
        assert result.stdout.rstrip().endswith("line 19999")
        assert "characters of stdout truncated" in result.stdout
        assert result.stdout_truncated > 100_000
        assert len(result.stdout) < 1200


def test_input_is_not_available_and_fails_cleanly(backend: dict[str, Any]) -> None:
    with Sandbox(**backend) as sb:
        result = sb.execute("input('name? ')")
        assert result.status == "error"
        assert result.error is not None
        assert result.error.ename in ("StdinNotImplementedError", "PolicyViolation"), result.error
        assert sb.execute("1 + 1").text == "2" and sb.execute("1 + 1").text() == "2"


def test_syntax_error_is_an_error_result(backend: dict[str, Any]) -> None:
    with Sandbox(**backend) as sb:
        result = sb.execute("def broken(:\n    pass")
        assert result.status == "error"
        assert result.error is not None and result.error.ename == "SyntaxError"


def test_rich_output_flood_is_capped(backend: dict[str, Any]) -> None:
    with Sandbox(max_outputs=10, **backend) as sb:
        result = sb.execute("from IPython.display import display\nfor i in range(300):\n    display(i)")
        assert result.status == "ok"
        assert len(result.outputs) == 10
        assert result.outputs_dropped == 290
