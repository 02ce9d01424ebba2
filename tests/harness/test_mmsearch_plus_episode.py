"""MMSearch-Plus end to end: the real runner, sandbox and OpenAI agent against a local chat-completions server,
Serper-, Jina- and imgbb-like servers, an encrypted arrow dataset; Set-of-Mark zoom checked against the drawn box;
record then replay; the round cap; the judge on a local endpoint."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from pixelbox.harness.agents.openai_agent import OpenAIAgent, OpenAIConfig
from pixelbox.harness.episode.budgets import BudgetLimits
from pixelbox.harness.runner import WebConfig, run_tasks
from pixelbox.harness.suites import SUITES
from pixelbox.harness.suites.mmsearch_plus import som
from pixelbox.harness.traces import read_trace
from pixelbox.runtime.options import SandboxOptions
from tests.conftest import require_backend
from tests.harness.servers import ChatCompletionsServer, ImgbbServer, JinaServer, SerperServer, completion
from tests.harness.test_mmsearch_plus_tasks import released, row

SOM = SUITES.get("mmsearch-plus-som")
FULL = SUITES.get("mmsearch-plus")
SIGN = (230, 60, 360, 130)


def _scene() -> bytes:
    image = Image.new("RGB", (400, 300), (240, 240, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((30, 40, 150, 200), fill=(20, 60, 160))
    draw.rectangle(SIGN, fill=(200, 30, 30))
    draw.ellipse((250, 180, 330, 260), fill=(30, 150, 40))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def tasks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PIXELBOX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SERPER_API_KEY", "serper-test")
    monkeypatch.setenv("IMGBB_API_KEY", "imgbb-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("JINA_API_KEY", raising=False)
    rows = [row("What does the red sign advertise?", ["Lumen Fest", "Lumen Festival"], [_scene()])]
    return SOM.load_tasks(released(rows, tmp_path / "data", shards=1))


def _web(tmp_path: Path, mode: Any, serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer) -> WebConfig:
    """The real providers' clients pointed at the local servers, with the per-task record/replay cache."""
    return WebConfig(
        cache_root=tmp_path / "web",
        cache_mode=mode,
        serper_url=serper.url,
        jina_url=jina.url,
        imgbb_url=imgbb.url,
        allow_private_urls=True,
    )


def _run(tmp_path: Path, suite: Any, tasks: Any, server: Any, web: Any, name: str, **kw: Any) -> Any:
    config = OpenAIConfig(model="local-vlm", base_url=server.base_url, api_key="sk-test")
    return run_tasks(
        tasks,
        agent_factory=lambda task: OpenAIAgent(config),
        mode="atm",
        out_dir=tmp_path / name,
        sandbox_options=SandboxOptions(**kw.pop("options", {"backend": "local"})),
        budgets=kw.pop("budgets", suite.budgets()),
        web=web,
        progress=False,
        suite=suite,
    )


def _image(part: dict[str, Any]) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))).convert("RGB")


PAGE_JSON = '{"web_info": "Lumen Fest is a light festival.", "related_info": "The red sign is its poster."}'


@pytest.mark.parametrize("backend", ["local", "runsc"])
def test_set_of_mark_episode_zoom_is_the_drawn_box(
    tmp_path: Path, tasks: Any, serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer, backend: str
) -> None:
    options = require_backend(backend)
    (task,) = tasks
    marks = som.marks_for(task.images)
    sign = max(marks, key=lambda m: som._iou(m.box, SIGN))
    jina.pages["https://example.org/lumen-fest-sign/1"] = ("Lumen", "Lumen Fest is held every June.")
    script = [
        completion("Zoom into the sign.", [("zoom_in", {"index": sign.index})]),
        completion("Search the sign.", [("image_search", {"index": sign.index}), ("zoom_in", {"index": 99})]),
        completion("The results show Lumen Fest posters."),  # the image-search summary
        completion("", [("text_search", {"queries": ["lumen fest sign"]})]),
        completion(PAGE_JSON),  # result 1 (page read)
        completion("not json at all"),  # result 2 (snippet only)
        completion(PAGE_JSON),  # result 3
        completion("It is Lumen Fest. <answer>the Lumen Festival</answer>"),
    ]
    web = _web(tmp_path, "record", serper, jina, imgbb)
    with ChatCompletionsServer(script) as server:
        summary = _run(tmp_path, SOM, tasks, server, web, "run", options=options)
        bodies = server.bodies()
    assert summary.counts == {"answered": 1}

    first = bodies[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["zoom_in", "image_search", "text_search"]
    content = first["messages"][1]["content"]
    assert content[0]["text"] == "Image 1:" and content[2]["text"].startswith("Image 1 with numbered regions (")
    overlay = _image(content[3])
    x1, y1, x2, y2 = sign.box
    assert overlay.getpixel((x2 - 1, (y1 + y2) // 2)) == som.COLOURS[sign.index - 1]  # the box the model saw
    assert content[-1]["text"] == "Question: What does the red sign advertise?"  # decrypted

    # zoom_in: the canonical crop of exactly the drawn box, enlarged, shown to the model
    trace = read_trace(tmp_path / "run" / "episodes" / f"{task.task_id}.jsonl")
    observations = trace.of_kind("observation")
    events = observations[0]["execution"]["events"]
    crop = next(e for e in events if e["op"] == "crop")
    assert crop["params"]["box_px"] == list(sign.box)
    assert crop["params"]["root"] == "input:0"
    (zoom_image,) = observations[0]["images"]
    stored = Image.open(tmp_path / "run" / zoom_image["stored"]).convert("RGB")
    scale = min(5.0, max(1.0, 448 / max(x2 - x1, y2 - y1)))
    assert stored.size == (round((x2 - x1) * round(scale, 3)), round((y2 - y1) * round(scale, 3)))
    original = Image.open(task.images[0]).convert("RGB").crop(sign.box).resize(stored.size, Image.Resampling.LANCZOS)
    assert stored.tobytes() == original.tobytes()
    zoom_turn = bodies[1]["messages"]
    assert zoom_turn[-2]["role"] == "tool" and zoom_turn[-2]["content"].startswith(f"Region {sign.index} of image 1")
    assert _image(zoom_turn[-1]["content"][2]).size == stored.size

    # image_search(index): the crop is uploaded (exactly the region), searched, summarised by the same model
    (uploaded,) = imgbb.uploads.values()
    assert (
        Image.open(io.BytesIO(uploaded)).convert("RGB").tobytes()
        == Image.open(task.images[0]).convert("RGB").crop(sign.box).tobytes()
    )
    summary_parts = bodies[2]["messages"][0]["content"]
    assert _image(summary_parts[0]).size == (400, 300)  # the question's image beside the prompt
    assert "A reverse image search of region" in summary_parts[-1]["text"]
    assert "tools" not in bodies[2]
    image_reply = bodies[3]["messages"][-2]
    assert image_reply["content"].startswith(f"Reverse image search of region {sign.index} of image 1: top 2 results")
    assert "Summary: The results show Lumen Fest posters." in image_reply["content"]
    assert "index must be the number of a marked region" in bodies[3]["messages"][-1]["content"]

    # text_search: top results, each page read (or its snippet) and summarised
    assert "Lumen Fest is held every June." in bodies[4]["messages"][0]["content"][-1]["text"]
    text_reply = bodies[7]["messages"][-1]["content"]
    assert text_reply.startswith('Query "lumen fest sign":\n[1] lumen fest sign - result 1')
    assert "web_info: Lumen Fest is a light festival." in text_reply
    assert "[2] lumen fest sign - result 2" in text_reply and "web_info: not json at all" in text_reply
    assert [a["name"] for a in trace.of_kind("action")] == ["zoom_in", "image_search", "zoom_in", "text_search"]
    assert trace.of_kind("episode_end")[0]["answer"] == "the Lumen Festival"

    # replay: the same episode with no provider and no summariser call
    searches = len(serper.requests)
    replay_script = [script[0], script[1], script[3], script[7]]
    replay = _web(tmp_path, "replay", serper, jina, imgbb)
    with ChatCompletionsServer(replay_script) as server:
        again = _run(tmp_path, SOM, tasks, server, replay, "replayed", options=options)
        assert len(server.bodies()) == 4
    assert again.counts == {"answered": 1} and len(serper.requests) == searches
    replayed = read_trace(tmp_path / "replayed" / "episodes" / f"{task.task_id}.jsonl").of_kind("observation")
    assert [o["shown"] for o in replayed[1:]] == [o["shown"] for o in observations[1:]]

    # "the Lumen Festival" matches an acceptable answer once articles are dropped: judged by the rule
    scores = SOM.score_run(tmp_path / "run", ["match"], progress=False)
    score = scores["episodes"][0]["score"]
    assert score["metrics"]["accuracy"] == 1.0 and score["judge"]["by"] == "rule"
    assert score["metrics"]["zooms"] == 1.0 and score["metrics"]["image_searches"] == 1.0
    assert score["category"] == "Sports" and score["level"] == "difficult"


def test_full_rollout_round_cap_and_judge(
    tmp_path: Path, tasks: Any, serper: SerperServer, jina: JinaServer, imgbb: ImgbbServer
) -> None:
    script = [
        completion("", [("image_search", {"image": 1})]),
        completion("Lumen posters."),  # image summary
        completion("", [("text_search", {"queries": ["a", "b", "c", "d", "e", "f"]})]),  # too many: still a round
        completion("", [("text_search", {"queries": ["lumen"]})]),  # over the cap of 2
        completion("I think it is the light show in June. <answer>June light show</answer>"),
    ]
    web = _web(tmp_path, "record", serper, jina, imgbb)
    with ChatCompletionsServer(script) as server:
        summary = _run(tmp_path, FULL, tasks, server, web, "run", budgets=BudgetLimits(max_rounds=6, max_tool_calls=2))
        bodies = server.bodies()
    assert summary.counts == {"answered": 1}
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == ["text_search", "image_search"]
    assert len(bodies[0]["messages"][1]["content"]) == 3  # the image, no overlay, the question
    (uploaded,) = imgbb.uploads.values()
    assert uploaded == tasks[0].images[0].read_bytes()  # the whole image
    assert bodies[3]["messages"][-1]["content"] == "Error: at most 5 queries per round, got 6"
    capped = bodies[4]
    assert capped["messages"][-1]["content"].startswith("Error: the limit of 20 search rounds is reached")
    assert "tools" not in capped  # the answer turn offers no tools

    judge_replies = [completion("Same festival? No: a show is not the festival.\nCorrect: no")]
    with ChatCompletionsServer(judge_replies) as judge:
        spec = f"openai:judge-model@{judge.base_url}"
        scores = FULL.score_run(tmp_path / "run", [spec], progress=False)
        (asked,) = judge.bodies()
        again = FULL.score_run(tmp_path / "run", [spec], progress=False)  # from the cache: no second request
        assert len(judge.bodies()) == 1
    prompt = asked["messages"][0]["content"]
    assert "- Lumen Fest\n- Lumen Festival" in prompt and "Prediction: June light show" in prompt
    for result in (scores, again):
        score = result["episodes"][0]["score"]
        assert score["metrics"]["accuracy"] == 0.0 and score["judge"]["by"].startswith("mmsearch-plus:judge-model@")
