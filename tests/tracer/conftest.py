"""Shared fixtures: one real IPython shell with the recorder installed, and a test image."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from IPython.core.interactiveshell import ExecutionResult, InteractiveShell
from IPython.utils.capture import capture_output
from PIL import Image

import pixelbox.kernel.recorder as recorder_pkg
from pixelbox.tracer import instrument

CORPUS = Path(__file__).parent / "corpus"


def corpus_files() -> list[Path]:
    """Corpus cells: ``*.py``, plus ``*.cell`` for sources that must not parse."""
    return sorted([*CORPUS.glob("*.py"), *CORPUS.glob("*.cell")])


IMAGE_SIZE = (1000, 800)


def make_test_image(path: Path) -> Path:
    """A deterministic RGB image whose gray levels cover the whole 0-255 range."""
    w, h = IMAGE_SIZE
    x = np.linspace(0, 255, w)[None, :].repeat(h, 0)
    y = np.linspace(0, 255, h)[:, None].repeat(w, 1)
    rgb = np.stack([x, y, (x + y) / 2], axis=-1).astype(np.uint8)
    rgb[100:300, 600:900] = (250, 30, 30)
    Image.fromarray(rgb).save(path)
    return path


@dataclass
class CellRun:
    result: ExecutionResult
    events: list[dict[str, Any]]
    problems: list[str]
    stdout: str


@dataclass
class Kernelish:
    """A real IPython shell with the recorder installed, and what it published."""

    shell: InteractiveShell
    hooks: recorder_pkg.ShellHooks
    published: list[tuple[str, Any]] = field(default_factory=list)

    def fresh_namespace(self) -> None:
        self.shell.reset(new_session=False)
        self.hooks.bind()

    def run(self, source: str, traced: bool = True) -> CellRun:
        code = instrument(source).code if traced else source
        if traced:
            self.hooks.set_original(source)
        with capture_output(display=False) as captured:
            result = self.shell.run_cell(code)
        events = self.hooks.last_batch if traced else []
        return CellRun(result, list(events), list(self.hooks.last_problems), captured.stdout)


@pytest.fixture(scope="session")
def kernel() -> Kernelish:
    shell = InteractiveShell.instance()
    shell.colors = "nocolor"
    published: list[tuple[str, Any]] = []
    hooks = recorder_pkg.install(shell, {}, publish=lambda kind, payload: published.append((kind, payload)))
    return Kernelish(shell, hooks, published)


@pytest.fixture(scope="session")
def test_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = make_test_image(tmp_path_factory.mktemp("inputs") / "image_0001.png")
    recorder_pkg.register_root(str(path), 0)
    return path


@pytest.fixture
def sandbox_env(kernel: Kernelish, test_image: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Env vars and working directory as a task sees them; a fresh user namespace."""
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("ORIGINAL_IMAGE_PATH", str(test_image))
    monkeypatch.setenv("PROCESSED_IMAGE_SAVE_PATH", str(out))
    monkeypatch.chdir(tmp_path)
    kernel.fresh_namespace()
    yield out
    os.environ.pop("PBX_UNUSED", None)


def split_cells(source: str) -> list[str]:
    """Cells of a corpus file, separated by ``# %%`` lines."""
    cells: list[str] = []
    current: list[str] = []
    for line in source.splitlines(keepends=True):
        if line.strip() == "# %%":
            cells.append("".join(current))
            current = []
        else:
            current.append(line)
    cells.append("".join(current))
    return cells
