"""``--agent deepeyes:MODEL`` / ``thyme:MODEL``: the official runner variants' prompt and text tool syntax,
against a real OpenAI-compatible server on loopback whose scripted replies are in those formats, through
the real runner on local sandboxes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pixelbox.harness.agents import OpenAIAgent, OpenAIConfig
from pixelbox.harness.agents.variants import TextToolAgent, parse_tool_log, system_prompt, text_conversation
from pixelbox.harness.runner import run_tasks
from pixelbox.harness.traces import read_trace
from pixelbox.runtime.options import SandboxOptions
from tests.harness.demo_runs import QUERY, demo_tasks, web_cache
from tests.harness.servers import ChatCompletionsServer, completion
from tests.harness.variant_runs import play

CROP = """from PIL import Image
img = Image.open("image_0.png")
w, h = img.size
img.crop((int(w * 0.75), int(h * 0.75), w, h)).save("image_1.png")
print("saved")
"""
SEARCH = json.dumps([{"tool_name": "google_search", "arguments": {"query": QUERY["query"]}}])
REPLIES = [
    f"<think>I should check what the tags mean.</think>\n<tool_log>\n{SEARCH}\n</tool_log>",
    f"<think>The sign is small; crop it.</think>\n<code>\n{CROP}</code>",
    "<think>The crop shows the sign.</think>\n<answer>GATE 47</answer>",
]


def test_tool_log_is_read_as_the_official_parser_reads_it() -> None:
    text = 'x <tool_log>[[{"tool": "fetch_webpage", "url": "https://a.b"}]]</tool_log>'
    [call] = parse_tool_log(text)
    assert (call.name, call.arguments()) == ("fetch_webpage", {"url": "https://a.b"})
    [kept] = parse_tool_log('<tool_log>[{"name": "google_search", "arguments": {"query": "q"}}, 3]</tool_log>')
    assert kept.arguments() == {"query": "q"}
    assert parse_tool_log('<tool_log>{"tool_name": "x"}</tool_log>') == [], "an object, not an array: ignored"
    assert parse_tool_log("<tool_log>not json</tool_log>") == []


@pytest.mark.parametrize("variant", ["deepeyes", "thyme"])
def test_a_variant_episode_runs_with_text_tool_calls(tmp_path: Path, variant: str) -> None:
    tasks = demo_tasks(tmp_path / "demo", ["demo-crop-sign"])
    bodies = play(tasks, REPLIES, variant, tmp_path / "run", web_cache(tmp_path / "web", tasks))
    assert len(bodies) == 3 and all("tools" not in b for b in bodies), "no function-calling parameter"
    first_system = bodies[0]["messages"][0]
    assert first_system["role"] == "system" and "<tool_log>" in first_system["content"]
    assert "google_search" in first_system["content"] and "image_0.png" in first_system["content"]
    results = bodies[1]["messages"][-1]
    assert results["role"] == "user" and results["content"].startswith("<tool_results>")
    [shown] = json.loads(results["content"].removeprefix("<tool_results>").removesuffix("</tool_results>"))
    assert shown["tool_name"] == "google_search" and "Yellow tags mark" in shown["output"]
    assert all("tool_calls" not in m and m["role"] != "tool" for b in bodies for m in b["messages"])
    reminded = bodies[1]["messages"][0]["content"].startswith("Reminder:")
    assert reminded == (variant == "thyme") and not bodies[0]["messages"][0]["content"].startswith("Reminder:")
    trace = read_trace(tmp_path / "run" / "episodes" / "demo-crop-sign.jsonl")
    actions = [(a["type"], a["name"]) for a in trace.of_kind("action")]
    assert actions == [("tool", "google_search"), ("code", "python")]
    assert trace.of_kind("episode_start")[0]["model"] == f"{variant}:served"
    assert trace.of_kind("episode_end")[0]["answer"] == "GATE 47"
    [observed] = [o for o in trace.of_kind("observation") if isinstance(o.get("execution"), dict)]
    assert observed["execution"]["status"] == "ok", observed["execution"]
    names = [a["name"] for a in observed["execution"]["artifacts"]]
    assert names == ["image_2.png"], "image_0.png was opened; the crop of turn 1 (after the search) is image_2.png"


def test_function_call_history_becomes_text() -> None:
    messages = [
        {"role": "system", "content": "ours"},
        {"role": "user", "content": [{"type": "text", "text": "Q?"}]},
        {"role": "assistant", "content": "a", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "google_search", "arguments": '{"query": "q"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "found"},
    ]  # fmt: skip
    out = text_conversation("deepeyes", messages, [])
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[0]["content"] != "ours" and out[2] == {"role": "assistant", "content": "a"}
    assert json.loads(out[3]["content"][len("<tool_results>") : -len("</tool_results>")]) == [
        {"tool_name": "google_search", "arguments": {"query": "q"}, "output": "found"}
    ]


def test_the_atomic_variant_prompt_offers_image_tools_in_tool_log_and_no_code() -> None:
    from pixelbox.harness.tools import offered_tools

    atomic = system_prompt("deepeyes", offered_tools("atm", web=True), 0)
    assert "<code>" not in atomic and '"tool_name"' in atomic and "- crop:" in atomic and "image_index" in atomic
    code = system_prompt("deepeyes", offered_tools("gen", web=True), 0)
    assert "<code>" in code and "image_0.png" in code and "- crop:" not in code


def test_an_atomic_variant_episode_calls_image_tools_in_tool_log(tmp_path: Path) -> None:
    tasks = demo_tasks(tmp_path / "demo", ["demo-crop-sign"])
    crop = json.dumps([{"tool_name": "crop", "arguments": {"image_index": 0, "bbox_2d": [750, 750, 1000, 1000]}}])
    replies = [f"<think>Zoom in.</think><tool_log>{crop}</tool_log>", "<think>Read.</think><answer>GATE 47</answer>"]
    with ChatCompletionsServer([completion(r) for r in replies]) as server:
        config = OpenAIConfig(model="served", base_url=server.base_url, api_key="sk-test")
        summary = run_tasks(
            tasks,
            agent_factory=lambda task: TextToolAgent(OpenAIAgent(config), "thyme"),
            mode="atm",
            out_dir=tmp_path / "run",
            sandbox_options=SandboxOptions(backend="local"),
            progress=False,
        )
        bodies = server.bodies()
    assert summary.counts == {"answered": 1}, summary.failed
    assert all("tools" not in b for b in bodies) and "- crop:" in bodies[0]["messages"][0]["content"]
    [shown] = json.loads(
        bodies[1]["messages"][-2]["content"].removeprefix("<tool_results>").removesuffix("</tool_results>")
    )
    assert shown["tool_name"] == "crop" and shown["arguments"]["bbox_2d"] == [750, 750, 1000, 1000]
    trace = read_trace(tmp_path / "run" / "episodes" / "demo-crop-sign.jsonl")
    assert [(a["type"], a["name"]) for a in trace.of_kind("action")] == [("tool", "crop")]
