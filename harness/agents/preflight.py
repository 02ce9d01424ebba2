"""Checking an OpenAI-compatible endpoint once, before a run spends minutes discovering it is unusable.

The check lists the served models (``GET /models``: no tokens spent) and, when that does not
settle it (the route is missing, or the model is not listed), sends one minimal chat completion
with a one-token limit. A refused connection, an unresolvable host, a rejected key or an unknown
model fail the check with :class:`EndpointUnusable`, whose message says what to fix; an endpoint
that is merely busy (HTTP 429, or 400 on the minimal request) passes, since the run's own retries
handle that. Transient failures are retried a few times, briefly, so one dropped connection of a
flaky server does not stop a run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai

from pixelbox.harness.agents.base import AgentError

ATTEMPTS = 3
PAUSES = (0.5, 1.0)
"""Seconds between the check's attempts (so a dead endpoint is reported within about two seconds)."""
CHECK_TIMEOUT = 20.0
SKIP_HINT = "pass --no-preflight to start anyway"


class EndpointUnusable(AgentError):
    """The agent endpoint cannot serve the run; the message names the endpoint, the cause and the fix."""


@dataclass(frozen=True)
class _Answer:
    """One request's outcome: an HTTP status and body, or a connection-level failure (``status`` None)."""

    status: int | None
    body: Any = None
    error: str = ""

    @property
    def transient(self) -> bool:
        return self.status is None or self.status >= 500 or self.status in (408, 409)


def check_endpoint(
    client: openai.OpenAI,
    model: str,
    *,
    token_field: str = "max_tokens",
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Raise :class:`EndpointUnusable` unless ``client``'s endpoint can serve ``model``; returns how it was told."""
    where = f"the agent endpoint {client.base_url} (model {model!r})"
    listed = _retrying(lambda: _list_models(client), sleep)
    _refuse_auth(listed, where)
    if listed.status == 200 and model in _model_ids(listed.body):
        return f"{model!r} is listed by GET /models"
    answered = _retrying(lambda: _ping(client, model, token_field), sleep)
    _refuse_auth(answered, where)
    status = answered.status
    if status is not None and (200 <= status < 300 or status in (400, 429)):
        return f"a minimal chat completion was answered with HTTP {status}"
    if status == 404:
        served = _model_ids(listed.body) if listed.status == 200 else []
        offer = f"; it serves {', '.join(served[:8])}" if served else ""
        raise EndpointUnusable(
            f"{where} does not know the model or the route (HTTP 404: {answered.error}){offer}. "
            f"Check the model name after 'openai:' and --base-url (it usually ends in /v1), or {SKIP_HINT}"
        )
    if status is None:
        raise EndpointUnusable(
            f"cannot reach {where}: {answered.error} ({ATTEMPTS} attempts). Is the server running, "
            "and is --base-url right?"
        )
    raise EndpointUnusable(
        f"{where} failed a minimal chat completion {ATTEMPTS} times (last: HTTP {status}: {answered.error}). "
        f"It may be down or overloaded; try later, or {SKIP_HINT}"
    )


def _retrying(send: Callable[[], _Answer], sleep: Callable[[float], None]) -> _Answer:
    answer = send()
    for pause in PAUSES[: ATTEMPTS - 1]:
        if not answer.transient:
            break
        sleep(pause)
        answer = send()
    return answer


def _refuse_auth(answer: _Answer, where: str) -> None:
    if answer.status in (401, 403):
        raise EndpointUnusable(
            f"{where} rejected the API key (HTTP {answer.status}: {answer.error}). Set the variable named by "
            "--api-key-env (default OPENAI_API_KEY) to a valid key"
        )


def _list_models(client: openai.OpenAI) -> _Answer:
    return _call(lambda: client.models.with_raw_response.list())


def _ping(client: openai.OpenAI, model: str, token_field: str) -> _Answer:
    request: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "Reply with OK."}]}
    request[token_field] = 1
    return _call(lambda: client.chat.completions.with_raw_response.create(**request))


def _call(send: Callable[[], Any]) -> _Answer:
    try:
        response = send()
    except openai.APIStatusError as exc:
        return _Answer(exc.status_code, None, _message(exc))
    except openai.APITimeoutError:
        return _Answer(None, None, "no answer within the time limit")
    except openai.APIConnectionError as exc:
        cause = exc.__cause__
        return _Answer(None, None, f"connection failed ({cause})" if cause else "connection failed")
    try:
        body = json.loads(response.text)
    except json.JSONDecodeError:
        return _Answer(502, None, f"the answer is not JSON: {response.text[:120]!r}")
    return _Answer(response.status_code, body)


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(exc.message)[:300]


def _model_ids(body: Any) -> list[str]:
    data = body.get("data") if isinstance(body, dict) else None
    return [str(m["id"]) for m in data or [] if isinstance(m, dict) and "id" in m]
