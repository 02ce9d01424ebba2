"""``pixelbox trace``: the auditors' command, run as a real subprocess against real sandboxes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from PIL import Image

from pixelbox.contract.wire import json_safe
from tests.conftest import require_backend

CELL_1 = """\
import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
if img.width > 5000:
    img = img.rotate(90)
for angle in (90, 180):
    turned = img.rotate(angle, expand=True)
img.crop((10, 10, 60, 40)).save("/mnt/data/zoom.png")
print(img.size)
"""
CELL_2 = """\
import numpy as np
part = np.array(img)[20:80, 30:130]
undefined_name
"""


def trace(tmp_path: Path, *extra: str, cells: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    (tmp_path / "one.py").write_text(CELL_1)
    (tmp_path / "two.py").write_text(CELL_2)
    Image.new("RGB", (320, 200), (10, 20, 30)).save(tmp_path / "in.png")
    command = [
        sys.executable,
        "-m",
        "pixelbox.cli",
        "trace",
        str(tmp_path / "one.py"),
        str(tmp_path / "two.py"),
        *cells,
        "--image",
        str(tmp_path / "in.png"),
        *extra,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def visual(cell: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (e["op"], e["params"].get("box_px", e["params"].get("angle")))
        for e in cell["events"]
        if e["op"] not in ("io", "convert")
    ]


def test_json_output_is_one_stable_object_per_cell(tmp_path: Path, backend: dict[str, Any]) -> None:
    flags = ["--backend", backend["backend"]] + (["--runtime", backend["runtime"]] if "runtime" in backend else [])
    done = trace(tmp_path, "--json", *flags)
    assert done.returncode == 1, done.stderr  # the second cell fails
    cells = [json.loads(line) for line in done.stdout.splitlines()]
    assert [c["status"] for c in cells] == ["ok", "error"]
    assert all({"cell", "status", "stdout", "error", "events", "artifacts"} <= set(c) for c in cells)
    assert cells[0]["stdout"] == "(320, 200)\n"
    assert visual(cells[0]) == [("rotate", 90.0), ("rotate", 180.0), ("crop", [10, 10, 60, 40])]
    assert [(a["index"], a["name"], a["width"], a["height"]) for a in cells[0]["artifacts"]] == [
        (1, "transformed_image_1.png", 50, 30)
    ]
    assert visual(cells[1]) == [("crop", [30, 20, 130, 80])]
    assert cells[1]["error"]["ename"] == "NameError" and "undefined_name" in cells[1]["error"]["traceback"]


def test_human_output_and_missing_files(tmp_path: Path) -> None:
    done = trace(tmp_path, "--backend", "local")
    assert "== " in done.stdout and "crop" in done.stdout and "transformed_image_1.png 50x30" in done.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "pixelbox.cli", "trace", str(tmp_path / "nope.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and "nope.py" in missing.stderr


def run_trace_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pixelbox.cli", "trace", *args], capture_output=True, text=True, timeout=60
    )


def test_unreadable_cells_and_directories_are_clear_errors(tmp_path: Path) -> None:
    """Bad input exits 2 with one line per problem, before any sandbox starts, never a traceback."""
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"x = 1\nprint('caf\xe9')\n")
    folder = tmp_path / "cells"
    folder.mkdir()
    image_dir = tmp_path / "images"
    image_dir.mkdir()
    done = run_trace_cli(str(latin), str(folder), "--image", str(image_dir))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    lines = done.stderr.splitlines()
    assert f"pixelbox trace: {folder} is a directory, not a file" in lines
    assert f"pixelbox trace: {image_dir} is a directory, not a file" in lines
    assert any(str(latin) in line and "not utf-8 text (byte 0xe9 on line 2)" in line for line in lines), lines
    assert not any("no such file" in line for line in lines)


def test_declared_encodings_and_bom_are_honoured(tmp_path: Path) -> None:
    """A cell that declares its encoding (or starts with a UTF-8 BOM) runs with its text intact."""
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\nprint('caf\xe9')\n")
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfprint('bom ok')\n")
    done = run_trace_cli(str(latin), str(bom), "--backend", "local", "--json")
    assert done.returncode == 0, done.stderr
    cells = [json.loads(line) for line in done.stdout.splitlines()]
    assert [c["stdout"] for c in cells] == ["caf\u00e9\n", "bom ok\n"]


def test_audit_shows_what_was_written_beside_what_ran(tmp_path: Path) -> None:
    """``--audit``: the dead branch is written but not run; a bad third cell has an unavailable audit."""
    (tmp_path / "three.py").write_text("crop = img.crop((0, 0, 5, 5)\n")
    done = trace(tmp_path, "--backend", "local", "--json", "--audit", cells=(str(tmp_path / "three.py"),))
    cells = [json.loads(line) for line in done.stdout.splitlines()]
    first, second, third = (c["audit"] for c in cells)
    assert [(w["op"], w["line"], w["reason"]) for w in first["written_not_run"]] == [
        ("rotate", 5, "branch at line 4 not taken")
    ]
    assert first["run_not_written"] == [] and second["written_not_run"] == []
    assert {w["op"] for w in first["written"]} >= {"io", "rotate", "crop"}
    assert not third["available"] and "not valid Python" in third["reason"]
    human = trace(tmp_path, "--backend", "local", "--audit")
    assert "written, not run: rotate" in human.stdout and "branch at line 4 not taken" in human.stdout


FORGED_INFINITY = """
import json
k = get_ipython().kernel
s = k.session
parent = k.get_parent()
event = {"v": 1, "seq": 0, "exec": 1, "op": "io", "status": "ok", "api": "forged", "src": None, "inputs": [],
         "output": "img:9", "params": {"x": float("inf"), "y": float("nan")}, "artifact": None, "error": None,
         "t_ms": 1.0}
content = json.dumps({"kind": "event", "records": [event]}).encode()
body = [s.pack(s.msg_header("pixelbox_record")), s.pack(parent["header"]), b"{}", content]
k.iopub_socket.send_multipart([b"<IDS|MSG>", s.sign(body), *body])
print("sent")
"""


def strict(line: str) -> dict[str, Any]:
    """Parse one line as strict JSON: NaN and Infinity are not JSON."""

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return dict(json.loads(line, parse_constant=refuse))


def test_json_output_is_strict_json_even_with_forged_non_finite_numbers(tmp_path: Path) -> None:
    """A kernel that signs its own message with ``Infinity`` and ``NaN`` in a record (Python's JSON
    writes them, the host's reader accepts them) cannot make ``--json`` print text that is not JSON."""
    runc = require_backend("runc")  # the policy of the local backend refuses the kernel object
    (tmp_path / "forge.py").write_text(FORGED_INFINITY)
    done = trace(
        tmp_path,
        "--json",
        "--backend",
        runc["backend"],
        "--runtime",
        runc["runtime"],
        cells=(str(tmp_path / "forge.py"),),
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 3, done.stderr
    forged = strict(lines[2])
    assert forged["stdout"] == "sent\n", forged
    assert json_safe({"a": [float("inf"), {"b": float("-inf"), "c": float("nan")}], "d": 1.5}) == {
        "a": [None, {"b": None, "c": None}],
        "d": 1.5,
    }
