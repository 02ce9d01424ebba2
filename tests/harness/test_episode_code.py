"""Code mode end to end: replayed turns run in real sandboxes; traces hold everything that happened."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pixelbox.harness.agents import OpenAIAgent, OpenAIConfig, ReplayAgent
from pixelbox.harness.episode.budgets import BudgetLimits
from pixelbox.harness.runner import run_tasks
from pixelbox.harness.traces import read_trace
from pixelbox.harness.web import WEB_TOOLS, SerperProvider, WebTools
from pixelbox.runtime import SandboxOptions
from tests.harness.episodes import executions, kinds, make_task, trace_of
from tests.harness.servers import ChatCompletionsServer, SerperServer, completion

CROP = """I will zoom in on the box.
<code>
```python
import os
from PIL import Image
img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
box = img.crop((240, 60, 360, 140))
box.save(os.path.join(os.environ["PROCESSED_IMAGE_SAVE_PATH"], "transformed_image_1.png"))
print("box size", box.size)
```
</code>"""
FAILS = "The variable survives; now a mistake.\n<code>print(box.getpixel((5, 5)))\nundefined_name + 1</code>"
SLOW = "<code>\nimport time\nwhile True:\n    time.sleep(0.05)\n</code>"
AFTER = "<code>print('still here', box.size)\nbox.save('/mnt/data/zoom.png')</code>"
ANSWER = "The box is red. <answer>red</answer>"


def replay(turns: list[Any]) -> Any:
    return lambda task: ReplayAgent.from_turns(turns, model="replay-test")


def test_code_mode_episode_records_everything(tmp_path: Path) -> None:
    task = make_task(tmp_path / "data")
    summary = run_tasks(
        [task],
        agent_factory=replay([CROP, FAILS, SLOW, AFTER, ANSWER]),
        mode="gen",
        out_dir=tmp_path / "run",
        sandbox_options=SandboxOptions(backend="local"),
        budgets=BudgetLimits(execution_timeout=3),
        progress=False,
    )
    assert summary.counts == {"answered": 1} and summary.ran == 1
    trace = trace_of(tmp_path / "run", "t1")
    end = trace.of_kind("episode_end")[0]
    assert (end["status"], end["answer"]) == ("answered", "red")
    assert kinds(trace)[0] == "episode_start" and kinds(trace)[-1] == "episode_end"

    runs = executions(trace)
    assert [e["status"] for e in runs] == ["ok", "error", "timeout", "ok"]
    first = runs[0]
    assert "box size (120, 80)" in first["stdout"]
    assert [a["name"] for a in first["artifacts"]] == ["transformed_image_1.png"]
    crop = next(e for e in first["events"] if e["op"] == "crop")
    assert crop["params"]["box_px"] == [240, 60, 360, 140] and crop["src"]["line"] == 4
    assert runs[1]["error"]["ename"] == "NameError" and "undefined_name" in runs[1]["error"]["traceback"]
    assert runs[3]["normalizations"] and runs[3]["artifacts"][0]["name"] == "transformed_image_2.png"
    # every code execution in the trace carries its audit; the last one's save is written and run
    assert all(r["audit"]["available"] for r in runs)
    assert ("io", 2) in [(w["op"], w["line"]) for w in runs[3]["audit"]["written"]]
    assert runs[3]["audit"]["written_not_run"] == [] and runs[3]["audit"]["run_not_written"] == []

    actions = trace.of_kind("action")
    assert [a["type"] for a in actions] == ["code"] * 4
    assert actions[0]["code"].startswith("import os") and "```" not in actions[0]["code"]

    observations = trace.of_kind("observation")
    assert "took too long" in observations[2]["shown"]
    assert "NameError" in observations[1]["shown"] and "undefined_name + 1" in observations[1]["shown"]
    assert (
        "still here (120, 80)" in observations[3]["shown"]
        and "Note: saved '/mnt/data/zoom.png'" in observations[3]["shown"]
    )
    stored = observations[0]["images"][0]
    assert stored["index"] == 1 and stored["origin"] == "code"
    with Image.open(tmp_path / "run" / stored["stored"]) as made:
        assert made.size == (120, 80) and made.getpixel((5, 5)) == (230, 20, 20)

    start = trace.of_kind("episode_start")[0]
    assert start["model"] == "replay-test" and start["mode"] == "gen" and start["runtime"]["backend"] == "local"
    assert start["messages"][0]["role"] == "system" and "<code>" in start["messages"][0]["content"]
    first_user = start["messages"][1]["content"]
    assert first_user[0]["text"] == task.prompt
    assert first_user[2]["image_url"]["url"].startswith("sha256:")

    messages = trace.of_kind("message")
    assert len(messages) == 4 and all(m["message"]["role"] == "user" for m in messages)
    parts = messages[0]["message"]["content"]
    assert "Result of code block 1" in parts[0]["text"] and parts[1]["text"].startswith("image 1 (transformed_image_1")
    assert parts[2]["type"] == "image_url"

    turns = trace.of_kind("turn")
    assert [t["round"] for t in turns] == [1, 2, 3, 4, 5]
    assert turns[1]["messages"]["images"] == 2  # the input and the crop were in the request
    saved = json.loads((tmp_path / "run" / "episodes" / "t1.summary.json").read_text())
    assert saved["status"] == "answered" and saved["executions"] == {"ok": 2, "error": 1, "timeout": 1}


def test_answer_only_counts_in_a_turn_without_actions(tmp_path: Path) -> None:
    both = "<code>print(6 * 7)</code> <answer>wrong</answer>"
    nothing = "Let me think about it."
    summary = run_tasks(
        [make_task(tmp_path / "data")],
        agent_factory=replay([both, nothing, "<answer>42</answer>"]),
        mode="gen",
        out_dir=tmp_path / "run",
        sandbox_options=SandboxOptions(backend="local"),
        progress=False,
    )
    assert summary.counts == {"answered": 1}
    trace = trace_of(tmp_path / "run", "t1")
    assert trace.of_kind("episode_end")[0]["answer"] == "42"
    notes = [m["message"]["content"][0]["text"] for m in trace.of_kind("message")]
    assert "was not accepted" in notes[0] and "no action and no <answer>" in notes[1]


@pytest.mark.parametrize(
    ("turns", "budgets", "status", "limit"),
    [
        (["<code>x = 1</code>"] * 5, BudgetLimits(max_rounds=3), "budget_exhausted", "max_rounds"),
        (
            ["<code>x = 1</code><code>x += 1</code>"] * 5,
            BudgetLimits(max_tool_calls=3),
            "budget_exhausted",
            "max_tool_calls",
        ),
        (["hmm"] * 5, BudgetLimits(), "no_answer", None),
        (["<code>x = 1</code>"], BudgetLimits(), "agent_error", None),
    ],
)
def test_episodes_end_with_a_recorded_reason(
    tmp_path: Path, turns: list[str], budgets: BudgetLimits, status: str, limit: str | None
) -> None:
    summary = run_tasks(
        [make_task(tmp_path / "data")],
        agent_factory=replay(turns),
        mode="gen",
        out_dir=tmp_path / "run",
        sandbox_options=SandboxOptions(backend="local"),
        budgets=budgets,
        progress=False,
        code_blocks="all",  # two blocks a turn: the tool-call budget is hit in the second round
    )
    assert summary.counts == {status: 1}
    trace = read_trace(tmp_path / "run" / "episodes" / "t1.jsonl")
    end = trace.of_kind("episode_end")[0]
    assert end["status"] == status and end["reason"]
    hits = trace.of_kind("budget_hit")
    assert [h["limit"] for h in hits] == ([limit] if limit else [])
    if status == "agent_error":
        assert trace.of_kind("error")[0]["where"] == "agent" and "ReplayExhausted" in trace.of_kind("error")[0]["type"]


def test_openai_agent_in_code_mode_with_web_search(tmp_path: Path, serper: SerperServer) -> None:
    crop = CROP.split("<code>", 1)[1]
    script = [
        completion(f"Crop and search.<code>{crop}", [("google_search", {"query": "red box"})]),
        completion("<answer>red</answer>"),
    ]
    with ChatCompletionsServer(script) as server:
        config = OpenAIConfig(model="local-vlm", base_url=server.base_url, api_key="sk-test")
        summary = run_tasks(
            [make_task(tmp_path / "data")],
            agent_factory=lambda task: OpenAIAgent(config),
            mode="gen",
            out_dir=tmp_path / "run",
            sandbox_options=SandboxOptions(backend="local"),
            web=lambda task: WebTools(search=SerperProvider("serper-test", base_url=serper.url)),
            progress=False,
        )
        bodies = server.bodies()
    assert summary.counts == {"answered": 1}
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == list(WEB_TOOLS)
    system = bodies[0]["messages"][0]["content"]
    assert "ORIGINAL_IMAGE_PATH" in system and "transformed_image_N.png" in system and "google_search" in system
    sent = bodies[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[2]["tool_calls"][0]["function"]["name"] == "google_search"
    assert sent[3]["tool_call_id"] == sent[2]["tool_calls"][0]["id"] and "answer for red box" in sent[3]["content"]
    result = sent[4]["content"]
    assert "Result of code block 1" in result[0]["text"] and "box size (120, 80)" in result[0]["text"]
    assert result[1]["text"].startswith("image 1 (transformed_image_1.png, 120x80)")
    assert result[2]["image_url"]["url"].startswith("data:image/png;base64,")
    trace = trace_of(tmp_path / "run", "t1")
    assert [a["type"] for a in trace.of_kind("action")] == ["code", "tool"]
    assert trace.of_kind("turn")[0]["usage"]["prompt_tokens"] > 0
