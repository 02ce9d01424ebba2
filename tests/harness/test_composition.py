"""The harness pieces working together over real local servers: agent -> web tool -> trace -> summary -> replay.

This is not the episode loop (that lives with the modes); it shows the pieces compose and that a
recorded episode can be re-run offline from its own trace and web cache.
"""

from __future__ import annotations

from pathlib import Path

from pixelbox.harness.agents import Agent, OpenAIAgent, OpenAIConfig, ReplayAgent, summarize_messages, text_part
from pixelbox.harness.episode.budgets import Budget, BudgetLimits
from pixelbox.harness.traces import RunDirectory, read_trace
from pixelbox.harness.web import SerperProvider, WebCache, WebTools
from tests.harness.servers import ChatCompletionsServer, SerperServer, completion

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "google_search",
        "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


def run_episode(agent: Agent, tools: WebTools, run: RunDirectory, task_id: str) -> list[str]:
    """A minimal tool-calling loop; returns the observation texts shown to the model."""
    messages = [{"role": "user", "content": [text_part("How tall is the Eiffel Tower?")]}]
    budget = Budget(BudgetLimits(max_rounds=4))
    shown: list[str] = []
    with run.start_episode(task_id) as trace:
        trace.episode_start(task={"task_id": task_id}, config={"mode": "atm"}, model=agent.model, mode="atm")
        while budget.start_round() is None:
            turn = agent.next_turn(messages, [SEARCH_TOOL])
            trace.turn(round=budget.rounds, messages=summarize_messages(messages), agent_turn=turn)
            messages.append(turn.assistant_message())
            if not turn.tool_calls:
                break
            for call in turn.tool_calls:
                budget.admit_tool_call()
                trace.action(round=budget.rounds, action_id=call.id, type="tool", name=call.name)
                result = tools.call(call.name, call.arguments())
                trace.observation(action_id=call.id, tool_result=result)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text})
                shown.append(result.text)
        trace.episode_end(status="answered", answer=turn.text, totals=budget.snapshot())
    return shown


def test_record_an_episode_then_rerun_it_offline_from_its_trace(tmp_path: Path) -> None:
    script = [
        completion(
            None,
            [("google_search", {"query": "eiffel tower height"})],
            usage={"prompt_tokens": 30, "completion_tokens": 5},
        ),
        completion("<answer>330 m</answer>", usage={"prompt_tokens": 90, "completion_tokens": 6}),
    ]
    with SerperServer() as serper, ChatCompletionsServer(script) as llm:
        agent = OpenAIAgent(OpenAIConfig(model="test-model", base_url=llm.base_url, api_key="sk-test"))
        recording = WebTools(
            search=SerperProvider("serper-test", base_url=serper.url),
            cache=WebCache.for_task(tmp_path / "web", "t1", "record"),
        )
        run = RunDirectory.open(tmp_path / "run", {"model": "test-model", "mode": "atm"})
        live = run_episode(agent, recording, run, "t1")
        summary = run.finish("t1")
    assert llm.bodies()[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_srv_0", "content": live[0]}
    assert "eiffel tower height - result 1" in live[0]
    assert (summary["status"], summary["answer"], summary["rounds"]) == ("answered", "<answer>330 m</answer>", 2)
    assert summary["usage"] == {"prompt_tokens": 120, "completion_tokens": 11, "total_tokens": 131}

    offline_tools = WebTools(search=None, cache=WebCache.for_task(tmp_path / "web", "t1", "replay"))
    rerun = RunDirectory.open(tmp_path / "rerun", {"model": "replay", "mode": "atm"})
    replayed = run_episode(ReplayAgent.from_file(run.trace_path("t1")), offline_tools, rerun, "t1")
    assert replayed == live
    original, again = read_trace(run.trace_path("t1")), read_trace(rerun.trace_path("t1"))
    assert [r["kind"] for r in again.records] == [r["kind"] for r in original.records]
    assert again.of_kind("observation")[0]["tool_result"]["source"] == "cache"
