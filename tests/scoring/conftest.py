"""Fixtures for scoring tests: the harness's local OpenAI-compatible server, answering as a judge."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pixelbox.harness.scoring.judges import ChatEndpoint
from tests.harness.servers import ChatCompletionsServer
from tests.scoring.judge_replies import API_KEY, judge_server


@pytest.fixture
def server() -> Iterator[ChatCompletionsServer]:
    with judge_server() as running:
        yield running


@pytest.fixture
def endpoint(server: ChatCompletionsServer) -> ChatEndpoint:
    return ChatEndpoint("judge-model", base_url=server.base_url, api_key=API_KEY)
