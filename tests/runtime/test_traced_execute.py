"""Tracing and image capture through ``Sandbox.execute`` on every backend.

The tracer instruments each cell on the host; the kernel's recorder and image I/O layer report
events and artifacts; the host validates both, numbers them in its own sequence and admits an
artifact only after re-reading the file itself.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pixelbox.runtime import Sandbox

IO = {"enabled": True, "profile": "agentic-mme"}
OPEN = "import os\nfrom PIL import Image\nimg = Image.open(os.environ['ORIGINAL_IMAGE_PATH'])\n"


@pytest.fixture
def task_image(tmp_path: Path) -> Path:
    path = tmp_path / "image_0001.png"
    Image.new("RGB", (400, 300), (40, 90, 160)).save(path)
    return path


@pytest.fixture
def sandbox(backend: dict[str, Any], task_image: Path) -> Iterator[Sandbox]:
    with Sandbox(inputs=[task_image], io=IO, timeout=30, **backend) as sb:
        yield sb


def ops(events: list[dict[str, Any]]) -> list[str]:
    return [e["op"] for e in events if e["op"] != "io"]


def test_events_are_what_ran_numbered_by_execution(sandbox: Sandbox) -> None:
    first = sandbox.execute(
        OPEN + "if img.width > 10_000:\n    img = img.rotate(90)\nfor k in range(3):\n"
        "    img.crop((k, 0, 100 + k, 50))\n"
    )
    assert first.status == "ok", first.error
    assert ops(first.events) == ["crop", "crop", "crop"]
    assert [e["params"]["box_px"] for e in first.events if e["op"] == "crop"] == [
        [0, 0, 100, 50],
        [1, 0, 101, 50],
        [2, 0, 102, 50],
    ]
    second = sandbox.execute("small = img.resize((40, 30))\nsmall.transpose(Image.FLIP_LEFT_RIGHT)\n1/0\nimg.rotate(5)")
    assert second.status == "error" and second.error is not None and second.error.ename == "ZeroDivisionError"
    assert ops(second.events) == ["resize", "flip"]
    assert {e["exec"] for e in first.events} == {first.index}
    assert {e["exec"] for e in second.events} == {second.index}
    seqs = [e["seq"] for e in first.events + second.events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))


def test_helpers_from_earlier_cells_are_traced(sandbox: Sandbox) -> None:
    define = sandbox.execute(OPEN + "def zoom(im, box):\n    return im.crop(box).resize((200, 200))\n")
    assert define.status == "ok" and ops(define.events) == []
    call = sandbox.execute("z = zoom(img, (10, 20, 110, 120))")
    assert ops(call.events) == ["crop", "resize"]
    crop = next(e for e in call.events if e["op"] == "crop")
    assert crop["params"]["box_px"] == [10, 20, 110, 120] and crop["inputs"] == ["input:0"]


def test_tracebacks_quote_the_agents_code(sandbox: Sandbox) -> None:
    result = sandbox.execute(OPEN + "box = (0, 0, 50)\npiece = img.crop(box)\n")
    assert result.status == "error" and result.error is not None
    assert "piece = img.crop(box)" in result.error.traceback
    # no frame of ours (the checkout's own directory may be called pixelbox, so match the package's)
    assert "__pbx__" not in result.error.traceback
    assert not re.search(r"pixelbox/(kernel|tracer|runtime)/", result.error.traceback), result.error.traceback
    assert [e["status"] for e in result.events if e["op"] == "crop"] == ["error"]


def test_syntax_errors_and_reserved_names_run_nothing(sandbox: Sandbox) -> None:
    broken = sandbox.execute("x = 1\nimg.crop((0, 0, 5, 5)\n")
    assert broken.status == "error" and broken.error is not None and broken.error.ename == "SyntaxError"
    assert broken.events == []
    refused = sandbox.execute("__pbx__ = None\nprint('ran')")
    assert refused.status == "error" and refused.error is not None and refused.error.ename == "ReservedNameError"
    assert "__pbx" in refused.error.evalue and "ran" not in refused.stdout
    after = sandbox.execute(OPEN + "print(img.crop((0, 0, 8, 8)).size)")
    assert after.status == "ok" and after.stdout.strip() == "(8, 8)" and ops(after.events) == ["crop"]


def test_artifacts_are_verified_and_never_renumbered_after_a_restart(sandbox: Sandbox) -> None:
    save = OPEN + "img.crop((0, 0, {w}, 20)).save(os.environ['PROCESSED_IMAGE_SAVE_PATH'] + '/out.png')"
    first = sandbox.execute(save.format(w=30))
    sandbox.restart()
    second = sandbox.execute(save.format(w=60))
    names = [(a["index"], a["name"], a["width"]) for a in first.artifacts + second.artifacts]
    assert names == [(1, "transformed_image_1.png", 30), (2, "transformed_image_2.png", 60)]
    for artifact in first.artifacts + second.artifacts:
        data = Path(artifact["host_path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == artifact["sha256"]
    assert second.events[0]["seq"] > first.events[-1]["seq"]


def test_trace_can_be_switched_off(backend: dict[str, Any], task_image: Path) -> None:
    with Sandbox(inputs=[task_image], io=IO, trace=False, **backend) as sb:
        result = sb.execute(OPEN + "img.crop((0, 0, 5, 5)).save('a.png')")
        assert result.status == "ok" and result.events == []
        assert [a["name"] for a in result.artifacts] == ["transformed_image_1.png"]
        assert sb.info.to_dict()["options"]["trace"] is False


def test_hostile_artifacts_leak_nothing_and_the_sandbox_keeps_working(sandbox: Sandbox) -> None:
    bomb = sandbox.execute("from PIL import Image\nImage.new('1', (10_000, 5_000)).save('bomb.png')")
    assert bomb.status == "error" and bomb.error is not None
    assert "pixel" in bomb.error.evalue and bomb.artifacts == []
    text = sandbox.execute("open('x.png', 'w').write('not an image')\nfrom PIL import Image\nImage.open('x.png')")
    assert text.status == "error" and text.error is not None and "x.png" in text.error.evalue
    assert text.artifacts == []
    fine = sandbox.execute(OPEN + "img.save('ok.png')")
    assert fine.status == "ok" and len(fine.artifacts) == 1


def test_a_symlink_swapped_in_for_an_artifact_is_refused(docker_backend: dict[str, Any], task_image: Path) -> None:
    # Containers let the code make links (the local backend's policy refuses it outright); the
    # host must still never read through one.
    with Sandbox(inputs=[task_image], io=IO, **docker_backend) as sb:
        code = OPEN + (
            "img.save('a.png')\nname = sorted(f for f in os.listdir('.') if f.startswith('transformed'))[-1]\n"
            "os.remove(name)\nos.symlink('/etc/hostname', name)\n"
        )
        result = sb.execute(code)
        assert result.status == "ok", result.error
        assert result.artifacts == []
        assert any("artifact rejected" in n and "symlink" in n for n in result.notices), result.notices
        assert sb.execute("print(1)").stdout.strip() == "1"


def test_code_run_through_magics_is_flagged_never_silently_lost(backend: dict[str, Any], task_image: Path) -> None:
    with Sandbox(inputs=[task_image], io=IO, policy=False, **backend) as sb:
        sb.execute(OPEN)
        modulo = sb.execute('msg = ("%d x %d"\n       % img.size)\npart = img.crop((0, 0, 5, 5))\nprint(msg)')
        assert modulo.status == "ok" and modulo.stdout == "400 x 300\n"
        assert ops(modulo.events) == ["crop"] and not modulo.tampered
        magic = sb.execute("%time part = img.crop((0, 0, 9, 9))\nother = img.rotate(3)")
        assert magic.status == "ok", magic.error
        assert ops(magic.events) == ["rotate"] and magic.tampered
        assert any("trace incomplete" in n and "line(s) 1" in n for n in magic.notices), magic.notices
        assert sb.execute("print(part.size)").stdout == "(9, 9)\n"
