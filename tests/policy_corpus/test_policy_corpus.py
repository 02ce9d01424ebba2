"""Ordinary model code runs under the local backend's policy with zero rejections.

The corpus (``*.cells`` beside this file, one file per family of models, cells separated by
``# %% name`` lines) holds what agents of several model families write when they think with
images: classes with private attributes, dataclasses, ``cv2.__version__``, ``globals()``,
f-strings, comprehensions, generators, lambdas, typing, try/except, Matplotlib figures and the
usual NumPy / OpenCV / PIL / SciPy / scikit-image work. Every cell must run ``ok`` in a real local
sandbox with the policy on (the default there): a cell refused by the policy, or failing for any
other reason, is listed with its error. ``tests/test_policy.py`` and ``tests/hardening`` keep the
escapes refused.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pixelbox.kernel.policy.transform import check_source
from pixelbox.runtime import Sandbox

CORPUS = Path(__file__).parent
_SEPARATOR = re.compile(r"^# %% (\S+)\s*$", re.MULTILINE)
MIN_CELLS = 80
MIN_FAMILIES = 5


@dataclass(frozen=True)
class Cell:
    """One corpus cell: its family (file stem), name and source."""

    family: str
    name: str
    code: str

    @property
    def label(self) -> str:
        return f"{self.family}/{self.name}"


def load_cells() -> list[Cell]:
    """Every cell of every ``*.cells`` file, in file and then source order."""
    cells = []
    for path in sorted(CORPUS.glob("*.cells")):
        parts = _SEPARATOR.split(path.read_text())
        for name, code in zip(parts[1::2], parts[2::2], strict=True):
            cells.append(Cell(path.stem, name, code.strip() + "\n"))
    return cells


def photo_png() -> bytes:
    """The 320x240 picture every cell opens as ``photo.png``: shapes in red, green, white and black."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (320, 240), (40, 60, 140))
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, 30, 140, 110), fill=(220, 30, 30))
    draw.ellipse((170, 90, 290, 210), fill=(30, 200, 60))
    draw.rectangle((200, 20, 300, 60), fill=(250, 250, 250))
    draw.line((0, 239, 319, 120), fill=(0, 0, 0), width=5)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_corpus_is_large_and_varied() -> None:
    cells = load_cells()
    assert len(cells) >= MIN_CELLS, f"only {len(cells)} cells"
    assert len({c.family for c in cells}) >= MIN_FAMILIES
    labels = [c.label for c in cells]
    assert len(labels) == len(set(labels)), "cell names repeat within a family"


def test_no_cell_is_rejected_before_it_runs() -> None:
    """The compile-time half alone, in-process: every cell passes the AST check."""
    refused = []
    for cell in load_cells():
        try:
            check_source(cell.code)
        except Exception as exc:
            refused.append(f"{cell.label}: {exc}")
    assert not refused, "\n".join(refused)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """One local sandbox, policy on, image capture on, with photo.png in its workspace."""
    with Sandbox(backend="local", io={"enabled": True, "profile": "generic"}, timeout=120) as sb:
        assert sb.options.policy_enabled("local"), "the local backend runs the policy by default"
        sb.upload(photo_png(), "photo.png")
        yield sb


def test_every_cell_runs_under_the_policy(sandbox: Sandbox) -> None:
    failures = []
    for cell in load_cells():
        result = sandbox.execute(cell.code)
        if result.status != "ok":
            error = result.error
            detail = f"{error.ename}: {error.evalue}" if error else f"{result.status} {result.crash_reason or ''}"
            failures.append(f"{cell.label}: {detail}")
    assert not failures, f"{len(failures)} cells failed:\n" + "\n".join(failures)
