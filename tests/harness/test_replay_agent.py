"""ReplayAgent: every accepted recording shape, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pixelbox.harness.agents import Agent, AgentTurn, RecordingError, ReplayAgent, ReplayExhausted, ToolCall, Usage
from pixelbox.harness.traces import TraceWriter

TURNS = [
    {
        "text": "I will crop.",
        "tool_calls": [{"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 500, 500]}}],
    },
    "<answer>42</answer>",
]


def play_all(agent: ReplayAgent) -> list[AgentTurn]:
    return [agent.next_turn([], []) for _ in range(agent.remaining)]


def test_json_list_plays_in_order_then_runs_out(tmp_path: Path) -> None:
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(TURNS))
    agent = ReplayAgent.from_file(path)
    assert isinstance(agent, Agent) and agent.model == "replay"
    first, second = play_all(agent)
    assert first.text == "I will crop."
    assert first.tool_calls[0].name == "crop"
    assert first.tool_calls[0].arguments() == {"image_index": 0, "bbox_2d": [0, 0, 500, 500]}
    assert second.text == "<answer>42</answer>" and second.tool_calls == ()
    with pytest.raises(ReplayExhausted, match=r"has 2 turn\(s\) and the episode asked for turn 3"):
        agent.next_turn([], [])


def test_jsonl_with_openai_shaped_messages(tmp_path: Path) -> None:
    call = {"id": "call_9", "type": "function", "function": {"name": "google_search", "arguments": '{"query": "x"}'}}
    lines = [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "assistant", "content": "done"}]
    path = tmp_path / "rec.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    first, second = play_all(ReplayAgent.from_file(path))
    assert first.tool_calls == (ToolCall("call_9", "google_search", '{"query": "x"}'),)
    assert first.text == "" and second.text == "done"


def test_per_task_mapping_and_directory(tmp_path: Path) -> None:
    (tmp_path / "all.json").write_text(json.dumps({"tasks": {"t1": ["one"], "t2": ["two", "three"]}}))
    assert [t.text for t in play_all(ReplayAgent.from_file(tmp_path / "all.json", "t2"))] == ["two", "three"]
    folder = tmp_path / "recs"
    folder.mkdir()
    (folder / "t3.json").write_text(json.dumps({"turns": ["from dir"]}))
    assert ReplayAgent.from_file(folder, "t3").next_turn([], []).text == "from dir"
    with pytest.raises(RecordingError, match="no recording for task 't4'"):
        ReplayAgent.from_file(folder, "t4")
    with pytest.raises(RecordingError, match="no recording for task 't9'"):
        ReplayAgent.from_file(tmp_path / "all.json", "t9")


def test_missing_ids_get_distinct_stable_ids() -> None:
    calls = [{"name": "a", "arguments": {}}, {"name": "b", "arguments": "{}"}]
    agent = ReplayAgent.from_turns([{"text": "", "tool_calls": calls}])
    ids = [c.id for c in agent.next_turn([], []).tool_calls]
    again = [c.id for c in ReplayAgent.from_turns([{"text": "", "tool_calls": calls}]).next_turn([], []).tool_calls]
    assert len(set(ids)) == 2 and ids == again


def test_replays_the_turns_of_a_recorded_trace(tmp_path: Path) -> None:
    trace = tmp_path / "episode.jsonl"
    recorded = [
        AgentTurn("look", (ToolCall("c1", "rotate", '{"image_index": 0, "angle": 90}'),), Usage(10, 2, 12)),
        AgentTurn("<answer>B</answer>"),
    ]
    with TraceWriter(trace) as writer:
        writer.episode_start(task={"task_id": "t"}, config={}, model="m", mode="atm")
        for i, turn in enumerate(recorded, start=1):
            writer.turn(round=i, messages={"count": i}, agent_turn=turn)
            writer.action(round=i, action_id=f"a{i}", type="tool", name="rotate")
        writer.episode_end(status="answered", answer="B")
    replayed = play_all(ReplayAgent.from_file(trace))
    assert [(t.text, t.tool_calls) for t in replayed] == [(t.text, t.tool_calls) for t in recorded]
    assert replayed[0].usage == Usage(10, 2, 12)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2", "not valid JSON"),
        ('{"turns": 3}', "expected a list of turns"),
        ('[{"text": "x", "tool_calls": [{"arguments": {}}]}]', "turn 1 tool call 1: missing the tool 'name'"),
        ("[42]", "turn 1: expected a string or an object"),
    ],
)
def test_malformed_recordings_say_where(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(RecordingError, match=message):
        ReplayAgent.from_file(path)
