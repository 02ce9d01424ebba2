"""Harness faults: what a model, its endpoint, the web providers, the host and the container
engine can do to an episode. Every case drives whole episodes through ``run_tasks`` (or the
``pixelbox run`` command) against real servers on 127.0.0.1 (an OpenAI-compatible endpoint,
Serper, Jina, imgbb and image hosts from ``tests/harness/servers.py``) and real sandboxes, and
asserts the three things the harness promises:

- the episode goes on (the model is told what was wrong) or ends with a recorded reason
  (``agent_error``, ``no_answer``, ``budget_exhausted``...), and a failure in one episode never
  touches the others;
- the trace is intact: ``read_trace`` reads it, records are numbered without gaps, every action
  has its observation in order, and it ends with exactly one ``episode_end`` with the right status;
- nothing leaks: no sandbox of this process is left (workspace, container, kernel, cgroup), and
  the API key the harness holds (``OPENAI_API_KEY``, ``SERPER_API_KEY``...) appears in no file
  of the run directory.

Cases that reach the kernel run on local (with the policy) and docker runc; cases about the
agent endpoint and the web layer run once (on local), since no backend is involved.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pixelbox.harness.agents import OpenAIAgent, OpenAIConfig
from pixelbox.harness.agents.retry import RetryPolicy
from pixelbox.harness.episode.budgets import BudgetLimits
from pixelbox.harness.runner import RunSummary, run_tasks
from pixelbox.harness.tasks import Task
from pixelbox.harness.traces import Trace, read_trace
from pixelbox.harness.web import DownloadLimits, ImgbbHost, JinaReader, SerperProvider, WebCache, WebTools
from pixelbox.runtime import SandboxOptions
from pixelbox.runtime.backends import criu, restore
from pixelbox.runtime.docker_engine import docker_client
from tests.conftest import find_leaks
from tests.hardening.conftest import SECRET_VARS, backend_options
from tests.hardening.private_dockerd import PrivateDockerd
from tests.hardening.support import HOST_SECRET, LIMITS, OUTCOMES, container_fault
from tests.harness.episodes import make_task
from tests.harness.servers import (
    ChatCompletionsServer,
    ImageServer,
    ImgbbServer,
    Response,
    Scripted,
    SerperServer,
    api_error,
    completion,
    hang,
    json_response,
    png_bytes,
)
from tests.harness.test_run_resume import WAIT_S, background, command, digest, finished, reap, write_run_inputs
from tests.harness.test_web_tools import closed_port_url

KERNEL_BACKENDS = ("local", "runc")
"""Where cases that run code or image tools in the kernel are played."""
SECRET_ENV = (*SECRET_VARS, "SERPER_API_KEY", "JINA_API_KEY", "IMGBB_API_KEY")
FAST_RETRY = RetryPolicy(max_attempts=6, base_delay=0.01, jitter=0.0)
ANSWER = "<answer>red</answer>"

on_kernels = pytest.mark.parametrize("harness", KERNEL_BACKENDS, indirect=True)
on_host = pytest.mark.parametrize("harness", ["local"], indirect=True)


# -- playing episodes and checking what they left ------------------------------------------------------


@dataclass
class Played:
    """One run directory and its summary (None for runs made by the ``pixelbox run`` command)."""

    out: Path
    summary: RunSummary | None = None

    def trace(self, task_id: str = "t1") -> Trace:
        return read_trace(self.out / "episodes" / f"{task_id}.jsonl")

    def ended(self, task_id: str = "t1", status: str = "answered") -> Trace:
        """The task's trace, checked intact and ended with ``status``."""
        trace = self.trace(task_id)
        assert_intact(trace, status)
        saved = json.loads((self.out / "episodes" / f"{task_id}.summary.json").read_text())
        assert saved["finished"] and saved["status"] == status, saved
        return trace


@dataclass
class Harness:
    """A case's backend and the runs it played (counted into the suite's figures)."""

    backend: str
    options: dict[str, Any]
    root: Path
    runs: list[Played] = field(default_factory=list)

    def task(self, task_id: str = "t1") -> Task:
        return make_task(self.root / "data", task_id)

    def play(
        self,
        agent: Callable[[Task], Any],
        *,
        mode: str = "gen",
        tasks: Sequence[Task] | None = None,
        web: Callable[[Task], WebTools] | None = None,
        budgets: BudgetLimits | None = None,
        concurrency: int = 1,
        code_blocks: str | None = None,
    ) -> Played:
        """Run the tasks (default: one task ``t1``) through ``run_tasks``; check nothing leaked."""
        out = self.root / f"run{len(self.runs)}"
        summary = run_tasks(
            list(tasks) if tasks is not None else [self.task()],
            agent_factory=agent,
            mode=mode,  # type: ignore[arg-type]
            out_dir=out,
            sandbox_options=SandboxOptions(**self.options),
            budgets=budgets or BudgetLimits(execution_timeout=10),
            web=web,
            concurrency=concurrency,
            progress=False,
            code_blocks=code_blocks,  # type: ignore[arg-type]
        )
        assert summary.failed == [], summary.failed
        played = self.adopt(out, summary)
        assert_nothing_leaked(out)
        return played

    def adopt(self, out: Path, summary: RunSummary | None = None) -> Played:
        played = Played(out, summary)
        self.runs.append(played)
        return played


@pytest.fixture
def harness(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    """The case's backend, with the harness holding its API keys (a secret) in its environment."""
    name = str(getattr(request, "param", "local"))
    options = {k: v for k, v in LIMITS.items() if k != "timeout"}  # the budget sets each deadline
    options.update(backend_options(name))
    for var in SECRET_ENV:
        monkeypatch.setenv(var, HOST_SECRET)
    case = Harness(name, options, tmp_path)
    yield case
    executions = [
        o["execution"]
        for played in case.runs
        for path in sorted((played.out / "episodes").glob("*.jsonl*"))
        for o in read_trace(path).of_kind("observation")
        if isinstance(o.get("execution"), dict)
    ]
    episodes = Counter(
        str(s.get("status")) for played in case.runs for s in _summaries(played.out) if s.get("finished")
    )
    OUTCOMES[request.node.nodeid] = {
        "backend": name,
        "executions": len(executions),
        "statuses": [e["status"] for e in executions],
        "state_lost": sum(1 for e in executions if e.get("state_lost")),
        "episodes": dict(episodes),
    }
    assert not find_leaks(), find_leaks()


def _summaries(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((out / "episodes").glob("*.summary.json"))]


def assert_intact(trace: Trace, status: str) -> None:
    """Readable, numbered without gaps, actions answered in order, one ``episode_end`` with ``status``."""
    assert not trace.torn, f"{trace.path} has a torn last line"
    records = trace.records
    assert [r["seq"] for r in records] == list(range(len(records))), "records out of order or missing"
    assert all(r["v"] == 1 for r in records)
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "episode_start" and kinds[-1] == "episode_end" and kinds.count("episode_end") == 1, kinds
    end = records[-1]
    assert end["status"] == status, f"ended {end['status']} ({end['reason']}), expected {status}"
    if status != "answered":
        assert end["reason"], "an episode that ends without an answer must say why"
    assert [t["round"] for t in trace.of_kind("turn")] == list(range(1, len(trace.of_kind("turn")) + 1))
    open_action, seen = None, set()
    for record in records:  # every action is followed by its own observation before the next one starts
        if record["kind"] == "action":
            assert open_action is None and record["action_id"] not in seen, record
            open_action = record["action_id"]
            seen.add(open_action)
        elif record["kind"] == "observation":
            assert record["action_id"] == open_action, record
            open_action = None
    assert open_action is None, f"action {open_action} has no observation"


def assert_nothing_leaked(out: Path) -> None:
    """No sandbox of this process remains, and the harness's key is in no file the run wrote."""
    assert not find_leaks(), find_leaks()
    secret = HOST_SECRET.encode()
    for path in out.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes(), f"the harness's API key leaked into {path}"


def executions(trace: Trace) -> list[dict[str, Any]]:
    return [o["execution"] for o in trace.of_kind("observation") if o.get("execution")]


def observations(trace: Trace) -> list[dict[str, Any]]:
    return trace.of_kind("observation")


def notes(trace: Trace) -> list[str]:
    """The text parts of the user messages the harness sent back."""
    return [
        part["text"]
        for m in trace.of_kind("message")
        if m["message"]["role"] == "user"
        for part in m["message"]["content"]
        if part.get("type") == "text"
    ]


# -- the model endpoint ------------------------------------------------------------------------------------


def endpoint(script: Sequence[Scripted], api_key: str = HOST_SECRET) -> ChatCompletionsServer:
    """A local chat-completions server that expects the harness's key (read from its environment)."""
    return ChatCompletionsServer(script, api_key=api_key)


def model(server: ChatCompletionsServer | str, **config: Any) -> Callable[[Task], OpenAIAgent]:
    """A fresh OpenAI-compatible agent per episode; the key comes from ``OPENAI_API_KEY``."""
    base_url = server if isinstance(server, str) else server.base_url
    settings = {"retry": FAST_RETRY, "request_timeout": 20.0, **config}
    cfg = OpenAIConfig(model="hardening-model", base_url=base_url, **settings)
    return lambda task: OpenAIAgent(cfg)


def raw_body(body: bytes) -> Scripted:
    """A 200 response with exactly these bytes (for bodies no JSON library would write)."""
    return lambda request: Response(200, body, {"Content-Type": "application/json"})


def chat_body(content_json: str) -> bytes:
    """A completion body whose message content is the JSON string literal ``content_json`` (escapes kept)."""
    return (
        '{"id": "chatcmpl-raw", "object": "chat.completion", "model": "hardening-model", "choices": [{"index": 0, '
        '"message": {"role": "assistant", "content": ' + content_json + '}, "finish_reason": "stop"}]}'
    ).encode()


def calls(*pairs: tuple[str, Any]) -> Scripted:
    """A turn of tool calls only (``content: null``), arguments a dict or a raw string."""
    return completion(None, list(pairs))


# -- malformed model output ---------------------------------------------------------------------------------


@on_kernels
def test_unclosed_and_mismatched_code_tags(harness: Harness) -> None:
    """Reading every block (``--code-blocks all``): a turn cut off inside ``<code>`` still runs; mis-nested
    tags run as the text between them (here ``print('a') < code > print('b')``, a NameError the model
    sees); tags are matched in any case. (The official first-block reading: tests/harness/test_code_blocks.py.)"""
    script = [
        completion("Let me look.\n<code>\nprint('cut', 6 * 7)"),
        completion("</code> stray close, then <code>print('a')<code>print('b')</code> and <CODE>x = 1"),
        completion(ANSWER),
    ]
    with endpoint(script) as server:
        trace = harness.play(model(server), code_blocks="all").ended()
    first, second, third = executions(trace)
    assert first["status"] == "ok" and first["stdout"] == "cut 42\n"
    assert second["status"] == "error" and second["error"]["evalue"] == "name 'code' is not defined"
    assert third["status"] == "ok"  # the upper-case, unclosed last block
    codes = [a["code"] for a in trace.of_kind("action")]
    assert codes == ["print('cut', 6 * 7)", "print('a')<code>print('b')", "x = 1"]
    assert "NameError" in observations(trace)[1]["shown"]


@on_kernels
def test_answer_in_a_turn_that_acts_is_refused(harness: Harness) -> None:
    """``<answer>`` beside code (gen) or a tool call (atm) is refused with a note; the episode goes on."""
    gen = [completion("<code>print(6 * 7)</code> <answer>wrong</answer>"), completion(ANSWER)]
    atm = [
        completion("<answer>wrong</answer>", [("grayscale", {"image_index": 0})]),
        completion(ANSWER),
    ]
    for mode, script in (("gen", gen), ("atm", atm)):
        with endpoint(script) as server:
            trace = harness.play(model(server), mode=mode).ended()
        assert trace.of_kind("episode_end")[0]["answer"] == "red"
        assert [e["status"] for e in executions(trace)] == ["ok"]
        assert any("was not accepted because the same turn also took actions" in n for n in notes(trace))


@on_host
def test_empty_turns_end_as_no_answer(harness: Harness) -> None:
    """Empty, null and whitespace turns (and an empty ``<code>``) are nudged, then end ``no_answer``."""
    for mode, script in (
        ("gen", [completion(""), completion(None), completion("<code>\n   \n</code>")]),
        ("atm", [completion(None), completion(" \n\t"), completion("```python\nprint(1)\n```")]),
    ):
        with endpoint(script) as server:
            trace = harness.play(model(server), mode=mode).ended(status="no_answer")
        end = trace.of_kind("episode_end")[0]
        assert end["reason"] == "3 turns in a row without an action or an <answer>" and end["answer"] is None
        assert trace.of_kind("action") == [] and len(trace.of_kind("turn")) == 3
        assert sum("no action and no <answer>" in n for n in notes(trace)) == 2


@on_host
def test_huge_turn_text_is_recorded_whole(harness: Harness) -> None:
    """A 3 MB turn (and 1 MB of reasoning) is traced whole in one line, its code runs, the episode goes on."""
    flood = "".join(f"line {i}: the box might be red, or maybe not.\n" for i in range(60_000))
    text = flood + "<code>print('after the flood')</code>"
    with endpoint([completion(text, reasoning="hmm " * 250_000), completion(ANSWER)]) as server:
        trace = harness.play(model(server)).ended()
        assert len(server.bodies()[1]["messages"][2]["content"]) == len(text), "the next request carries it all"
    turn = trace.of_kind("turn")[0]
    assert turn["text"] == text and len(turn["reasoning"]) == 1_000_000
    assert executions(trace)[0]["stdout"] == "after the flood\n"


ODD = "e\\u0301 \\u202eevil\\u202c \\u200d\\ufeff \\ud83d\\ude42 \\u4e2d \\u0000 \\u0007"
"""JSON escapes: combining accent, RTL override, zero-width joiner, BOM, an emoji (a valid surrogate
pair), CJK, NUL and BEL."""


@on_kernels
def test_invalid_utf8_and_odd_unicode_in_turns(harness: Harness) -> None:
    """Bytes that are not UTF-8 arrive replaced (U+FFFD); odd code points are kept exactly; code with
    a NUL byte or a BOM is an error the model sees, not a harness failure."""
    body = chat_body("\"bad XX bytes <code>print('still runs')</code>\"").replace(b"XX", b"\xff\xfe")
    literal = ODD.replace("\\u0000 ", "")  # a NUL inside code is its own case below
    odd_code = "<code>s = '" + literal + "'\\nprint(len(s), s)</code>"
    script = [
        raw_body(body),
        raw_body(chat_body('"' + ODD + " " + odd_code + '"')),
        completion("<code>print('nul')\x00</code>"),
        completion("<code>\ufeffprint(1)</code>"),
        completion("<answer>rouge \u202e\U0001f642</answer>"),
    ]
    with endpoint(script) as server:
        trace = harness.play(model(server)).ended()
    first_text = trace.of_kind("turn")[0]["text"]
    assert "\ufffd\ufffd bytes" in first_text
    second_text = trace.of_kind("turn")[1]["text"]
    assert "\u202eevil\u202c" in second_text and "\U0001f642" in second_text and "\x00" in second_text
    ran = executions(trace)
    assert [e["status"] for e in ran] == ["ok", "ok", "error", "error"], [e["status"] for e in ran]
    assert ran[0]["stdout"] == "still runs\n"
    odd = json.loads('"' + literal + '"')
    assert ran[1]["stdout"] == f"{len(odd)} {odd}\n"
    assert "null bytes" in ran[2]["error"]["evalue"] and ran[3]["error"]["ename"] == "SyntaxError"
    assert trace.of_kind("episode_end")[0]["answer"] == "rouge \u202e\U0001f642"


@on_host
def test_lone_surrogate_in_a_turn(harness: Harness) -> None:
    """``"\\ud800"`` is valid JSON from an endpoint but not encodable as UTF-8: the trace line is
    written ASCII-escaped so the turn is recorded whole and the episode goes on."""
    script = [raw_body(chat_body('"lone \\ud800 surrogate <code>print(1)</code>"')), completion(ANSWER)]
    with endpoint(script) as server:
        trace = harness.play(model(server)).ended()
    assert executions(trace)[0]["status"] == "ok"


@on_kernels
def test_lone_surrogate_in_kernel_output(harness: Harness) -> None:
    """Model code that raises or prints a lone surrogate: the kernel's session packs such messages
    ASCII-escaped (``pixelbox.kernel.channel.pack_message``), so the error and the text arrive."""
    script = [
        completion("<code>raise ValueError('bad \\ud800 text')</code>"),
        completion("<code>print('a\\ud800b')</code>"),
        completion(ANSWER),
    ]
    with endpoint(script) as server:
        trace = harness.play(model(server)).ended()
    raised, printed = executions(trace)
    assert raised["status"] == "error" and raised["error"]["ename"] == "ValueError", raised
    assert printed["stdout"].startswith("a") and "json_packer" not in printed["stderr"], printed


# -- bad tool calls -------------------------------------------------------------------------------------------

BOX = [0, 0, 500, 500]


def tool_errors(trace: Trace) -> list[str]:
    """The kernel's ToolError message for every atomic call that failed."""
    return [e["error"]["evalue"] for e in executions(trace) if e["status"] == "error" and e["error"]]


@on_kernels
def test_invalid_tool_call_json(harness: Harness) -> None:
    """Atomic calls whose arguments are not a JSON object are ToolErrors from the kernel; a web call's
    are refused by the harness before any request; the next valid call works."""
    broken = [
        '{"image_index": 0, "bbox_2d": [0, 0, 10',  # cut off
        "[0, 0, 500, 500]",
        '"crop the box"',
        "{'image_index': 0, 'bbox_2d': [0, 0, 500, 500]}",  # Python, not JSON
        '{"image_index": 0, "bbox_2d": [0, 0, 500, 500],}',
        '{"image_index": NaN, "bbox_2d": [0, 0, Infinity, 500]}',
        "",
    ]
    script = [
        calls(*[("crop", text) for text in broken]),
        calls(("crop", {"image_index": 0, "bbox_2d": BOX})),
        completion(ANSWER),
    ]
    with endpoint(script) as server:
        trace = harness.play(model(server), mode="atm", budgets=BudgetLimits(max_tool_calls=20)).ended()
    ran = executions(trace)
    assert [e["status"] for e in ran] == ["error"] * len(broken) + ["ok"]
    assert all(e["error"]["ename"] == "ToolError" for e in ran[:-1])
    errors = tool_errors(trace)
    assert "are not valid JSON" in errors[0] and "must be a JSON object" in errors[1] + errors[2]
    assert ran[-1]["artifacts"][0]["index"] == 1, "failed calls must not use up image indices"
    with (
        SerperServer(api_key=HOST_SECRET) as serper,
        endpoint(
            [calls(("google_search", '{"query": "eiffel'), ("google_search", "[1]")), completion(ANSWER)]
        ) as server,
    ):
        web = harness.play(model(server), web=lambda task: WebTools(search=SerperProvider(base_url=serper.url)))
        assert serper.requests == []
    trace = web.ended()
    refused = [o["error"] for o in observations(trace)]
    assert "arguments of google_search are not valid JSON" in refused[0]
    assert "arguments of google_search must be a JSON object, got list" in refused[1]


@on_host
def test_unknown_tool_names(harness: Harness) -> None:
    """Names that are not offered (typos, empty, the kernel's internal ``add_image``, a web tool in a
    run without web, an image tool in code mode) are refused by the harness; the kernel never sees them."""
    atm = ["sharpen_more", "", "add_image", "python", "google_search", "crop ", "CROP", "__pbx__.tool"]
    gen = ["crop", "python", "add_image"]
    for mode, names in (("atm", atm), ("gen", gen)):
        script = [calls(*[(name, {"image_index": 0, "path": "/etc/passwd"}) for name in names]), completion(ANSWER)]
        with endpoint(script) as server:
            trace = harness.play(model(server), mode=mode, budgets=BudgetLimits(max_tool_calls=20)).ended()
        assert executions(trace) == [], "an unknown tool must not reach the kernel"
        for name, seen in zip(names, observations(trace), strict=True):
            assert seen["error"].startswith(f"there is no tool named {name!r} in this mode"), seen
        assert trace.of_kind("episode_end")[0]["totals"]["images"] == 1


@on_kernels
def test_bad_image_indices(harness: Harness) -> None:
    """Out-of-range, negative, float, string, boolean, null and not-yet-made indices, for an image tool
    and for google_lens_search: each a clear error, no request to the web, the sandbox usable after."""
    bad: list[Any] = [99, -1, 1.5, "0", True, None, 1]
    crop_calls = [("crop", {"image_index": index, "bbox_2d": BOX}) for index in bad]
    crop_calls.append(("crop", '{"image_index": 1e400, "bbox_2d": [0, 0, 500, 500]}'))
    lens_calls = [("google_lens_search", {"image_index": index}) for index in (99, -1, 0.5, "0", True)]
    script = [
        calls(*crop_calls, *lens_calls),
        calls(("crop", {"image_index": 0, "bbox_2d": BOX}), ("rotate", {"image_index": 1, "angle": 90})),
        completion(ANSWER),
    ]
    with SerperServer(api_key=HOST_SECRET) as serper, ImgbbServer(api_key=HOST_SECRET) as imgbb:

        def web(task: Task) -> WebTools:
            return WebTools(search=SerperProvider(base_url=serper.url), host=ImgbbHost(base_url=imgbb.url))

        with endpoint(script) as server:
            played = harness.play(model(server), mode="atm", web=web, budgets=BudgetLimits(max_tool_calls=30))
        assert serper.requests == [] and imgbb.requests == []
    trace = played.ended()
    errors = tool_errors(trace)
    assert len(errors) == len(crop_calls)
    assert "image_index 99 does not exist; the images are: 0 (image_t1_0.png)" in errors[0]
    assert "must be at least 0" in errors[1] and "must be a whole number, got 1.5" in errors[2]
    assert 'must be an integer, got "0"' in errors[3] and "must be an integer, got true" in errors[4]
    assert "crop needs image_index" in errors[5] and "image_index 1 does not exist" in errors[6]
    assert "must be an integer, got Infinity" in errors[7]
    lens = [o["tool_result"] for o in observations(trace) if o.get("tool_result")]
    assert len(lens) == 5 and not any(r["ok"] for r in lens)
    assert all("image_index must be the index of an existing image (0)" in r["error"] for r in lens)
    crop, rotate = executions(trace)[-2:]
    assert crop["status"] == rotate["status"] == "ok" and rotate["artifacts"][0]["index"] == 2


@on_kernels
def test_wrong_typed_bbox(harness: Harness) -> None:
    """bbox_2d as a string, too short, nested, reversed, empty, non-numeric, NaN/Infinity, booleans,
    an object, null, out of range: ToolErrors that say what is valid; state kept."""
    boxes: list[Any] = [
        "0,0,10,10",
        [0, 0, 10],
        [[0, 0], [10, 10]],
        [10, 10, 0, 0],
        [5, 5, 5, 5],
        ["a", "b", "c", "d"],
        [True, 0, 10, 10],
        {"x1": 0},
        None,
        [-50, -50, 2000, 2000],
        [0, 0, 1e308, 10],
        [],
    ]
    bad = [("crop", {"image_index": 0, "bbox_2d": box}) for box in boxes]
    bad.append(("crop", '{"image_index": 0, "bbox_2d": [0, 0, NaN, Infinity]}'))
    script = [calls(*bad), calls(("crop", {"image_index": 0, "bbox_2d": BOX, "zoom_scale": 2})), completion(ANSWER)]
    with endpoint(script) as server:
        trace = harness.play(model(server), mode="atm", budgets=BudgetLimits(max_tool_calls=20)).ended()
    errors = tool_errors(trace)
    assert len(errors) == len(bad)
    for error in errors:
        assert re.search(r"bbox_2d must be|crop needs bbox_2d", error), error
    assert "an empty box" in errors[3] and "leaves the 0-1000 range" in errors[9]
    assert executions(trace)[-1]["status"] == "ok" and executions(trace)[-1]["artifacts"][0]["index"] == 1


@on_host
def test_flood_of_tool_calls_ends_on_the_budget(harness: Harness) -> None:
    """200 calls in one turn: the first 15 run, then the episode ends ``budget_exhausted`` with a record."""
    script = [calls(*[("grayscale", {"image_index": 0})] * 200)]
    with endpoint(script) as server:
        trace = harness.play(model(server), mode="atm").ended(status="budget_exhausted")
    hit = trace.of_kind("budget_hit")[0]
    assert (hit["limit"], hit["allowed"], hit["used"]) == ("max_tool_calls", 15, 15)
    assert len(executions(trace)) == 15 and all(e["status"] == "ok" for e in executions(trace))
    assert trace.of_kind("episode_end")[0]["reason"] == hit["reason"]


# -- the model endpoint fails -------------------------------------------------------------------------------------


@on_host
def test_transient_endpoint_failures_are_retried(harness: Harness) -> None:
    """500, 502, a 200 that is not JSON, a 200 without choices and a 503 mid-episode: retried until a
    completion comes; every attempt is on the turn record and the sandbox kept its state."""
    script = [
        completion("<code>x = 41</code>"),
        api_error(500),
        lambda request: Response(502, b"<html>bad gateway</html>", {"Content-Type": "text/html"}),
        raw_body(b"<html>oops</html>"),
        lambda request: json_response({"id": "x", "choices": []}),
        api_error(503, "overloaded"),
        completion("<code>print(x + 1)</code>"),
        completion("<answer>42</answer>"),
    ]
    with endpoint(script) as server:
        trace = harness.play(model(server)).ended()
        assert len(server.requests) == len(script)
    second = trace.of_kind("turn")[1]
    assert second["attempts"] == 6
    assert [r["status"] for r in second["retries"]] == [500, 502, None, None, 503]
    assert "not JSON" in second["retries"][2]["error"] and "no choices" in second["retries"][3]["error"]
    assert executions(trace)[1]["stdout"] == "42\n", "the sandbox must keep its state across retries"


@on_host
def test_rate_limit_retry_after_is_honoured(harness: Harness) -> None:
    """429 with ``Retry-After: 1``: the agent waits what the server asked (not its 10 ms backoff) and
    retries; the wait is on the turn record."""
    script = [api_error(429, "slow down", retry_after="1"), completion(ANSWER)]
    with endpoint(script) as server:
        trace = harness.play(model(server)).ended()
    turn = trace.of_kind("turn")[0]
    assert turn["attempts"] == 2
    (retry,) = turn["retries"]
    assert (retry["attempt"], retry["status"], retry["wait"]) == (1, 429, 1.0) and "slow down" in retry["error"]


@on_host
def test_permanent_client_errors_end_only_their_episode(harness: Harness) -> None:
    """401 (wrong key), 400 (mid-episode) and 404 (unknown model) are not retried: each episode ends
    ``agent_error`` with the reason; the other episodes of the same concurrent run finish normally."""
    servers = {
        "bad-key": endpoint([completion(ANSWER)], api_key="sk-a-different-key"),
        "bad-request": endpoint([completion("<code>print('one')</code>"), api_error(400, "Invalid image part")]),
        "no-model": endpoint([api_error(404, "The model `hardening-model` does not exist")]),
        "fine-1": endpoint([completion("<code>print('fine')</code>"), completion(ANSWER)]),
        "fine-2": endpoint([completion(ANSWER)]),
    }
    for server in servers.values():
        server.__enter__()
    try:

        def agent(task: Task) -> OpenAIAgent:
            return model(servers[task.task_id])(task)

        played = harness.play(agent, tasks=[harness.task(t) for t in servers], concurrency=2)
    finally:
        for server in servers.values():
            server.__exit__()
    assert played.summary is not None and played.summary.counts == {"agent_error": 3, "answered": 2}
    for task_id, status in (("bad-key", 401), ("bad-request", 400), ("no-model", 404)):
        trace = played.ended(task_id, "agent_error")
        error = trace.of_kind("error")[0]
        assert (error["where"], error["status"], error["attempts"]) == ("agent", status, 1)
        assert f"refused the request with HTTP {status}" in trace.of_kind("episode_end")[0]["reason"]
    assert "(check the API key)" in played.trace("bad-key").of_kind("error")[0]["message"]
    assert [r.path for r in servers["bad-key"].requests] == ["/v1/chat/completions"], "401 must not be retried"
    assert executions(played.trace("bad-request"))[0]["stdout"] == "one\n"
    assert executions(played.ended("fine-1"))[0]["stdout"] == "fine\n"
    played.ended("fine-2")


@on_host
def test_endpoint_that_hangs_or_is_gone(harness: Harness) -> None:
    """A response slower than the client timeout is retried (then given up on); a closed port is a
    connection error after retries. Each ends as recorded, none hangs the run."""
    slow = endpoint([hang(4), completion(ANSWER)])
    stuck = endpoint([hang(4), hang(4)])
    with slow, stuck:
        sources = {"recovers": slow.base_url, "stuck": stuck.base_url, "gone": closed_port_url() + "/v1"}
        retry = RetryPolicy(max_attempts=2, base_delay=0.01)

        def agent(task: Task) -> OpenAIAgent:
            return model(sources[task.task_id], request_timeout=1.0, retry=retry)(task)

        played = harness.play(agent, tasks=[harness.task(t) for t in sources])
    recovered = played.ended("recovers").of_kind("turn")[0]
    assert recovered["attempts"] == 2 and recovered["retries"][0]["error"] == "request timed out"
    for task_id, last in (("stuck", "request timed out"), ("gone", "connection error")):
        trace = played.ended(task_id, "agent_error")
        error = trace.of_kind("error")[0]
        assert error["attempts"] == 2 and f"failed 2 times in a row; last error: {last}" in error["message"]


# -- web providers ------------------------------------------------------------------------------------------------


@on_host
def test_web_provider_errors_are_tool_results(harness: Harness) -> None:
    """Serper answering 500, HTML, a JSON array, 429 and too late, Jina unreachable: ``ok=False`` tool
    results the model reads; failures are not cached as answers, so the same search works once the
    provider is back."""
    failures = [
        Response(500, b"upstream broke"),
        Response(200, b"<html>oops</html>", {"Content-Type": "text/html"}),
        json_response([1, 2, 3]),
        json_response({"message": "Too many requests"}, 429),
        Response(200, b"{}", delay=3.0),
    ]
    query = {"query": "red box sign"}
    script = [
        calls(*[("google_search", query)] * (len(failures) + 1), ("fetch_webpage", {"url": "https://example.org/a"})),
        completion(ANSWER),
    ]
    with SerperServer(api_key=HOST_SECRET) as serper:
        serper.fail_next.extend(failures)

        def web(task: Task) -> WebTools:
            return WebTools(
                allow_private_urls=True,  # example.org must not need DNS here
                search=SerperProvider(base_url=serper.url, timeout=1.0),
                reader=JinaReader(base_url=closed_port_url(), timeout=1.0),
                cache=WebCache.for_task(harness.root / "web-cache", task.task_id, "auto"),
            )

        with endpoint(script) as server:
            trace = harness.play(model(server), web=web).ended()
    results = [o["tool_result"] for o in observations(trace)]
    assert [r["ok"] for r in results] == [False] * len(failures) + [True, False]
    errors = [r["error"] for r in results]
    assert "Serper returned HTTP 500: upstream broke" in errors[0] and "not JSON" in errors[1]
    assert "Serper returned list where an object was expected" in errors[2]
    assert "HTTP 429 (rate limited)" in errors[3] and "did not answer within 1 s" in errors[4]
    assert "cannot reach Jina Reader at http://127.0.0.1:" in errors[6]
    assert "1. red box sign - result 1" in results[5]["text"] and results[5]["source"] == "provider"
    shown = [m["message"]["content"] for m in trace.of_kind("message") if m["message"]["role"] == "tool"]
    assert all(text.startswith("Error: ") for i, text in enumerate(shown) if i != len(failures))


TOO_BIG = 21 * 1024**2


def pixel_bomb(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims ``width`` x ``height`` pixels (IHDR rewritten, CRC fixed)."""
    data = bytearray(png_bytes(1, 1))
    ihdr = bytearray(data[12:29])  # type + 13 data bytes
    ihdr[4:12] = struct.pack(">II", width, height)
    data[12:29] = ihdr
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(ihdr)))
    return bytes(data)


@on_kernels
def test_download_of_non_images_and_oversized_images(harness: Harness) -> None:
    """HTML, a mislabelled file, 21 MiB, a header claiming 10000x10000 pixels: ``ok=False`` results,
    nothing reaches the sandbox or uses an index; a real image afterwards becomes image 1. Without
    ``allow_private_urls`` the same loopback server (and the cloud metadata address) is refused
    before any request."""
    routes = {
        "/page.html": ("text/html", b"<html><body>not an image</body></html>"),
        "/fake.png": ("image/png", b"GIF89a but not really"),
        "/huge.png": ("image/png", b"\x89PNG" + os.urandom(TOO_BIG)),
        "/bomb.png": ("image/png", pixel_bomb(10_000, 10_000)),
        "/ok.png": ("image/png", png_bytes(40, 30)),
    }
    with ImageServer(routes) as images:
        host_urls = [images.url + "/ok.png", "http://169.254.169.254/latest/meta-data/"]
        script = [calls(*[("download_image", {"url": url}) for url in host_urls]), completion(ANSWER)]
        with endpoint(script) as server:
            guarded = harness.play(model(server), web=lambda task: WebTools()).ended()
        assert images.requests == [], "a model-chosen host address must not be fetched"
        urls = [images.url + path for path in routes]
        script = [calls(*[("download_image", {"url": url}) for url in urls]), completion(ANSWER)]
        limits = DownloadLimits(timeout=5)
        with endpoint(script) as server:
            trace = harness.play(
                model(server), web=lambda task: WebTools(allow_private_urls=True, limits=limits)
            ).ended()
    refused = [o["tool_result"]["error"] for o in observations(guarded)]
    assert "127.0.0.1 is a loopback address" in refused[0] and "169.254.169.254" in refused[1], refused
    seen = observations(trace)
    results = [o["tool_result"] for o in seen]
    assert [r["ok"] for r in results] == [False, False, False, False, True]
    assert "is not an image that can be read (served as text/html)" in results[0]["error"]
    assert "is not an image that can be read (served as image/png)" in results[1]["error"]
    assert f"larger than the {20 * 1024**2}-byte limit" in results[2]["error"]
    assert "10000x10000 is more than the 64000000-pixel limit" in results[3]["error"]
    assert [o["execution"] is None for o in seen] == [True, True, True, True, False]
    added = seen[4]["images"]
    assert [(i["index"], i["origin"], i["width"], i["height"]) for i in added] == [(1, "download", 40, 30)]
    assert trace.of_kind("episode_end")[0]["totals"]["images"] == 2


# -- the host and the engine -----------------------------------------------------------------------------------------


@on_host
def test_harness_sigkilled_mid_episode_resumes(harness: Harness) -> None:
    """``pixelbox run`` SIGKILLed while an episode's code runs: the finished episodes are kept byte for
    byte, the torn one reads back unfinished and is set aside as ``.partial-1``, resume redoes it."""
    tasks, recordings = write_run_inputs(harness.root)
    out = harness.root / "run"
    first = background(command(tasks, recordings, out), harness.root)
    torn: Path | None = None
    deadline = time.monotonic() + WAIT_S
    while torn is None and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        if finished(out):
            for path in (out / "episodes").glob("*.jsonl"):
                records = read_trace(path).records
                if path.stem not in finished(out) and records and records[-1]["kind"] == "action":
                    torn = path  # its code is sleeping in the kernel right now
    first.kill()
    first.wait()
    assert torn is not None, "never caught an episode mid-execution"
    reap(first.pid)
    assert not list(Path("/tmp").glob(f"pbx-{first.pid}.*")), "cleanup left the killed run's workspaces"

    done_before = finished(out)
    kept = {task_id: digest(out / "episodes" / f"{task_id}.jsonl") for task_id in done_before}
    partial = read_trace(torn)
    assert not partial.finished and partial.records[-1]["kind"] == "action"
    assert [r["seq"] for r in partial.records] == list(range(len(partial.records)))
    torn_digest = digest(torn)

    second = subprocess.Popen(
        [*command(tasks, recordings, out), "--concurrency", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    stdout, stderr = second.communicate(timeout=300)
    assert second.returncode == 0, stderr.decode()
    assert not list(Path("/tmp").glob(f"pbx-{second.pid}.*")), "the resumed run left workspaces"
    report = json.loads(stdout)
    assert report["skipped"] == len(done_before) and report["counts"] == {"answered": report["total"]}
    played = harness.adopt(out)
    for task_id, before in kept.items():
        assert digest(out / "episodes" / f"{task_id}.jsonl") == before, f"{task_id} was redone"
    assert digest(torn.with_name(torn.name + ".partial-1")) == torn_digest, "the torn trace must be kept as is"
    for path in (out / "episodes").glob("*.jsonl"):
        played.ended(path.stem)
    assert_nothing_leaked(out)


def _workspace_file(trace_path: Path, name: str, timeout: float = WAIT_S) -> str:
    """Wait until the episode's code has created ``name`` in its workspace; return the container id."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if trace_path.exists():
            starts = read_trace(trace_path).of_kind("episode_start")
            runtime = starts[0]["runtime"] if starts else None
            if runtime and (Path(runtime["workspace"]) / name).exists():
                return str(runtime["isolation"]["container_id"])
        time.sleep(0.05)
    raise AssertionError(f"the episode's code never created {name}")


@pytest.mark.parametrize(
    ("harness", "how"),
    [("runc", "kill"), ("runc", "rm"), ("runsc", "kill")],
    ids=["runc-kill", "runc-rm", "runsc-kill"],
    indirect=["harness"],
)
def test_container_killed_mid_episode(harness: Harness, how: str) -> None:
    """The episode's container is killed (``docker kill``) or removed (``docker rm -f``) from outside
    while a cell runs: the cell is a ``crashed`` observation, the next cell runs on a fresh kernel and
    says state was lost, and the episode ends normally. (Restarting the engine is the next case, on a
    private engine: the machine's is shared; see docs/security.md.)"""
    script = [
        completion("<code>import time\nx = 1\nopen('started', 'w').close()\ntime.sleep(300)</code>"),
        completion("<code>print(x)</code>"),
        completion("<code>print('fresh')</code>"),
        completion(ANSWER),
    ]
    with endpoint(script) as server, ThreadPoolExecutor(1) as pool:
        running = pool.submit(harness.play, model(server), budgets=BudgetLimits(execution_timeout=400))
        container = _workspace_file(harness.root / "run0" / "episodes" / "t1.jsonl", "started")
        container_fault(container, how)
        played = running.result(timeout=WAIT_S)
    trace = played.ended()
    crashed, lost, fresh = executions(trace)
    assert crashed["status"] == "crashed" and "SIGKILL" in crashed["crash_reason"], crashed
    assert crashed["state_lost"] and "The Python kernel died" in observations(trace)[0]["shown"]
    assert lost["status"] == "error" and lost["error"]["ename"] == "NameError"
    assert lost["restarted"] and lost["state_lost"] and "kernel was replaced" in observations(trace)[1]["shown"]
    assert fresh["status"] == "ok" and fresh["stdout"] == "fresh\n" and not fresh["state_lost"]
    assert not docker_client().containers.list(all=True, filters={"id": container})
    assert container not in restore.restore_ids() and container not in criu.restore_ids()


@pytest.fixture
def private_engine() -> Iterator[PrivateDockerd]:
    """A Docker engine of this test's own (see ``private_dockerd``), holding the kernel image, that
    this process's sandboxes use until the test ends; the machine's engine is never restarted."""
    from pixelbox.runtime import docker_engine
    from pixelbox.runtime.backends.docker import DockerBackend
    from pixelbox.runtime.image import kernel_image_tag

    engine = PrivateDockerd()
    try:
        engine.start()
        engine.load_image(kernel_image_tag())
        with pytest.MonkeyPatch.context() as patch:  # undone before the harness checks for leaks
            patch.setenv("DOCKER_HOST", engine.host)
            patch.setattr(docker_engine, "_shared", [])
            DockerBackend.forget()
            yield engine
    finally:
        DockerBackend.forget()
        engine.remove()


@pytest.mark.parametrize("harness", ["runc"], indirect=True)
def test_docker_daemon_restarted_mid_episode(harness: Harness, private_engine: PrivateDockerd) -> None:
    """The engine running the episode's container is restarted while a cell runs: the cell is a
    ``crashed`` observation (the engine stopped the container), the episode goes on and ends normally
    on a fresh container, its trace is intact, and no container is left once the engine is back. The
    engine is a private one of this test's own, so no other process's containers are touched."""
    script = [
        completion("<code>import time\nx = 1\nopen('started', 'w').close()\ntime.sleep(300)</code>"),
        completion("<code>print('after the restart')</code>"),
        completion(ANSWER),
    ]
    with endpoint(script) as server, ThreadPoolExecutor(1) as pool:
        running = pool.submit(harness.play, model(server), budgets=BudgetLimits(execution_timeout=400))
        container = _workspace_file(harness.root / "run0" / "episodes" / "t1.jsonl", "started")
        private_engine.restart()
        played = running.result(timeout=WAIT_S)
    trace = played.ended()
    stopped, after = executions(trace)
    assert stopped["status"] == "crashed" and stopped["state_lost"], stopped
    assert after["status"] == "ok" and after["stdout"] == "after the restart\n" and after["restarted"], after
    assert not docker_client().containers.list(all=True, filters={"id": container})
    assert docker_client().info()["DockerRootDir"] == str(private_engine.root / "data"), "not the private engine"
