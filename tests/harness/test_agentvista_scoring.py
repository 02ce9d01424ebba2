"""AgentVista's official answer extraction and score parsing on hand-checked cases, the offline match judge,
and the episode budgets (turns, the token estimate, the search cap) through the real runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pixelbox.harness.agents.replay import ReplayAgent
from pixelbox.harness.episode.budgets import BudgetLimits
from pixelbox.harness.runner import run_tasks
from pixelbox.harness.suites import SUITES
from pixelbox.harness.suites.agentvista import tools as vt
from pixelbox.harness.suites.agentvista.scoring import JudgeError, MatchJudge, parse_score, prediction_of
from pixelbox.harness.traces import read_trace
from pixelbox.harness.web import SerperProvider, WebTools
from pixelbox.runtime.options import SandboxOptions
from tests.harness.episodes import task_image
from tests.harness.servers import SerperServer

SUITE = SUITES.get("agentvista")


@pytest.mark.parametrize(
    ("replies", "expected"),
    [
        (["<answer>A</answer>", "then <answer> B </answer> final"], "B"),  # the last tag over all replies
        (["<answer>first</answer>", "no tag in the last reply"], "first"),  # an earlier tag still wins
        (["thinking", "It is C."], "It is C."),  # no tag anywhere: the last reply
        (["<answer>multi\nline</answer>"], "multi\nline"),
        ([], ""),
    ],
)
def test_prediction_is_the_last_answer_tag_else_the_last_reply(replies: list[str], expected: str) -> None:
    assert prediction_of(replies) == expected


@pytest.mark.parametrize(
    ("reply", "correct"),
    [
        ("Score: 1\nExplanation: same", True),
        ("score: 0\nexplanation: differs", False),
        ("I first thought Score: 0 but on reflection\nScore: 1", True),  # the last 'score:' decides
        ("Score: 1.\nExplanation: ok", True),  # the first word after it contains 1
        ("Score: 0/1", True),  # as officially: '0/1' contains a 1
    ],
)
def test_score_parsing_hand_checked(reply: str, correct: bool) -> None:
    assert parse_score(reply)[0] is correct


@pytest.mark.parametrize("reply", ["The answer is right.", "Score: yes"])
def test_a_reply_without_a_score_is_an_error(reply: str) -> None:
    with pytest.raises(JudgeError):
        parse_score(reply)


def test_match_judge() -> None:
    judge = MatchJudge()
    assert judge.judge("q", "C. The part is reversed.", "C").correct
    assert judge.judge("q", "HARBOR", "harbor!").correct
    assert not judge.judge("q", "C. The part is reversed.", "B. It is fine.").correct
    assert not judge.judge("q", "red", "").correct


def _task(root: Path) -> list:
    task_image(root / "a.png")
    (root / "val.json").write_text(
        json.dumps([{"question_id": "t", "problem": "<image>Q", "images": ["a.png"], "solution": "x"}])
    )
    return list(SUITE.load_tasks(root / "val.json"))


def _play(tmp_path: Path, turns: list, budgets: BudgetLimits, web=None) -> dict:
    run_tasks(
        _task(tmp_path / "data"),
        agent_factory=lambda task: ReplayAgent.from_turns(turns, model="m"),
        mode="gen",
        out_dir=tmp_path / "run",
        sandbox_options=SandboxOptions(backend="local"),
        budgets=budgets,
        web=web,
        progress=False,
        suite=SUITE,
    )
    return read_trace(tmp_path / "run" / "episodes" / "t.jsonl").of_kind("episode_end")[0]


def _code(code: str) -> dict:
    return {"text": "", "tool_calls": [{"name": "code_interpreter", "arguments": {"code": code}}]}


def test_turn_budget(tmp_path: Path) -> None:
    end = _play(tmp_path, [_code("1"), _code("2"), _code("3")], BudgetLimits(max_rounds=2, max_tool_calls=30))
    assert end["status"] == "budget_exhausted" and "max_rounds" in end["reason"]
    assert end["answer"] == "Error: Reached max turns without a definitive answer."


def test_token_estimate_ends_the_episode(tmp_path: Path) -> None:
    loud = _code("print('x' * 60000)")
    end = _play(tmp_path, [loud] * 10 + ["<answer>x</answer>"], SUITE.budgets())
    assert end["status"] == "budget_exhausted" and "token estimate" in end["reason"]
    assert end["totals"]["token_estimate"] >= 57_344 and end["answer"] == "Error: Reached max token limit."


def test_search_cap_refuses_and_the_episode_goes_on(
    tmp_path: Path, serper: SerperServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(vt.SEARCH_LIMITS, "web_search", 1)
    search = {"text": "", "tool_calls": [{"name": "web_search", "arguments": {"query": "q"}}]}
    web = lambda task: WebTools(search=SerperProvider("serper-test", base_url=serper.url))  # noqa: E731
    end = _play(tmp_path, [search, search, "<answer>x</answer>"], SUITE.budgets(), web)
    assert end["status"] == "answered" and end["totals"]["searches"] == {"web_search": 1}
    shown = [o["shown"] for o in read_trace(tmp_path / "run" / "episodes" / "t.jsonl").of_kind("observation")]
    assert shown[0].startswith("Search results for 'q'")
    assert shown[1].startswith("Maximum number of 'web_search' calls (1) exceeded. Current count: 1")
    assert len([r for r in serper.requests if r.path == "/search"]) == 1
