"""Failing fast: the pre-flight check of the agent endpoint and the web providers, the retry and timeout
flags, and the stop after consecutive infrastructure failures, through the real ``pixelbox run`` entry
point against real HTTP servers on 127.0.0.1 (a port that refuses connections, a server that dies
mid-run, a server failing a fraction of its requests) and real local sandboxes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from pixelbox.cli import main
from pixelbox.harness.agents import EndpointUnusable, OpenAIAgent, OpenAIConfig, ReplayAgent
from pixelbox.harness.preflight import PreflightError
from pixelbox.harness.runner import WebConfig, run_tasks
from pixelbox.harness.tasks import load_tasks
from pixelbox.harness.traces import read_trace
from tests.harness.servers import (
    ChatCompletionsServer,
    DeadEndpoint,
    FlakyChatServer,
    JinaServer,
    Request,
    Response,
    SerperServer,
    api_error,
    completion,
    dropped,
)
from tests.harness.test_run_setup import run_cli, traces, write_tasks

KEY_ENV = "PIXELBOX_TEST_FAIL_FAST_KEY"
FAST = ("--retry-delay", "0.01")


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")


def openai_run(tasks: Path, base_url: str, out: Path, *extra: str) -> list[str]:
    return run_cli(tasks, "openai:test-model", out, "--base-url", base_url, "--api-key-env", KEY_ENV, *extra)


def like_a_model(request: Request) -> Response:
    """Runs one code block, then answers (what a model does on these tasks)."""
    messages = request.json()["messages"]
    if any(m["role"] == "assistant" for m in messages):
        return completion("The block printed the colour. <answer>red</answer>")(request)
    return completion("Let me look at the pixels first.\n<code>print('inspecting')</code>")(request)


def statuses(out: Path) -> dict[str, str]:
    found = {}
    for path in sorted((out / "episodes").glob("*.jsonl")):
        ends = read_trace(path).of_kind("episode_end")
        found[path.stem] = ends[-1]["status"] if ends else "unfinished"
    return found


# -- the pre-flight check ----------------------------------------------------------------------------------


def test_a_dead_endpoint_ends_the_run_in_seconds_with_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path, [f"t{n}" for n in range(6)])
    out = tmp_path / "run"
    with DeadEndpoint() as dead:
        started = time.monotonic()
        code = main(openai_run(tasks, dead.base_url, out))
        elapsed = time.monotonic() - started
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("pixelbox run: cannot start the run: cannot reach the agent endpoint")
    assert f"{dead.base_url}/" in lines[0] and "Connection refused" in lines[0] and "--base-url" in lines[0]
    assert "No episode was started" in lines[0]
    assert traces(out) == [] and captured.out == ""
    print(f"dead endpoint: the run ended after {elapsed:.2f} s")


def test_a_rejected_key_and_an_unknown_model_are_named_before_any_episode(tmp_path: Path) -> None:
    with ChatCompletionsServer(api_key="sk-other", models=["test-model"]) as server:
        agent = OpenAIAgent(OpenAIConfig("test-model", base_url=server.base_url, api_key="sk-test"))
        with pytest.raises(EndpointUnusable, match=r"rejected the API key \(HTTP 401: Incorrect API key"):
            agent.preflight()
        assert [r.path for r in server.requests] == ["/v1/models"]
    script = [api_error(404, "The model `test-model` does not exist.")]
    with ChatCompletionsServer(script, models=["served-a", "served-b"]) as server:
        agent = OpenAIAgent(OpenAIConfig("test-model", base_url=server.base_url, api_key="sk-test"))
        with pytest.raises(EndpointUnusable, match=r"does not know the model.*it serves served-a, served-b"):
            agent.preflight()
        assert [r.method for r in server.requests] == ["GET", "POST"]
        assert server.bodies()[0]["max_tokens"] == 1


def test_the_check_costs_no_tokens_when_the_model_is_listed_and_one_when_not(tmp_path: Path) -> None:
    with ChatCompletionsServer([], models=["test-model"]) as listed:
        agent = OpenAIAgent(OpenAIConfig("test-model", base_url=listed.base_url, api_key="sk-test"))
        assert "listed by GET /models" in agent.preflight()
        assert [r.path for r in listed.requests] == ["/v1/models"]
    with ChatCompletionsServer([completion("OK")]) as unlisted:  # no /models route, as on some servers
        agent = OpenAIAgent(OpenAIConfig("test-model", base_url=unlisted.base_url, api_key="sk-test"))
        assert "answered with HTTP 200" in agent.preflight()
        assert [r.path for r in unlisted.requests] == ["/v1/models", "/v1/chat/completions"]


def test_a_busy_endpoint_passes_and_a_dropped_connection_is_retried(tmp_path: Path) -> None:
    with ChatCompletionsServer([api_error(429, "slow down", retry_after="5")]) as busy:
        OpenAIAgent(OpenAIConfig("m", base_url=busy.base_url, api_key="sk-test")).preflight()
    with ChatCompletionsServer([dropped, completion("OK")]) as flaky:
        waits: list[float] = []
        agent = OpenAIAgent(OpenAIConfig("m", base_url=flaky.base_url, api_key="sk-test"), sleep=waits.append)
        agent.preflight()
        assert waits == [0.5] and len(flaky.requests) == 3


def test_web_providers_are_checked_in_record_mode_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jina: JinaServer
) -> None:
    tasks = load_tasks(write_tasks(tmp_path, ["t1"]))
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    (recordings / "t1.json").write_text(json.dumps(["<answer>red</answer>"]))

    def play(web: WebConfig, out: str) -> Any:
        return run_tasks(
            tasks,
            agent_factory=lambda task: ReplayAgent.from_file(recordings, task.task_id),
            mode="gen",
            out_dir=tmp_path / out,
            web=web,
            progress=False,
            preflight=True,
        )

    monkeypatch.setenv("SERPER_API_KEY", "serper-test")
    with DeadEndpoint() as dead:
        urls = {"serper_url": dead.url, "jina_url": jina.url, "imgbb_url": dead.url}
        with pytest.raises(PreflightError, match=r"web tools \(record mode\): cannot reach Serper at http"):
            play(WebConfig(tmp_path / "cache", "record", **urls), "record-dead")
        assert traces(tmp_path / "record-dead") == []
        summary = play(WebConfig(tmp_path / "cache", "replay", **urls), "replay")  # offline: nothing to check
        assert summary.counts == {"answered": 1}
    monkeypatch.delenv("SERPER_API_KEY")
    with SerperServer() as serper:
        urls = {"serper_url": serper.url, "jina_url": jina.url, "imgbb_url": jina.url}
        with pytest.raises(PreflightError, match="SERPER_API_KEY is not set"):
            play(WebConfig(tmp_path / "cache", "record", **urls), "record-nokey")
        monkeypatch.setenv("SERPER_API_KEY", "serper-test")
        assert play(WebConfig(tmp_path / "cache", "record", **urls), "record-ok").counts == {"answered": 1}
        assert [r.path for r in serper.requests] == ["/"], "the check spends no search"


# -- failing midway --------------------------------------------------------------------------------------------


def test_without_the_check_a_dead_endpoint_stops_the_run_after_n_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path, [f"t{n}" for n in range(5)])
    out = tmp_path / "run"
    with DeadEndpoint() as dead:
        extra = ("--no-preflight", "--max-attempts", "2", *FAST, "--max-consecutive-failures", "2")
        assert main(openai_run(tasks, dead.base_url, out, *extra)) == 1
    captured = capsys.readouterr()
    assert statuses(out) == {"t0": "agent_error", "t1": "agent_error"}
    assert "stopped after 2 infrastructure failures in a row (--max-consecutive-failures 2)" in captured.err
    assert "3 task(s) were not started" in captured.err and "run the same command again" in captured.err
    assert "last: t1: agent_error: the agent failed: model 'test-model'" in captured.err
    assert "2/5 episodes finished (2 run now, 0 already done)" in captured.out
    assert "failed 2 times in a row; last error: connection error" in captured.out, "the reason, without a trace"
    assert "--max-attempts N" in captured.out


def test_an_endpoint_that_dies_midway_stops_scheduling_and_the_run_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path, [f"t{n}" for n in range(6)])
    out = tmp_path / "run"
    answer = completion("<answer>red</answer>")
    with ChatCompletionsServer(models=["test-model"]) as server:

        def die(request: Request) -> Response:
            server.kill()
            return dropped(request)

        server.script.extend([answer, answer, die])
        extra = ("--max-attempts", "2", *FAST, "--max-consecutive-failures", "2")
        assert main(openai_run(tasks, server.base_url, out, *extra)) == 1
    captured = capsys.readouterr()
    assert statuses(out) == {"t0": "answered", "t1": "answered", "t2": "agent_error", "t3": "agent_error"}
    assert "2 task(s) were not started" in captured.err
    with ChatCompletionsServer([answer] * 4, models=["test-model"]) as revived:
        assert main(openai_run(tasks, revived.base_url, out, "--retry-failed")) == 0
    assert set(statuses(out).values()) == {"answered"} and len(statuses(out)) == 6
    assert "6/6 episodes finished (4 run now, 2 already done)" in capsys.readouterr().out


@pytest.mark.parametrize(("fraction", "attempts"), [(0.3, 3), (0.34, 1)])
def test_a_flaky_endpoint_completes_with_every_episode_accounted_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fraction: float, attempts: int
) -> None:
    ids = [f"t{n}" for n in range(8)]
    tasks = write_tasks(tmp_path, ids)
    out = tmp_path / "run"
    with FlakyChatServer(like_a_model, fraction, models=["test-model"]) as server:
        extra = ("--max-attempts", str(attempts), *FAST, "--concurrency", "2", "--max-consecutive-failures", "0")
        code = main(openai_run(tasks, server.base_url, out, *extra))
    ended = statuses(out)
    assert sorted(ended) == ids and "unfinished" not in ended.values()
    assert server.failures == int(server.calls * fraction), (server.calls, server.failures)
    retried = 0
    for task_id, status in ended.items():
        trace = read_trace(out / "episodes" / f"{task_id}.jsonl")
        retried += sum(len(t["retries"]) for t in trace.of_kind("turn"))
        if status == "agent_error":
            error = trace.of_kind("error")[-1]
            assert error["where"] == "agent" and error["attempts"] == attempts
            retried += len(error["retries"])
    printed = capsys.readouterr().out
    assert "8/8 episodes finished" in printed
    if attempts > 1:
        assert code == 0 and set(ended.values()) == {"answered"}
        assert retried == server.failures, "every failed request was retried and recorded on its turn"
    else:  # each failure ends an episode; 8 of them need more calls than 8 episodes make, so some finish
        failed = [t for t, s in ended.items() if s == "agent_error"]
        assert code == 1 and failed and len(failed) < len(ids)
        assert f"agent_error: {len(failed)}" in printed and "the agent failed: model 'test-model'" in printed
