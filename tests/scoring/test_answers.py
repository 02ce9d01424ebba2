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


def test_string_match_accepts_either_containing_the_other() -> None:
    spec = {"match_type": "string", "target": "golden gate bridge"}
    assert check_answer("Golden Gate", spec).correct
    assert not check_answer("Bay Bridge", spec).correct


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
