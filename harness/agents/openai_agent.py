"""An agent backed by any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, SGLang, LiteLLM, Gemini).

Requests go through the official ``openai`` client with its own retries turned off: this module
retries itself (exponential backoff with jitter, honouring ``Retry-After``) so every attempt and
wait is recorded on the turn. Responses are read from the raw JSON body rather than the client's
typed models, so the differences between servers (no ``usage``, ``content: null`` beside tool
calls, content as a list of parts, arguments as an object) are tolerated in one place.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from pixelbox.harness.agents.base import AgentError, AgentTurn, Message, ToolCall, ToolSchema, Usage
from pixelbox.harness.agents.messages import content_text
from pixelbox.harness.agents.preflight import CHECK_TIMEOUT, check_endpoint
from pixelbox.harness.agents.retry import RetryPolicy, is_retryable_status, parse_retry_after

NO_KEY_NEEDED = "EMPTY"
"""Sent as the key to self-hosted servers (vLLM, SGLang) when none is configured; they ignore it."""


class ModelRequestError(AgentError):
    """The endpoint refused the request or kept failing; ``attempts`` and ``status`` say how."""

    def __init__(self, message: str, *, attempts: int, status: int | None, retries: Sequence[dict[str, Any]] = ()):
        super().__init__(message)
        self.attempts = attempts
        self.status = status
        self.retries = list(retries)


class _BadResponse(Exception):
    """A 200 response whose body is not a usable completion (treated as transient)."""


@dataclass(frozen=True)
class OpenAIConfig:
    """Where the model lives and how to sample from it.

    The key is ``api_key`` if given, else the environment variable named by ``api_key_env``.
    ``max_tokens`` is sent as ``max_completion_tokens`` when ``use_max_completion_tokens`` is set
    (OpenAI's reasoning models require it). ``extra_body`` is merged into the request JSON
    (e.g. vLLM's ``top_k`` or ``chat_template_kwargs``).
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = None
    max_tokens: int | None = None
    use_max_completion_tokens: bool = False
    extra_body: dict[str, Any] = field(default_factory=dict)
    tool_choice: str | None = None
    request_timeout: float = 300.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def resolve_key(self) -> str:
        """The API key to send; raises :class:`AgentError` when OpenAI itself is the target and none is set."""
        key = self.api_key or os.environ.get(self.api_key_env)
        if key:
            return key
        if self.base_url is None:
            raise AgentError(
                f"no API key for model {self.model!r}: set {self.api_key_env} or pass api_key "
                "(or set base_url to a server that needs none)"
            )
        return NO_KEY_NEEDED


class OpenAIAgent:
    """Produces turns from a chat-completions endpoint; see :class:`OpenAIConfig`.

    ``sleep`` and ``rng`` exist so callers can observe the waits (tests, dry runs).
    """

    def __init__(
        self,
        config: OpenAIConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._client = openai.OpenAI(
            api_key=config.resolve_key(),
            base_url=config.base_url,
            timeout=config.request_timeout,
            max_retries=0,
        )

    @property
    def model(self) -> str:
        """The model name sent with each request."""
        return self.config.model

    @property
    def endpoint(self) -> str:
        """The base URL requests go to (recorded with each episode)."""
        return str(self._client.base_url)

    def preflight(self) -> str:
        """Check once that the endpoint can serve the model (:mod:`.preflight`); raises ``EndpointUnusable``."""
        client = self._client.with_options(timeout=min(self.config.request_timeout, CHECK_TIMEOUT))
        field = "max_completion_tokens" if self.config.use_max_completion_tokens else "max_tokens"
        return check_endpoint(client, self.config.model, token_field=field, sleep=self._sleep)

    def next_turn(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> AgentTurn:
        """One assistant turn, retrying transient failures; raises :class:`ModelRequestError` when they persist."""
        request = self._request(messages, tools)
        retries: list[dict[str, Any]] = []
        policy = self.config.retry
        for attempt in range(1, policy.max_attempts + 1):
            started = time.monotonic()
            try:
                body = self._send(request)
                return parse_completion(body, time.monotonic() - started, attempt, tuple(retries))
            except (openai.APIStatusError, openai.APIConnectionError, _BadResponse) as exc:
                status, retry_after = _failure_facts(exc)
                if status is not None and not is_retryable_status(status):
                    raise self._refused(exc, status, attempt, retries) from exc
                wait = policy.delay(attempt, retry_after, self._rng) if attempt < policy.max_attempts else 0.0
                retries.append({"attempt": attempt, "status": status, "error": _describe(exc), "wait": wait})
                if attempt < policy.max_attempts:
                    self._sleep(wait)
        raise self._gave_up(retries)

    def _request(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> dict[str, Any]:
        cfg = self.config
        request: dict[str, Any] = {"model": cfg.model, "messages": [_encodable(m) for m in messages]}
        if tools:
            request["tools"] = list(tools)
            if cfg.tool_choice:
                request["tool_choice"] = cfg.tool_choice
        if cfg.temperature is not None:
            request["temperature"] = cfg.temperature
        if cfg.max_tokens is not None:
            request["max_completion_tokens" if cfg.use_max_completion_tokens else "max_tokens"] = cfg.max_tokens
        if cfg.extra_body:
            request["extra_body"] = dict(cfg.extra_body)
        return request

    def _send(self, request: dict[str, Any]) -> dict[str, Any]:
        response = self._client.chat.completions.with_raw_response.create(**request)
        try:
            body = json.loads(response.text)
        except json.JSONDecodeError as exc:
            raise _BadResponse(f"response body is not JSON: {response.text[:200]!r}") from exc
        if not isinstance(body, dict) or not body.get("choices"):
            raise _BadResponse(f"response has no choices: {json.dumps(body)[:300]}")
        return body

    def _where(self) -> str:
        return f"model {self.config.model!r} at {self._client.base_url}"

    def _refused(self, exc: Exception, status: int, attempts: int, retries: list[dict[str, Any]]) -> ModelRequestError:
        hint = " (check the API key)" if status in (401, 403) else " (check the model name and base_url)"
        hint = hint if status in (401, 403, 404) else ""
        message = f"{self._where()} refused the request with HTTP {status}: {_describe(exc)}{hint}"
        return ModelRequestError(message, attempts=attempts, status=status, retries=retries)

    def _gave_up(self, retries: list[dict[str, Any]]) -> ModelRequestError:
        last = retries[-1]
        message = (
            f"{self._where()} failed {len(retries)} times in a row; last error: {last['error']}. "
            "The endpoint may be down or overloaded; try later, or allow more attempts "
            "(pixelbox run --max-attempts N; RetryPolicy.max_attempts in code)."
        )
        return ModelRequestError(message, attempts=len(retries), status=last["status"], retries=retries)


def _encodable(value: Any) -> Any:
    """``value`` with lone surrogates replaced by U+FFFD, so it can be sent as UTF-8 JSON.

    A server may legally send ``"\\ud800"`` in a reply; echoed back in the history it would make
    every later request fail to encode. The trace keeps the text as it came.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        return value
    if isinstance(value, dict):
        return {key: _encodable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_encodable(item) for item in value]
    return value


def _failure_facts(exc: Exception) -> tuple[int | None, float | None]:
    """The HTTP status (None for connection errors and bad bodies) and the server's requested wait."""
    if not isinstance(exc, openai.APIStatusError):
        return None, None
    headers = exc.response.headers
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return exc.status_code, max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    return exc.status_code, parse_retry_after(headers.get("retry-after"))


def _describe(exc: Exception) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return f"connection error ({cause})" if cause else "connection error"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    return str(exc)


def parse_completion(
    body: dict[str, Any], latency: float, attempts: int = 1, retries: tuple[dict[str, Any], ...] = ()
) -> AgentTurn:
    """Turn a chat-completions response body into an :class:`AgentTurn`, tolerating server differences."""
    choice = body["choices"][0] if isinstance(body["choices"][0], dict) else {}
    message = choice.get("message") or {}
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return AgentTurn(
        text=content_text(message.get("content")),
        tool_calls=tuple(_tool_calls(message)),
        usage=Usage.from_response(body.get("usage")),
        raw=body,
        latency=latency,
        attempts=attempts,
        finish_reason=choice.get("finish_reason"),
        reasoning=reasoning if isinstance(reasoning, str) else None,
        retries=retries,
    )


def _tool_calls(message: dict[str, Any]) -> list[ToolCall]:
    raw_calls = message.get("tool_calls") or []
    if not raw_calls and isinstance(message.get("function_call"), dict):
        raw_calls = [{"function": message["function_call"]}]
    if not isinstance(raw_calls, list):
        return []
    return [_tool_call(raw, i) for i, raw in enumerate(raw_calls) if isinstance(raw, dict)]


def _tool_call(raw: dict[str, Any], index: int) -> ToolCall:
    found = raw.get("function")
    function: dict[str, Any] = found if isinstance(found, dict) else {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {})
    name = function.get("name")
    return ToolCall(id=str(raw.get("id") or f"call_{index}"), name=str(name or ""), arguments_json=arguments)
