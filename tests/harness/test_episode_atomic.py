"""Atomic mode end to end: image tools run in the sandbox's kernel, bad calls are tool errors, web tools work.

The OpenAI-compatible agent talks to a real local chat-completions server; the web providers are
real local HTTP servers; everything runs in real sandboxes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image

from pixelbox.harness.agents import OpenAIAgent, OpenAIConfig, ReplayAgent
from pixelbox.harness.runner import run_tasks
from pixelbox.harness.web import ImgbbHost, JinaReader, SerperProvider, WebCache, WebTools
from pixelbox.runtime import SandboxOptions
from tests.harness.episodes import executions, make_task, trace_of
from tests.harness.servers import (
    ChatCompletionsServer,
    ImageServer,
    ImgbbServer,
    JinaServer,
    SerperServer,
    completion,
    png_bytes,
)

CROP = {"image_index": 0, "bbox_2d": [600, 200, 900, 467], "label": "the box"}


def call(name: str, arguments: Any, call_id: str) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "name": name, "arguments": text}


def test_atomic_episode_runs_tools_and_survives_bad_calls(tmp_path: Path) -> None:
    turns = [
        {
            "text": "Zoom on the box first.",
            "tool_calls": [
                call("crop", CROP, "c1"),
                call("crop", {"image_index": 0, "bbox_2d": [900, 0, 100, 100]}, "c2"),
                call("crop", {"image_index": 7, "bbox_2d": [0, 0, 10, 10]}, "c3"),
                call("sharpen_more", {"image_index": 0}, "c4"),
            ],
        },
        {
            "text": "",
            "tool_calls": [
                call("rotate", '{"image_index": 1, "angle": 90', "c5"),
                call("rotate", {"image_index": 1, "angle": 90}, "c6"),
                call("enhance", {"image_index": 2, "contrast": "high"}, "c7"),
            ],
        },
        "<answer>red</answer>",
    ]
    summary = run_tasks(
        [make_task(tmp_path / "data")],
        agent_factory=lambda task: ReplayAgent.from_turns(turns),
        mode="atm",
        out_dir=tmp_path / "run",
        sandbox_options=SandboxOptions(backend="local"),
        progress=False,
    )
    assert summary.counts == {"answered": 1}
    trace = trace_of(tmp_path / "run", "t1")
    shown = {o["action_id"]: o["shown"] for o in trace.of_kind("observation")}
    assert shown["r1.1"].startswith("crop [the box]: image 0 -> image 1 (transformed_image_1.png, 120x80)")
    assert (
        shown["r1.2"].startswith("Error: ToolError: crop: bbox_2d must be [x1, y1, x2, y2]")
        and "empty box" in shown["r1.2"]
    )
    assert (
        "image_index 7 does not exist; the images are: 0 (image_t1_0.png), 1 (transformed_image_1.png)" in shown["r1.3"]
    )
    assert "no tool named 'sharpen_more'" in shown["r1.4"] and "edge_detect" in shown["r1.4"]
    assert "not valid JSON" in shown["r2.1"]
    assert shown["r2.2"].startswith("rotate: image 1 -> image 2 (transformed_image_2.png, 80x120)")
    assert "contrast must be a number" in shown["r2.3"]

    runs = executions(trace)
    assert [e["status"] for e in runs] == ["ok", "error", "error", "error", "ok", "error"]
    crop = next(e for e in runs[0]["events"] if e["op"] == "crop")
    assert (
        crop["api"] == "pixelbox.tools.crop" and crop["src"] is None and crop["params"]["box_px"] == [240, 60, 360, 140]
    )
    rotate = next(e for e in runs[4]["events"] if e["op"] == "rotate")
    assert rotate["inputs"] == ["artifact:1"] and rotate["params"]["angle"] == 90

    messages = [m["message"] for m in trace.of_kind("message")]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2", "c3", "c4", "c5", "c6", "c7"]
    images = [m for m in messages if m["role"] == "user"]
    assert len(images) == 2 and images[0]["content"][1]["text"].startswith("image 1 (transformed_image_1.png")
    stored = trace.of_kind("observation")[5]["images"][0]
    with Image.open(tmp_path / "run" / stored["stored"]) as made:
        assert made.size == (80, 120)
    start = trace.of_kind("episode_start")[0]
    assert start["tools"][:3] == ["crop", "rotate", "flip"] and len(start["tools"]) == 14


def web_tools(serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer, cache: WebCache) -> WebTools:
    return WebTools(
        search=SerperProvider("serper-test", base_url=serper.url),
        reader=JinaReader(base_url=jina.url),
        host=ImgbbHost("imgbb-test", base_url=imgbb.url),
        cache=cache,
        allow_private_urls=True,  # the image is served from 127.0.0.1
    )


def test_openai_agent_in_atomic_mode_with_web_tools_then_offline_replay(
    tmp_path: Path, serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer, images: ImageServer
) -> None:
    images.routes["/logo.png"] = ("image/png", png_bytes(50, 40, (10, 200, 10)))
    logo = images.url + "/logo.png"
    script = [
        completion("Let me look.", [("crop", CROP), ("google_search", {"query": "red box meaning"})]),
        completion(None, [("download_image", {"url": logo}), ("google_lens_search", {"image_index": 1})]),
        completion("", [("fetch_webpage", {"url": "https://example.org/short"}), ("invert", {"image_index": 2})]),
        completion("It is red. <answer>red</answer>"),
    ]
    task = make_task(tmp_path / "data")
    cache_root = tmp_path / "cache"
    with ChatCompletionsServer(script) as server:
        config = OpenAIConfig(model="local-vlm", base_url=server.base_url, api_key="sk-test")
        summary = run_tasks(
            [task],
            agent_factory=lambda t: OpenAIAgent(config),
            mode="atm",
            out_dir=tmp_path / "run",
            sandbox_options=SandboxOptions(backend="local"),
            web=lambda t: web_tools(serper, jina, imgbb, WebCache.for_task(cache_root, t.task_id, "record")),
            progress=False,
        )
        bodies = server.bodies()
    assert summary.counts == {"answered": 1}
    assert len(bodies) == 4
    assert {t["function"]["name"] for t in bodies[0]["tools"]} >= {
        "crop",
        "threshold",
        "google_search",
        "download_image",
    }
    second = bodies[1]["messages"]
    assert [m["role"] for m in second[-4:]] == ["assistant", "tool", "tool", "user"]
    assert "answer for red box meaning" in second[-2]["content"]
    assert second[-1]["content"][2]["image_url"]["url"].startswith("data:image/png;base64,")
    third = bodies[2]["messages"]
    assert "image 2 (downloaded_image_2.png, 50x40)" in third[-3]["content"]
    assert "match 1 for" in third[-2]["content"]
    assert imgbb.uploads  # the crop was uploaded for reverse search

    trace = trace_of(tmp_path / "run", "t1")
    turns = trace.of_kind("turn")
    assert all(t["usage"]["total_tokens"] > 0 for t in turns) and turns[0]["messages"]["images"] == 1
    results = {o["action_id"]: o for o in trace.of_kind("observation")}
    assert results["r1.2"]["tool_result"]["tool"] == "google_search" and results["r1.2"]["tool_result"]["ok"]
    download = results["r2.1"]
    assert download["execution"]["artifacts"][0]["capture"] == "download" and download["images"][0]["index"] == 2
    assert "The tower is 324 metres tall." in results["r3.1"]["shown"]
    invert = next(e for e in results["r3.2"]["execution"]["events"] if e["op"] == "invert")
    assert invert["inputs"] == ["artifact:2"]
    summary_file = json.loads((tmp_path / "run" / "episodes" / "t1.summary.json").read_text())
    assert summary_file["usage"]["total_tokens"] == sum(t["usage"]["total_tokens"] for t in turns)

    served_before = len(serper.requests) + len(jina.requests) + len(images.requests)
    replayed = run_tasks(
        [task],
        agent_factory=lambda t: ReplayAgent.from_file(tmp_path / "run" / "episodes" / "t1.jsonl"),
        mode="atm",
        out_dir=tmp_path / "replayed",
        sandbox_options=SandboxOptions(backend="local"),
        web=lambda t: web_tools(serper, jina, imgbb, WebCache.for_task(cache_root, t.task_id, "replay")),
        progress=False,
    )
    assert replayed.counts == {"answered": 1}
    assert len(serper.requests) + len(jina.requests) + len(images.requests) == served_before
    again = {o["action_id"]: o for o in trace_of(tmp_path / "replayed", "t1").of_kind("observation")}
    assert again["r1.2"]["tool_result"]["source"] == "cache" and again["r1.2"]["shown"] == results["r1.2"]["shown"]
    assert again["r2.1"]["images"][0]["sha256"] == download["images"][0]["sha256"]
