"""S: keyword pre-check, LLM judge over a real local endpoint, one call per checkpoint."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pixelbox.harness.scoring.judges import ChatEndpoint, JudgeCache
from pixelbox.harness.scoring.search import expected_of, judge_searches, parse_verdict
from pixelbox.harness.scoring.view import SearchCall
from tests.harness.servers import ChatCompletionsServer as ChatServer
from tests.scoring.builders import atomic_episode, code_episode, task


def s_checkpoint(cid: str, description: str, tools: tuple[str, ...] = ("google_search",)) -> dict:
    return {"id": cid, "axis": "S", "tools": list(tools), "description": description}


def test_precheck_passes_without_calling_the_judge(tmp_path: Path, server: ChatServer, endpoint: ChatEndpoint) -> None:
    verdicts = judge_searches(code_episode(tmp_path), endpoint)
    assert [(v.passed, v.method) for v in verdicts] == [(True, "precheck")]
    assert server.bodies() == []


def test_llm_judge_is_strict_on_returned_content(tmp_path: Path, server: ChatServer, endpoint: ChatEndpoint) -> None:
    cps = [s_checkpoint("S1", "Find when it opened (expected: nineteen thirty-one)")]
    episode = replace(code_episode(tmp_path), task=task(checkpoints=cps))
    verdict = judge_searches(episode, endpoint)[0]
    assert (verdict.passed, verdict.method) == (False, "llm")
    prompt = server.bodies()[0]["messages"][0]["content"]
    assert "Pixel Tower height" in prompt and "330 metres tall" in prompt and "nineteen thirty-one" in prompt
    paraphrase = SearchCall(1, "google_search", {"query": "tower opening"}, "It opened in nineteen thirty-one.")
    found = judge_searches(replace(episode, searches=(paraphrase,)), endpoint)[0]
    assert found.passed is True


def test_search_judge_answers_are_cached(tmp_path: Path, server: ChatServer, endpoint: ChatEndpoint) -> None:
    cps = [s_checkpoint("S1", "Find the architect (expected: Jane Roe)")]
    episode = replace(code_episode(tmp_path), task=task(checkpoints=cps))
    cache = JudgeCache(tmp_path / "cache")
    judge_searches(episode, endpoint, cache)
    judge_searches(episode, endpoint, cache)
    assert len(server.bodies()) == 1


def test_each_call_serves_one_checkpoint_and_missing_searches_fail(tmp_path: Path) -> None:
    cps = [
        s_checkpoint("A", "height (expected to find: 330 metres)"),
        s_checkpoint("B", "height again (expected to find: 330 metres)"),
    ]
    episode = replace(atomic_episode(tmp_path), task=task(checkpoints=cps))
    assert [v.passed for v in judge_searches(episode)] == [True, False]
    none = judge_searches(replace(episode, searches=()))
    assert [v.passed for v in none] == [False, False]
    assert "no successful call" in none[0].reason


def test_without_a_judge_undecidable_checkpoints_stay_unjudged(tmp_path: Path) -> None:
    cps = [s_checkpoint("A", "Find the architect"), s_checkpoint("L", "Identify the tower", ("google_lens_search",))]
    lens = SearchCall(2, "google_lens_search", {"image_index": 0}, "Visual matches: Pixel Tower")
    episode = replace(code_episode(tmp_path), task=task(checkpoints=cps))
    episode = replace(episode, searches=(*episode.searches, lens))
    verdicts = judge_searches(episode)
    assert [(v.passed, v.method) for v in verdicts] == [(None, "unjudged"), (True, "existence")]


def test_expected_answer_and_verdict_parsing() -> None:
    assert expected_of({"description": "Look it up (Expected to find: 1931)."}) == "1931"
    assert expected_of({"description": "x", "expected_answer": "Paris"}) == "Paris"
    assert expected_of({"description": "no hint"}) is None
    assert parse_verdict('Sure. {"verdict": "fail", "reason": "wrong entity"}') == (False, "wrong entity")
    assert parse_verdict("PASS - found it")[0] is True
    assert parse_verdict("maybe")[0] is None
