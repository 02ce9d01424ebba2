"""VisualToolBench end to end: ``pixelbox run --suite visualtoolbench`` against a local OpenAI-compatible
server, local SerpAPI, page and weather servers, real sandboxes; then ``pixelbox score`` with a rubric judge
on a local endpoint (hand-checked ARS/APR), scored a second time from the judge cache alone.

The scripted model reads what it needs from the requests it receives (the image paths and the output
directory in the ``python_image_processing`` description), so the tests check what the model is told,
not just what the harness does.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from pixelbox.cli import main
from tests.conftest import require_backend
from tests.harness.servers import ChatCompletionsServer, Request, Response, completion
from tests.suites.vtb_servers import (
    SERP_KEY,
    WEATHER_KEY,
    PageServer,
    SerpApiServer,
    WeatherServer,
    judge_script,
)

TOOL_NAMES = [
    "python_image_processing",
    "python_interpreter",
    "google_search",
    "browser_get_page_text",
    "historical_weather",
    "calculator",
]


def _rubrics(*items: tuple[str, int]) -> str:
    return json.dumps({f"r{n}": {"description": d, "weight": w} for n, (d, w) in enumerate(items, start=1)})


def _dataset(root: Path) -> Path:
    """Two tasks in the official downloader's layout (dataset.json, images/sample_K/)."""
    for k in range(2):
        folder = root / "images" / f"sample_{k}"
        folder.mkdir(parents=True)
        for t, color in enumerate(("white", "yellow")):
            image = Image.new("RGB", (200, 120), color)
            ImageDraw.Draw(image).rectangle((150, 90, 190, 110), fill="black")
            image.save(folder / f"turn_{t}_image_0.png")
        Image.new("RGB", (200, 120), "white").save(folder / "image_0.png")
    single = {
        "id": "single",
        "turncase": "single-turn",
        "prompt_category": "physics",
        "eval_focus": "hybrid_tool_use",
        "turn_prompts": ["What does the sign say, and when is the shop open?"],
        "turn_golden_answers": ["B-7; from 9 to 17."],
        "rubrics_by_turn": [
            _rubrics(
                ("The answer says the sign reads 'B-7'", 5),
                ("Gives the hours 'from 9 to 17'", 3),
                ("Mentions the weather: 'rain'", 4),
            )
        ],
        "image_paths": ["images/sample_0/image_0.png"],
        "images_by_turn_paths": [["images/sample_0/turn_0_image_0.png"]],
    }
    multi = {
        "id": "multi",
        "turncase": "multi-turn",
        "prompt_category": "generalist",
        "eval_focus": "follow_up",
        "turn_prompts": ["How big is the first picture?", "And the second one?"],
        "turn_golden_answers": ["It is 200x120.", "Also 200x120."],
        "rubrics_by_turn": [
            _rubrics(("Gives the size '200x120'", 5)),
            _rubrics(("Gives the size '200x120'", 4), ("Says it is 'yellow'", 2)),
        ],
        "image_paths": ["images/sample_1/image_0.png"],
        "images_by_turn_paths": [["images/sample_1/turn_0_image_0.png"], ["images/sample_1/turn_1_image_0.png"]],
    }
    path = root / "dataset.json"
    path.write_text(json.dumps([single, multi]))
    return path


def _told(request: Request) -> tuple[list[str], str]:
    """The readable images and the output directory the image tool's description names."""
    tools = request.json()["tools"]
    assert [t["function"]["name"] for t in tools] == TOOL_NAMES
    description = tools[0]["function"]["description"]
    images = ast.literal_eval(re.search(r"choose one\): (\[.*?\])\.", description).group(1))  # type: ignore[union-attr]
    save = re.search(r"Save each result in (\S+) as", description).group(1)  # type: ignore[union-attr]
    return images, save


def _crop_and_search(request: Request) -> Response:
    images, save = _told(request)
    code = (
        f"from PIL import Image\nimg = Image.open({images[0]!r})\nsecret = 7\n"
        f"img.crop((140, 80, 200, 120)).resize((180, 120)).save({save!r} + '/transformed_image_0.png')\nprint(img.size)"
    )
    calls = [("python_image_processing", {"code": code}), ("google_search", {"query": "shop hours", "num_results": 3})]
    return completion("", calls)(request)


def _more_tools(page_url: str) -> Any:
    def respond(request: Request) -> Response:
        images, _ = _told(request)
        assert len(images) == 2 and images[1].endswith("/transformed_image_0.png")  # the produced image is listed
        calls = [
            ("browser_get_page_text", {"url": page_url}),
            ("historical_weather", {"location": "Paris, FR", "date": "2024-05-01"}),
            ("calculator", {"expression": "2 ^ 3"}),
            ("python_interpreter", {"code": "print('secret' in dir(), 'np' in dir())"}),
            ("python_image_processing", {"code": "print(secret)"}),  # as if the interpreter remembered
        ]
        return completion("", calls)(request)

    return respond


def _run(tmp_path: Path, dataset: Path, chat: ChatCompletionsServer, ids: str, backend: dict[str, Any]) -> Path:
    out = tmp_path / f"run-{ids}"
    argv = [
        "run",
        "--suite",
        "visualtoolbench",
        "--tasks",
        str(dataset),
        "--ids",
        ids,
        "--agent",
        "openai:vtb-model",
        "--mode",
        "atm",
        "--out",
        str(out),
        "--base-url",
        chat.base_url,
        "--web",
        "auto",
        "--web-allow-private",
        "--no-progress",
        "--backend",
        backend["backend"],
    ]
    if backend.get("runtime"):
        argv += ["--runtime", backend["runtime"]]
    assert main(argv) == 0
    return out


def _tool_results(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"]: ast.literal_eval(m["content"]) for m in body["messages"] if m["role"] == "tool"}


@pytest.fixture
def providers(monkeypatch: pytest.MonkeyPatch) -> Any:
    with SerpApiServer() as serp, WeatherServer() as weather, PageServer() as pages:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("SERP_API_KEY", SERP_KEY)
        monkeypatch.setenv("OPENWEATHER_API_KEY", WEATHER_KEY)
        monkeypatch.setenv("PIXELBOX_SERPAPI_URL", serp.url)
        monkeypatch.setenv("PIXELBOX_OPENWEATHER_URL", weather.url)
        yield serp, weather, pages


@pytest.mark.parametrize("backend_name", ["local", "runsc"])
def test_single_turn_every_tool_then_rubric_scoring(tmp_path: Path, providers: Any, backend_name: str) -> None:
    backend = require_backend(backend_name)
    serp, weather, pages = providers
    dataset = _dataset(tmp_path / "data")
    script = [_crop_and_search, _more_tools(pages.url + "/hours"), completion("The sign reads B-7; open 9 to 17.")]
    with ChatCompletionsServer(script, models=["vtb-model", "m"]) as chat:
        run = _run(tmp_path, dataset, chat, "single", backend)
        bodies = chat.bodies()
    assert len(bodies) == 3 and bodies[0]["temperature"] == 0.0  # the official runner's, for a non-reasoning model
    first = bodies[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[1]["content"][1]["image_url"]["url"].startswith("data:image/jpeg;base64,")

    second = bodies[1]["messages"]
    results = _tool_results(bodies[1])
    image = results["python_image_processing"]
    assert image["ok"] == "true" and image["stdout"] == "(200, 120)\n"
    assert image["output_paths"] == [image["output_path"]] and image["output_path"].endswith("/transformed_image_0.png")
    (shown,) = [m for m in second[2:] if m["role"] == "user"]
    assert "saved by tool call" in shown["content"][0]["text"]
    assert shown["content"][1]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    search = results["google_search"]
    assert search["status"] == "success" and search["total_results"] == 1234 and len(search["results"]) == 3
    assert set(search["results"][0]) == {"title", "snippet", "url", "display_link"}
    (asked,) = serp.requests
    assert asked.query["engine"] == "google" and asked.query["num"] == "3" and asked.query["q"] == "shop hours"

    results = _tool_results(bodies[2])
    page = results["browser_get_page_text"]
    assert page["status"] == "success" and page["title"] == "Opening hours"
    assert "from 9 to 17." in page["text"] and "track()" not in page["text"] and "(c) shop" not in page["text"]
    forecast = results["historical_weather"]
    assert forecast["temperature"]["current"] == "12.3°C" and forecast["conditions"] == "light rain"
    assert [r.path for r in weather.requests] == ["/geo/1.0/direct", "/data/2.5/weather"]
    assert results["calculator"]["status"] == "error" and results["calculator"]["result"] == "Error"
    # a fresh interpreter per call: 'secret' from the first call is gone, the official predefined names are there
    assert results["python_interpreter"] == {"stdout": "False True\n", "stderr": ""}
    relied = results["python_image_processing"]
    assert relied["ok"] == "false" and "NameError" in relied["stderr"] and relied["output_paths"] == []

    trace = [json.loads(line) for line in (run / "episodes" / "single.jsonl").read_text().splitlines()]
    ops = [
        e["op"] for r in trace if r["kind"] == "observation" and r.get("execution") for e in r["execution"]["events"]
    ]
    assert "crop" in ops and trace[-1]["status"] == "answered"

    with ChatCompletionsServer(judge_script(3)) as judge:
        spec = f"openai:judge-model@{judge.base_url}"
        assert main(["score", str(run), "--suite", "visualtoolbench", "--judge", spec, "--quiet"]) == 0
        asked_first = len(judge.bodies())
        scores = json.loads((run / "scores.json").read_text())
        assert main(["score", str(run), "--suite", "visualtoolbench", "--judge", spec, "--quiet"]) == 0
        assert len(judge.bodies()) == asked_first == 3  # scored again from the judge cache: no new call
    (record,) = scores["episodes"]
    metrics = record["score"]["metrics"]
    # r1 (5) met; r2 (3) not met ("open 9 to 17" lacks "from 9 to 17"); r3 (4) not met: ARS 5/12, APR 0
    assert metrics["ars"] == pytest.approx(5 / 12) and metrics["apr"] == 0.0
    assert metrics["image_calls"] == 2 and metrics["cropped"] == 1.0 and metrics["ops"] >= 2
    assert metrics["lost_state"] == 1  # the call that used `secret` from the first call
    assert scores["official"]["domain_results"] == {"STEM": {"accuracy": 0.0, "score": round(5 / 12, 4), "n": 1}}
    assert main(["report", str(run), "--suite", "visualtoolbench"]) == 0
    report = (run / "report.md").read_text()
    assert "## VisualToolBench figures as the official judge script reports them" in report
    assert "| STEM | 1 | 0.0% | 41.7% |" in report
    page = next((run / "report").glob("*single-atm.html")).read_text()
    assert "id='rubrics'" in page and page.count("verdict fail'>Not Met") == 2


def test_multi_turn_feeds_golden_answers_back(tmp_path: Path, providers: Any) -> None:
    backend = require_backend("local")
    dataset = _dataset(tmp_path / "data")

    def measure(request: Request) -> Response:
        images, save = _told(request)
        code = f"from PIL import Image\nim = Image.open({images[0]!r})\nprint(im.getpixel((0, 0)))\n"
        code += f"im.save({save!r} + '/transformed_image_0.png')\n"
        return completion("", [("python_image_processing", {"code": code})])(request)

    script = [measure, completion("It is 200x120."), measure, completion("Also 200x120, and white.")]
    with ChatCompletionsServer(script, models=["vtb-model", "m"]) as chat:
        run = _run(tmp_path, dataset, chat, "multi", backend)
        bodies = chat.bodies()
    turn_two = bodies[2]["messages"]
    assert [m["role"] for m in turn_two] == ["system", "user", "assistant", "user"]
    assert turn_two[1]["content"] == "How big is the first picture?"
    assert turn_two[2]["content"] == "It is 200x120."  # the golden answer, not the model's
    assert turn_two[3]["content"][0]["text"] == "And the second one?"
    first, second = _tool_results(bodies[1]), _tool_results(bodies[3])
    assert first["python_image_processing"]["stdout"] == "(255, 255, 255)\n"
    assert second["python_image_processing"]["stdout"] == "(255, 255, 0)\n"  # turn 2 reads its own image
    # transformed_image_0.png exists from turn 1: the new file is kept apart, never overwritten
    assert second["python_image_processing"]["output_path"].endswith("/transformed_image_1.png")
    end = json.loads((run / "episodes" / "multi.jsonl").read_text().splitlines()[-1])
    assert end["turn_answers"] == ["It is 200x120.", "Also 200x120, and white."]

    with ChatCompletionsServer(judge_script(3)) as judge:
        spec = f"openai:judge-model@{judge.base_url}"
        assert main(["score", str(run), "--suite", "visualtoolbench", "--judge", spec, "--quiet"]) == 0
        prompts = [b["messages"][-1]["content"] for b in judge.bodies()]
        sent = judge.bodies()[0]
    # as the official judge calls o4-mini: JSON response format, no temperature or max_tokens
    assert sent["response_format"] == {"type": "json_object"} and "temperature" not in sent and "max_tokens" not in sent
    assert "How big is the first picture?" in prompts[0] and "Model answer: It is 200x120." in prompts[0]
    assert "And the second one?" in prompts[1] and "Golden answer: Also 200x120." in prompts[1]
    # the official layout: what run_judge_multi_turn.py reads, and the clean_rubrics file it requires
    assert main(["export", str(run), "--suite", "visualtoolbench", "--out", str(tmp_path / "official")]) == 0
    (exported,) = json.loads(
        (
            tmp_path / "official" / "multi_turn" / "vtb-model_w_tool_system_high_max_tool_calls_20_trial_1.json"
        ).read_text()
    )
    assert exported["task_id"] == "multi" and exported["prompt_category"] == "generalist"
    assert [t["model_answer"] for t in exported["turns"]] == ["It is 200x120.", "Also 200x120, and white."]
    assert [t["golden_answer"] for t in exported["turns"]] == ["It is 200x120.", "Also 200x120."]
    used = exported["turns"][1]["tool_use_list"]
    assert [u["function_name"] for u in used] == ["python_image_processing"]
    assert used[0]["observation"]["stdout"] == "(255, 255, 0)\n" and exported["turns"][1]["num_tool_calls"] == 1
    (clean,) = json.loads((tmp_path / "official" / "multi_turn" / "clean_rubrics.json").read_text())
    assert clean == {
        "task_id": "multi",
        "turns": [
            {"rubrics": {"r1": {"description": "Gives the size '200x120'", "weight": 5}}},
            {
                "rubrics": {
                    "r1": {"description": "Gives the size '200x120'", "weight": 4},
                    "r2": {"description": "Says it is 'yellow'", "weight": 2},
                }
            },
        ],
    }
    metrics = json.loads((run / "scores.json").read_text())["episodes"][0]["score"]["metrics"]
    # pooled: 5 met + 4 met + 2 not met ('yellow' absent; weight 2 does not fail the task): ARS 9/11, APR 1
    assert metrics["ars"] == pytest.approx(9 / 11) and metrics["apr"] == 1.0


def test_stateful_variant_keeps_variables(tmp_path: Path, providers: Any) -> None:
    backend = require_backend("local")
    dataset = _dataset(tmp_path / "data")
    script = [
        completion("", [("python_interpreter", {"code": "kept = 41"})]),
        completion("", [("python_interpreter", {"code": "print(kept + 1)"})]),
        completion("42"),
    ]
    out = tmp_path / "stateful"
    with ChatCompletionsServer(script, models=["vtb-model", "m"]) as chat:
        argv = [
            "run",
            "--suite",
            "visualtoolbench-stateful",
            "--tasks",
            str(dataset),
            "--ids",
            "single",
            "--agent",
            "openai:m",
            "--mode",
            "atm",
            "--out",
            str(out),
            "--base-url",
            chat.base_url,
            "--no-progress",
            "--backend",
            backend["backend"],
        ]
        assert main(argv) == 0
        bodies = chat.bodies()
    assert _tool_results(bodies[2])["python_interpreter"] == {"stdout": "42\n", "stderr": ""}
    assert "Variables persist" in bodies[0]["tools"][0]["function"]["description"]


def test_record_mode_checks_this_suites_providers_then_replay_needs_none(
    tmp_path: Path, providers: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = require_backend("local")
    serp, _, _ = providers
    data = tmp_path / "data"
    dataset = _dataset(data)
    lines = dataset.read_text()
    records = [*json.loads(lines), {"id": "broken", "turn_prompts": ["x"], "rubrics_by_turn": ["{oops"]}]
    dataset.write_text(json.dumps(records))
    search = completion("", [("google_search", {"query": "opening hours"})])
    base = [
        "run",
        "--suite",
        "visualtoolbench",
        "--tasks",
        str(dataset),
        "--ids",
        "single",
        "--agent",
        "openai:m",
        "--no-progress",
        "--backend",
        backend["backend"],
        "--web-allow-private",
    ]

    monkeypatch.delenv("SERP_API_KEY")
    with ChatCompletionsServer([], models=["m"]) as chat:
        code = main([*base, "--out", str(tmp_path / "nokey"), "--base-url", chat.base_url, "--web", "record"])
    err = capsys.readouterr().err
    assert code == 2 and "SERP_API_KEY is not set" in err and "skipped a VisualToolBench record" in err
    assert "record 2 (id broken): field 'rubrics_by_turn[0]'" in err

    monkeypatch.setenv("SERP_API_KEY", SERP_KEY)
    cache = tmp_path / "web-cache"
    with ChatCompletionsServer([search, completion("done")], models=["m"]) as chat:
        argv = [*base, "--out", str(tmp_path / "rec"), "--base-url", chat.base_url, "--web", "record"]
        assert main([*argv, "--web-cache", str(cache)]) == 0
    searched = len(serp.requests)
    with ChatCompletionsServer([search, completion("done")], models=["m"]) as chat:
        argv = [*base, "--out", str(tmp_path / "rep"), "--base-url", chat.base_url, "--web", "replay"]
        assert main([*argv, "--web-cache", str(cache)]) == 0
        replayed = _tool_results(chat.bodies()[1])["google_search"]
    assert len(serp.requests) == searched and replayed["status"] == "success"  # from the cache, no provider call
    assert replayed["results"][0]["title"] == "opening hours result 0"


def test_a_forged_event_fails_its_episode_not_the_scoring(tmp_path: Path, providers: Any) -> None:
    """A trace holding an event of the wrong shape (``output: []``) scores APR and ARS 0 for its episode,
    is not infrastructure and asks the judge nothing; scoring of the run goes on (issue 12)."""
    from pixelbox.harness.suites.visualtoolbench.scoring import score_vtb_run
    from tests.scoring.test_integrity import forge_event

    backend = require_backend("local")
    dataset = _dataset(tmp_path / "data")

    def measure(request: Request) -> Response:
        images, save = _told(request)
        code = f"from PIL import Image\nim = Image.open({images[0]!r})\n"
        code += f"im.crop((0, 0, 10, 10)).save({save!r} + '/c.png')\n"
        return completion("", [("python_image_processing", {"code": code})])(request)

    script = [measure, completion("It is 200x120."), measure, completion("Also 200x120, and white.")]
    with ChatCompletionsServer(script, models=["vtb-model", "m"]) as chat:
        run = _run(tmp_path, dataset, chat, "multi", backend)
    forge_event(run / "episodes" / "multi.jsonl", output=[])
    with ChatCompletionsServer(judge_script(3)) as judge:
        result = score_vtb_run(run, [f"openai:judge-model@{judge.base_url}"], progress=False)
        asked = judge.bodies()
    (record,) = result["episodes"]
    score = record["score"]
    assert score["metrics"]["apr"] == 0.0 and score["metrics"]["ars"] == 0.0 and score["infrastructure"] is None
    assert asked == [] and record["episode"]["termination"] == "damaged_trace"


def test_lineage_spans_calls_despite_a_fresh_kernel_each(tmp_path: Path, providers: Any) -> None:
    """The second call opens the file the first one saved; after the restart the kernel still knows it as
    artifact 0, so the second crop's region composes back to the input."""
    backend = require_backend("local")
    dataset = _dataset(tmp_path / "data")

    def crop(source: int, box: tuple[int, int, int, int], name: str) -> Any:
        def respond(request: Request) -> Response:
            images, save = _told(request)
            code = f"from PIL import Image\nImage.open({images[source]!r}).crop({box}).save({save!r} + '/{name}')\n"
            return completion("", [("python_image_processing", {"code": code})])(request)

        return respond

    script = [
        crop(0, (100, 60, 200, 120), "transformed_image_0.png"),  # the right half of the bottom half
        crop(1, (50, 0, 100, 30), "transformed_image_1.png"),  # the right half of that, its top half
        completion("B-7"),
    ]
    with ChatCompletionsServer(script, models=["vtb-model"]) as chat:
        run = _run(tmp_path, dataset, chat, "single", backend)
    with ChatCompletionsServer(judge_script(3)) as judge:
        assert (
            main(["score", str(run), "--suite", "visualtoolbench", "--judge", f"openai:j@{judge.base_url}", "--quiet"])
            == 0
        )
    (record,) = json.loads((run / "scores.json").read_text())["episodes"]
    artifacts = {a["index"]: a for a in record["episode"]["artifacts"]}
    assert artifacts[1]["root"] == "input:0"
    # x 150-200 of 200 (750-1000), y 60-90 of 120 (500-750), in 0-1000 of the input
    assert [round(v) for v in artifacts[1]["box_root"]] == [750, 500, 1000, 750]
