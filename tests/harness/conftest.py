"""Fixtures starting the local provider servers (one per test, so recorded requests are the test's own), and
the demo's output (one ``pixelbox demo`` per session, read by the demo, report and comparison tests)."""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pixelbox.cli import main
from tests.harness.servers import ImageServer, ImgbbServer, JinaServer, SerperServer


@pytest.fixture
def serper() -> Iterator[SerperServer]:
    with SerperServer() as server:
        yield server


@pytest.fixture
def jina() -> Iterator[JinaServer]:
    pages = {
        "https://example.org/long": ("A long page", "word " * 5000),
        "https://example.org/short": ("A short page", "The tower is 324 metres tall."),
    }
    with JinaServer(pages) as server:
        yield server


@pytest.fixture
def imgbb() -> Iterator[ImgbbServer]:
    with ImgbbServer() as server:
        yield server


@pytest.fixture
def images() -> Iterator[ImageServer]:
    with ImageServer() as server:
        yield server


@dataclass(frozen=True)
class DemoOutput:
    """One ``pixelbox demo`` run on the local backend, shared by the tests that read its output."""

    out: Path
    code: int
    printed: str


@pytest.fixture(scope="session")
def demo_output(tmp_path_factory: pytest.TempPathFactory) -> DemoOutput:
    """The demo run once per session (it needs tesseract for its OCR judge; CI has it)."""
    if shutil.which("tesseract") is None:
        pytest.skip("tesseract-ocr is not installed")
    out = tmp_path_factory.mktemp("demo") / "demo"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["demo", "--backend", "local", "--out", str(out), "--quiet"])
    return DemoOutput(out, code, printed.getvalue())
