"""A thin client for any OpenAI-compatible chat endpoint (used by the VLM and search judges)."""

from __future__ import annotations

import os
from typing import Any, cast


class JudgeEndpointError(RuntimeError):
    """The judge endpoint could not be reached or answered nonsense; the message says what to check."""


class ChatEndpoint:
    """``model`` at ``base_url`` (default: ``OPENAI_BASE_URL`` or the OpenAI API)."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, timeout: float = 60.0):
        from openai import OpenAI

        if not model:
            raise JudgeEndpointError("a judge model name is required, e.g. --judge openai:gpt-4o-mini")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if key is None and base_url is None and not os.environ.get("OPENAI_BASE_URL"):
            raise JudgeEndpointError(
                f"judge openai:{model} needs an API key and none is set; export OPENAI_API_KEY, or point the judge "
                "at an endpoint that needs none: --judge openai:MODEL@http://HOST:PORT/v1 (or set OPENAI_BASE_URL)"
            )
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self._client = OpenAI(base_url=self.base_url, api_key=key or "unused", timeout=timeout, max_retries=2)

    def complete(
        self,
        messages: list[dict[str, Any]],
        max_tokens: int | None = 200,
        temperature: float | None = 0.0,
        response_format: dict[str, Any] | None = None,
    ) -> str:
        """The first choice's text (at temperature 0 unless a suite's official judge samples otherwise).

        ``None`` leaves a setting out of the request, as official judges that call reasoning models do
        (o-series models refuse ``temperature`` 0 and ``max_tokens``); ``response_format`` is sent as given.
        """
        from openai import OpenAIError

        settings: dict[str, Any] = {}
        if temperature is not None:
            settings["temperature"] = temperature
        if max_tokens is not None:
            settings["max_tokens"] = max_tokens
        if response_format is not None:
            settings["response_format"] = response_format
        try:
            response = self._client.chat.completions.create(model=self.model, messages=cast(Any, messages), **settings)
        except OpenAIError as exc:
            raise JudgeEndpointError(f"judge call to {self.base_url} ({self.model}) failed: {exc}") from exc
        if not response.choices:
            raise JudgeEndpointError(f"judge endpoint {self.base_url} returned no choices")
        return (response.choices[0].message.content or "").strip()
