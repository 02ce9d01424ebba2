"""Fixtures starting the local provider servers (one per test, so recorded requests are the test's own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
