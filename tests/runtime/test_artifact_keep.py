"""``keep``: the copy of a verified artifact that outlives its sandbox (``SandboxOptions.artifacts_dir``).

The name comes from the kernel, so it must never place the copy outside the directory, and an
existing file is never overwritten.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pixelbox.runtime.artifacts import keep


def test_copies_never_overwrite(tmp_path: Path) -> None:
    first = keep(b"one", "zoom.png", tmp_path)
    second = keep(b"two", "zoom.png", tmp_path)
    assert (first.name, second.name) == ("zoom.png", "zoom-1.png")
    assert (first.read_bytes(), second.read_bytes()) == (b"one", b"two")


@pytest.mark.parametrize("name", ["..", ".", "", "a\x00b.png", "x" * 300, "../../escape.png", "/etc/passwd"])
def test_kernel_made_names_stay_inside(tmp_path: Path, name: str) -> None:
    kept = tmp_path / "kept"
    path = keep(b"data", name, kept)
    assert path.parent == kept and path.read_bytes() == b"data"


def test_a_link_at_the_name_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    target.write_bytes(b"host file")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "zoom.png").symlink_to(target)
    path = keep(b"image", "zoom.png", kept)
    assert path.name == "zoom-1.png" and target.read_bytes() == b"host file"
