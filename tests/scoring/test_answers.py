"""Acc: every match type, accepted variants and normalization."""

from __future__ import annotations

import pytest

from pixelbox.harness.scoring.answers import AnswerSpecError, check_answer, check_golden, short_answer_matches


@pytest.mark.parametrize(
    ("answer", "golden", "correct"),
    [
        ("  <answer> Eiffel   Tower. </answer>", {"value": "eiffel tower", "match_type": "exact"}, True),
        ("Eiffel Tower Paris", {"value": "Eiffel Tower", "match_type": "exact"}, False),
        ("The answer is 1.", {"value": "1", "match_type": "contains"}, True),
        ("It opened in 2017.", {"value": "1", "match_type": "contains"}, False),
        ("About 1200 people", {"value": "120", "match_type": "contains"}, False),
        ("version 1.5 shipped", {"value": "1", "match_type": "contains"}, False),
        ("It is in BLUE ink", {"value": "blue", "match_type": "contains"}, True),
        ("3.14", {"value": "3.1416", "match_type": "numeric", "tolerance": 0.01}, True),
        ("The final answer is 3.3", {"value": "3.1416", "match_type": "numeric", "tolerance": 0.01}, False),
        ("1,234 visitors", {"value": "1234", "match_type": "numeric"}, True),
        ("between 10 and 12", {"value": "12", "match_type": "numeric"}, False),
        ("45 cm", {"value": "45", "match_type": "exact", "units": ["cm"]}, True),
        ("Big Apple", {"value": "New York City", "match_type": "exact", "variants": ["big apple", "NYC"]}, True),
        ("Gotham", {"value": "New York City", "match_type": "exact", "variants": ["big apple"]}, False),
    ],
)
def test_golden_answer(answer: str, golden: dict, correct: bool) -> None:
    assert check_golden(answer, golden).correct is correct


def test_keyword_inclusion_counts_distinct_keywords() -> None:
    spec = {"match_type": "keyword_inclusion", "keywords": ["red", "circle", "left"], "min_matches": 2}
    assert check_answer("A red circle", spec).correct
    verdict = check_answer("A red square", spec)
    assert not verdict.correct
    assert "1 of 2" in verdict.reason


def test_extraction_match_needs_every_target() -> None:
    spec = {
        "match_type": "extraction_match",
        "targets": [{"key": "height", "value": "330", "tolerance": 5}, {"key": "year", "value": "1931"}],
    }
    assert check_answer("It is 328 m tall and opened in 1931", spec).correct
    verdict = check_answer("It is 328 m tall and opened in 1932", spec)
    assert not verdict.correct
    assert "year" in verdict.reason


def test_string_match_is_normalized_equality_not_containment() -> None:
    spec = {"match_type": "string", "target": "golden gate bridge"}
    assert check_answer("<answer>The Golden-Gate Bridge!</answer>", spec).correct
    assert check_answer("The final answer is: Golden Gate Bridge.", spec).correct
    assert not check_answer("Golden Gate", spec).correct  # a part of the target is not the target
    assert not check_answer("Bay Bridge", spec).correct
    assert not check_answer("not the golden gate bridge but the bay bridge", spec).correct
    gate = {"match_type": "string", "target": "gate 47"}
    assert not check_answer("a", gate).correct
    assert not check_answer("4", gate).correct
    assert not check_answer("gate 470", gate).correct
    assert check_answer("Gate 47", gate).correct


@pytest.mark.parametrize(
    ("answer", "target", "correct"),
    [
        ("Not sure", "no", False),
        ("Nobody knows", "no", False),
        ("No, it is closed.", "no", True),
        ("The answer is no", "no", True),
        ("It is reddish", "red", False),
        ("It is in BLUE ink", "blue", True),
        ("It is at gate 47.", "gate 47", True),
        ("It is at gate 470.", "gate 47", False),
        ("Growth was 50%", "50%", True),
        ("Growth was 150%", "50%", False),
        ("It was A-OK", "ok", True),
    ],
)
def test_contains_matches_whole_words(answer: str, target: str, correct: bool) -> None:
    assert check_answer(answer, {"match_type": "contains", "target": target}).correct is correct


def test_keywords_match_whole_words() -> None:
    spec = {"match_type": "keyword_inclusion", "keywords": ["no", "red"], "min_matches": 1}
    assert not check_answer("Not reddish", spec).correct
    assert check_answer("red", spec).correct


def test_bad_specs_say_what_to_fix() -> None:
    with pytest.raises(AnswerSpecError, match="match_type"):
        check_answer("x", {"match_type": "fuzzy", "target": "x"})
    with pytest.raises(AnswerSpecError, match="keywords"):
        check_answer("x", {"match_type": "keyword_inclusion"})
    with pytest.raises(AnswerSpecError, match="value"):
        check_golden("x", {"match_type": "exact"})


@pytest.mark.parametrize(
    ("answer", "expected", "ok"),
    [
        ("Yes, the sign is legible.", "Yes", True),
        ("No; not yes.", "yes", False),
        ("Not sure", "no", False),
        ("The square is red.", "red", True),
        ("It reads 17", "7", False),
    ],
)
def test_short_answer_matching(answer: str, expected: str, ok: bool) -> None:
    assert short_answer_matches(answer, expected) is ok
