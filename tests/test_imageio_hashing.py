"""A capture's sha256 is taken while PIL writes it (PNG, JPEG) and is the file's digest; a file not
written front to back in one pass gets no digest from the writer (the capture then reads it back)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from imageio_shell import layer_shell, task_image

from pixelbox.kernel.imageio.hashing import FEED_BYTES, HashingFile

ONE = [("image_0001.png", task_image(64, 48, 0))]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_bytes_written_in_order_give_the_files_digest(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    out = HashingFile(str(path))
    for size in (8, FEED_BYTES * 2 + 3, 4, 100, FEED_BYTES - 1, FEED_BYTES):  # small ones gathered, big ones fed
        out.write(os.urandom(size))
    out.write(memoryview(b"tail"))
    out.close()
    assert out.sha256 == _sha256(path)


@pytest.mark.parametrize("tamper", ["seek_back", "truncate", "other_writer"])
def test_a_file_not_written_in_one_pass_gets_no_digest(tmp_path: Path, tamper: str) -> None:
    path = tmp_path / "out.bin"
    out = HashingFile(str(path))
    out.write(b"a" * 1000)
    if tamper == "seek_back":
        out.seek(10)
        out.write(b"b" * 10)
        out.seek(0, os.SEEK_END)
    elif tamper == "truncate":
        out.truncate(500)
    else:
        with open(path, "ab") as other:
            other.write(b"appended behind the writer's back")
    out.close()
    assert out.sha256 is None


@pytest.mark.parametrize("name", ["a.png", "b.jpg", "c.tiff", "d.bmp", "e.gif"])
def test_every_captured_format_announces_its_files_digest(tmp_path: Path, name: str) -> None:
    """PNG and JPEG are hashed as they are written, the rest read back: the digest is the file's either way."""
    with layer_shell(tmp_path, "generic", ONE) as harness:
        run = harness.run(f"from PIL import Image\nImage.new('RGB', (40, 30), 'teal').save({name!r})")
        assert run.error is None, run.error
        (record,) = run.artifacts
        assert record["sha256"] == _sha256(Path(record["path"]))


def test_a_shown_image_announces_its_files_digest(tmp_path: Path) -> None:
    with layer_shell(tmp_path, "generic", ONE) as harness:
        run = harness.run("from PIL import Image\nImage.new('RGBA', (16, 12), 'red').show()")
        assert run.error is None, run.error
        (record,) = run.artifacts
        assert record["capture"] == "shown" and record["sha256"] == _sha256(Path(record["path"]))
