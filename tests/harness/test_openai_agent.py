"""OpenAIAgent against a real local chat-completions server: shapes, tool calls, retries and errors."""

from __future__ import annotations

import json
import socket

import pytest

from pixelbox.harness.agents import (
    AgentError,
    ModelRequestError,
    OpenAIAgent,
    OpenAIConfig,
    RetryPolicy,
    image_part,
    text_part,
)
from tests.harness.servers import (
    ChatCompletionsServer,
    Request,
    Response,
    api_error,
    completion,
    hang,
    json_response,
    png_bytes,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "google_search",
            "description": "Search the web.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        },
    }
]
QUESTION = [{"role": "user", "content": [text_part("What is in the picture?"), image_part(png_bytes())]}]


def make_agent(server: ChatCompletionsServer, sleeps: list[float] | None = None, **config: object) -> OpenAIAgent:
    cfg = OpenAIConfig(model="test-model", base_url=server.base_url, api_key="sk-test", **config)  # type: ignore[arg-type]
    return OpenAIAgent(cfg, sleep=(sleeps.append if sleeps is not None else lambda s: None))


def test_text_turn_sends_images_as_data_urls_and_records_usage() -> None:
    with ChatCompletionsServer(
        [completion("A red square.", usage={"prompt_tokens": 50, "completion_tokens": 4})]
    ) as srv:
        turn = make_agent(srv).next_turn(QUESTION, TOOLS)
    sent = srv.bodies()[0]
    image_url = sent["messages"][0]["content"][1]["image_url"]["url"]
    assert image_url.startswith("data:image/png;base64,")
    assert sent["model"] == "test-model" and sent["tools"] == TOOLS
    assert turn.text == "A red square."
    assert turn.tool_calls == ()
    assert (turn.usage.prompt_tokens, turn.usage.completion_tokens, turn.usage.total_tokens) == (50, 4, 54)
    assert turn.attempts == 1 and turn.latency > 0
    assert turn.raw["choices"][0]["message"]["content"] == "A red square."


def test_tool_calls_with_null_content_round_trip_into_the_next_request() -> None:
    script = [completion(None, [("google_search", {"query": "eiffel tower height"})]), completion("324 m")]
    with ChatCompletionsServer(script) as srv:
        agent = make_agent(srv)
        first = agent.next_turn(QUESTION, TOOLS)
        call = first.tool_calls[0]
        history = [
            *QUESTION,
            first.assistant_message(),
            {"role": "tool", "tool_call_id": call.id, "content": "Search results: 324 metres"},
        ]
        second = agent.next_turn(history, TOOLS)
    assert first.text == "" and first.finish_reason == "tool_calls"
    assert (call.name, call.arguments()) == ("google_search", {"query": "eiffel tower height"})
    resent = srv.bodies()[1]["messages"][1]
    assert resent["tool_calls"][0]["id"] == call.id
    assert json.loads(resent["tool_calls"][0]["function"]["arguments"]) == {"query": "eiffel tower height"}
    assert second.text == "324 m"


def test_tolerates_list_content_missing_usage_missing_ids_and_reasoning() -> None:
    parts = [{"type": "text", "text": "Let me look. "}, {"type": "text", "text": "<code>print(1)</code>"}]
    script = [completion(parts, [("a", {}), ("b", "{}")], omit_usage=True, omit_ids=True, reasoning="thinking...")]
    with ChatCompletionsServer(script) as srv:
        turn = make_agent(srv).next_turn(QUESTION, TOOLS)
    assert turn.text == "Let me look. <code>print(1)</code>"
    assert turn.usage is None
    assert turn.reasoning == "thinking..."
    assert [c.name for c in turn.tool_calls] == ["a", "b"]
    assert len({c.id for c in turn.tool_calls}) == 2


def test_sampling_settings_and_extra_body_reach_the_server() -> None:
    with ChatCompletionsServer([completion("ok")]) as srv:
        agent = make_agent(srv, temperature=0.2, max_tokens=321, extra_body={"top_k": 5}, tool_choice="auto")
        agent.next_turn(QUESTION, TOOLS)
    sent = srv.bodies()[0]
    assert (sent["temperature"], sent["max_tokens"], sent["top_k"], sent["tool_choice"]) == (0.2, 321, 5, "auto")


def test_no_tools_means_no_tools_field() -> None:
    with ChatCompletionsServer([completion("ok")]) as srv:
        make_agent(srv).next_turn(QUESTION, [])
    assert "tools" not in srv.bodies()[0]


def test_rate_limit_waits_what_retry_after_says() -> None:
    sleeps: list[float] = []
    with ChatCompletionsServer([api_error(429, "slow down", retry_after="7"), completion("done")]) as srv:
        turn = make_agent(srv, sleeps).next_turn(QUESTION, TOOLS)
    assert turn.text == "done" and turn.attempts == 2
    assert sleeps == [7.0]
    assert turn.retries[0]["status"] == 429 and "slow down" in turn.retries[0]["error"]


def test_server_errors_back_off_exponentially_with_jitter() -> None:
    sleeps: list[float] = []
    policy = RetryPolicy(max_attempts=4, base_delay=0.5, jitter=0.5)
    with ChatCompletionsServer([api_error(500), api_error(502), api_error(503), completion("ok")]) as srv:
        turn = make_agent(srv, sleeps, retry=policy).next_turn(QUESTION, TOOLS)
    assert turn.attempts == 4 and len(srv.requests) == 4
    for attempt, waited in enumerate(sleeps, start=1):
        ceiling = 0.5 * 2 ** (attempt - 1)
        assert ceiling * 0.5 <= waited <= ceiling


def test_gives_up_with_a_clear_error_after_the_last_attempt() -> None:
    sleeps: list[float] = []
    with ChatCompletionsServer([api_error(503, "overloaded")] * 3) as srv:
        agent = make_agent(srv, sleeps, retry=RetryPolicy(max_attempts=3, base_delay=0.01))
        with pytest.raises(ModelRequestError) as caught:
            agent.next_turn(QUESTION, TOOLS)
    assert caught.value.attempts == 3 and caught.value.status == 503
    assert "failed 3 times" in str(caught.value) and "overloaded" in str(caught.value)
    assert len(srv.requests) == 3 and len(sleeps) == 2


def test_client_errors_are_not_retried() -> None:
    with ChatCompletionsServer([completion("never")], api_key="sk-other") as srv:
        agent = make_agent(srv)
        with pytest.raises(ModelRequestError) as caught:
            agent.next_turn(QUESTION, TOOLS)
    assert caught.value.status == 401 and caught.value.attempts == 1
    assert "check the API key" in str(caught.value)
    assert len(srv.requests) == 1


def test_timeouts_are_retried() -> None:
    with ChatCompletionsServer([hang(3.0), completion("second try")]) as srv:
        turn = make_agent(srv, request_timeout=0.3).next_turn(QUESTION, TOOLS)
    assert turn.text == "second try" and turn.attempts == 2
    assert "timed out" in turn.retries[0]["error"]


def test_unreachable_endpoint_is_a_connection_error_after_retries() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cfg = OpenAIConfig(model="m", base_url=f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(max_attempts=2))
    with pytest.raises(ModelRequestError) as caught:
        OpenAIAgent(cfg, sleep=lambda s: None).next_turn(QUESTION, [])
    assert caught.value.status is None and "connection error" in str(caught.value)


def test_api_key_comes_from_the_named_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIXELBOX_TEST_MODEL_KEY", "sk-test")
    with ChatCompletionsServer([completion("authorized")]) as srv:
        cfg = OpenAIConfig(model="m", base_url=srv.base_url, api_key_env="PIXELBOX_TEST_MODEL_KEY")
        assert OpenAIAgent(cfg).next_turn(QUESTION, []).text == "authorized"
    assert srv.requests[0].headers["authorization"] == "Bearer sk-test"


def test_missing_key_for_openai_itself_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIXELBOX_TEST_MODEL_KEY", raising=False)
    with pytest.raises(AgentError, match="set PIXELBOX_TEST_MODEL_KEY"):
        OpenAIAgent(OpenAIConfig(model="gpt-x", api_key_env="PIXELBOX_TEST_MODEL_KEY"))


def test_a_200_without_choices_is_retried_then_reported() -> None:
    def empty(request: Request) -> Response:
        return json_response({"id": "x", "choices": []})

    with ChatCompletionsServer([empty, empty]) as srv:
        agent = make_agent(srv, retry=RetryPolicy(max_attempts=2, base_delay=0.01))
        with pytest.raises(ModelRequestError, match="no choices"):
            agent.next_turn(QUESTION, [])
