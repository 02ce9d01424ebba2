"""AgentVista end to end: the real runner, sandboxes and OpenAI agent against a local chat-completions server,
with Serper-, Jina- and imgbb-like servers for the web tools; then the official judge on a local endpoint."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pixelbox.harness.agents.openai_agent import OpenAIAgent, OpenAIConfig
from pixelbox.harness.runner import run_tasks
from pixelbox.harness.suites import SUITES
from pixelbox.harness.traces import read_trace
from pixelbox.harness.web import ImgbbHost, JinaReader, SerperProvider, WebTools
from pixelbox.runtime.options import SandboxOptions
from tests.conftest import require_backend
from tests.harness.episodes import task_image
from tests.harness.servers import ChatCompletionsServer, ImgbbServer, JinaServer, SerperServer, completion

SUITE = SUITES.get("agentvista")


def _tasks(root: Path, *, images: int) -> Any:
    names = [task_image(root / f"img{k}.png", (400, 300) if k == 0 else (200, 150)).name for k in range(images)]
    record = {"question_id": f"t{images}", "problem": "<image>" * images + "\nWhat is written?", "images": names}
    (root / "val.json").write_text(json.dumps([{**record, "solution": "red box"}]))
    return SUITE.load_tasks(root / "val.json")


def _decoded(part: dict[str, Any]) -> Image.Image:
    url = part["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def _result(message: dict[str, Any]) -> str:
    assert message["role"] == "tool"
    return str(json.loads(message["content"])["result"])


def _run(tmp_path: Path, tasks: Any, server: ChatCompletionsServer, web: Any, **options: Any) -> Any:
    config = OpenAIConfig(model="local-vlm", base_url=server.base_url, api_key="sk-test")
    return run_tasks(
        tasks,
        agent_factory=lambda task: OpenAIAgent(config),
        mode="gen",
        out_dir=tmp_path / "run",
        sandbox_options=SandboxOptions(**(options or {"backend": "local"})),
        budgets=SUITE.budgets(),
        web=web,
        progress=False,
        suite=SUITE,
    )


def test_every_tool_in_one_episode(
    tmp_path: Path, serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("IMGBB_API_KEY", raising=False)
    crop = "print(original_image.size, image.size)\noriginal_image.crop((240, 60, 360, 140))"
    script = [
        completion("Crop the box.", [("code_interpreter", {"code": crop}), ("web_search", {"query": "ignored"})]),
        completion("", [("web_search", {"query": "red box", "max_results": 2})]),
        completion("", [("image_search", {"search_type": "reverse", "image_url": "tool_image_1"})]),
        completion("", [("image_search", {"query": "red box"})]),
        completion("", [("visit", {"url": "https://example.org/short", "goal": "how tall"})]),
        completion('```json\n{"evidence": "324 metres", "summary": "The tower is 324 m tall."}\n```'),  # the summary
        completion("", [("nonexistent", {})]),
        completion("It is a red box. <answer>red box</answer>"),
    ]
    web = lambda task: WebTools(  # noqa: E731
        search=SerperProvider("serper-test", base_url=serper.url),
        reader=JinaReader(base_url=jina.url),
        host=ImgbbHost("imgbb-test", base_url=imgbb.url),
        allow_private_urls=True,
    )
    with ChatCompletionsServer(script) as server:
        summary = _run(tmp_path, _tasks(tmp_path / "data", images=1), server, web)
        bodies = server.bodies()
    assert summary.counts == {"answered": 1}
    first = bodies[0]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "code_interpreter",
        "web_search",
        "visit",
        "image_search",
    ]
    user = first["messages"][1]["content"]
    assert _decoded(user[0]).size == (392, 308)  # 400x300 prepared as officially: sides multiples of 28
    assert user[1] == {"type": "text", "text": "What is written?"}

    sent = bodies[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert [c["function"]["name"] for c in sent[2]["tool_calls"]] == ["code_interpreter"]  # only the first call
    code_text = _result(sent[3])
    assert "stdout:\n\n```\n(392, 308) (392, 308)\n" in code_text
    assert "display_data:\n\n```\n[Image: tool_image_1, file: tool_image_1.png]\n```" in code_text
    assert _decoded(sent[4]["content"][0]).size == (120, 80)
    assert sent[4]["content"][1]["text"].startswith("Images from tool output: ")

    search_text = _result(bodies[2]["messages"][-1])
    assert search_text == (
        "Search results for 'red box':\n\n"
        "1. [red box - result 1](https://example.org/red%20box/1)\n   About red box (gl=us, hl=en).\n\n"
        "2. [red box - result 2](https://example.org/red%20box/2)\n   About red box (gl=us, hl=en)."
    ).replace("%20", "-")

    reverse = _result(bodies[3]["messages"][-1])
    assert reverse.startswith("```\nImage: https://example.org/m/1.jpg, Text: match 1 for ")
    (uploaded,) = imgbb.uploads.values()
    stored = tmp_path / "run" / "episodes" / "t1.images" / "tool_image_1.png"
    assert uploaded == stored.read_bytes()  # the configured host got exactly the model's crop

    images_text = _result(bodies[4]["messages"][-1])
    assert images_text.count("Image: https://img.example.org/") == 5  # the official effective default of 5
    assert images_text.startswith("```\nImage: https://img.example.org/red-box/1.jpg, Text: red box picture 1, ")

    summary_request = bodies[5]
    assert "tools" not in summary_request and summary_request["model"] == "local-vlm"
    assert "The tower is 324 metres tall." in summary_request["messages"][0]["content"]
    visit_text = _result(bodies[6]["messages"][-1])
    assert visit_text == (
        "The useful information in https://example.org/short for user goal 'how tall' as follows:\n\n"
        "**Evidence in page:**\n324 metres\n\n**Summary:**\nThe tower is 324 m tall.\n\n"
    )
    assert "no tool named 'nonexistent'" in _result(bodies[7]["messages"][-1])

    trace = read_trace(tmp_path / "run" / "episodes" / "t1.jsonl")
    actions = trace.of_kind("action")
    assert [a["name"] for a in actions] == [
        "code_interpreter",
        "web_search",
        "image_search",
        "image_search",
        "visit",
        "nonexistent",
    ]
    assert actions[0]["type"] == "code" and actions[0]["code"] == crop
    crop_events = [e for e in trace.of_kind("observation")[0]["execution"]["events"] if e["op"] == "crop"]
    assert crop_events[0]["params"]["box_px"] == [240, 60, 360, 140]
    assert trace.of_kind("observation")[4]["summary_turns"][0]["text"].startswith("```json")
    end = trace.of_kind("episode_end")[0]
    assert end["answer"] == "red box" and end["totals"]["searches"]["image_search"] == 2

    with ChatCompletionsServer([completion("Score: 1\nExplanation: same thing")]) as judge:
        spec = f"openai:judge-model@{judge.base_url}"
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        scores = SUITE.score_run(tmp_path / "run", [spec], progress=False)
        again = SUITE.score_run(tmp_path / "run", [spec], progress=False)
        judged = judge.bodies()
    assert len(judged) == 1  # the second scoring came from the judge cache
    assert (
        judged[0]["temperature"] == 0.2
        and "Reference answer: red box" in judged[0]["messages"][1]["content"][0]["text"]
    )
    score = scores["episodes"][0]["score"]
    assert score["prediction"] == "red box" and score["metrics"]["accuracy"] == 1.0
    assert score["metrics"]["answer_after_crop"] == 1.0 and score["metrics"]["code_calls"] == 1.0
    assert again["episodes"][0]["score"]["judge"]["cached"] is True
    paths = SUITE.write_report(tmp_path / "run")
    assert Path(paths["html"]).is_file() and "Accuracy" in Path(paths["markdown"]).read_text()


def test_reverse_search_uploads_nothing_without_a_configured_host(
    tmp_path: Path, serper: SerperServer, imgbb: ImgbbServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("IMGBB_API_KEY", raising=False)
    script = [
        completion("", [("image_search", {"search_type": "reverse", "image_url": "original_image"})]),
        completion("", [("image_search", {"search_type": "reverse", "image_url": "observation_1"})]),
        completion("No answer tag here."),
    ]
    web = lambda task: WebTools(  # noqa: E731
        search=SerperProvider("serper-test", base_url=serper.url), host=ImgbbHost(base_url=imgbb.url)
    )
    with ChatCompletionsServer(script) as server:
        summary = _run(tmp_path, _tasks(tmp_path / "data", images=1), server, web)
        bodies = server.bodies()
    assert summary.counts == {"no_answer": 1}
    assert "IMGBB_API_KEY" in _result(bodies[1]["messages"][-1])
    assert "'observation_1' is not an image of this task" in _result(bodies[2]["messages"][-1])
    assert imgbb.requests == [] and serper.requests == []
    end = read_trace(tmp_path / "run" / "episodes" / "t1.jsonl").of_kind("episode_end")[0]
    assert end["answer"] == "Error: Could not parse model response."


@pytest.mark.parametrize("backend", ["local", "runsc"])
def test_two_images_named_as_officially(tmp_path: Path, backend: str) -> None:
    options = require_backend(backend)
    code = (
        "print(original_image.size, original_image_1.size, 'original_image_2' in dir(), image is original_image)\n"
        "original_image_1.crop((0, 0, 98, 70))"
    )
    script = [
        completion("Look at the second.", [("code_interpreter", {"code": code})]),
        completion("", [("code_interpreter", {"code": "print(tool_image_1.size)"})]),
        completion("<answer>red box</answer>"),
    ]
    with ChatCompletionsServer(script) as server:
        summary = _run(tmp_path, _tasks(tmp_path / "data", images=2), server, None, **options)
        bodies = server.bodies()
    assert summary.counts == {"answered": 1}
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == ["code_interpreter"]  # web off
    user = bodies[0]["messages"][1]["content"]
    assert [_decoded(p).size for p in user[:2]] == [(392, 308), (196, 140)]
    assert "(392, 308) (196, 140) False True" in _result(bodies[1]["messages"][3])
    assert "[Image: tool_image_1, file: tool_image_1.png]" in _result(bodies[1]["messages"][3])
    assert "(98, 70)" in _result(bodies[2]["messages"][-1])
    scores = SUITE.score_run(tmp_path / "run", ["match"], progress=False)
    assert scores["episodes"][0]["score"]["metrics"]["accuracy"] == 1.0


def test_a_forged_event_fails_its_episode_not_the_scoring(tmp_path: Path) -> None:
    """A trace holding an event of the wrong shape (``output: []``): that episode scores 0 and is not
    infrastructure; scoring of the run goes on (issue 12, self-exclusion)."""
    from tests.scoring.test_integrity import forge_event

    code = "original_image.crop((0, 0, 98, 70))"
    script = [completion("", [("code_interpreter", {"code": code})]), completion("<answer>red box</answer>")]
    with ChatCompletionsServer(script) as server:
        summary = _run(tmp_path, _tasks(tmp_path / "data", images=1), server, None, **require_backend("local"))
    assert summary.counts == {"answered": 1}
    (trace,) = (tmp_path / "run" / "episodes").glob("*.jsonl")
    forge_event(trace, output=[])
    scores = SUITE.score_run(tmp_path / "run", ["match"], progress=False)
    (record,) = scores["episodes"]
    score = record["score"]
    assert score["metrics"]["accuracy"] == 0.0 and score["infrastructure"] is None, score
    assert "damaged_trace" in score["damaged"]
