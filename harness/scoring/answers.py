"""Final-answer matching (Acc and ``answer_check`` checkpoints).

Every match type of the task format, applied after one normalization: case, whitespace,
surrounding quotes and trailing punctuation, thousands separators, and the units the task
lists. Targets are matched as whole words: "1" is not in "2017", "no" is not in "not sure".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MATCH_TYPES = ("exact", "exact_match", "contains", "string", "numeric", "keyword_inclusion", "extraction_match")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_FINAL_SECTION = re.compile(r"(?:final\s+answer|answer)\s*(?:is|:)\s*(.+)", re.IGNORECASE | re.DOTALL)
_QUOTES = "\"'`\u201c\u201d\u2018\u2019"
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)


class AnswerSpecError(ValueError):
    """A golden answer or answer_check is malformed; the message says which field to fix."""


@dataclass(frozen=True)
class AnswerVerdict:
    """Whether an answer matched, and why (shown in reports)."""

    correct: bool
    match_type: str
    expected: str
    got: str
    reason: str


def normalize(text: str, units: Iterable[str] = ()) -> str:
    """Lower case, single spaces, no wrapping quotes or trailing punctuation, no listed units."""
    tagged = _ANSWER_TAG.search(text)
    out = (tagged.group(1) if tagged else text).strip().lower()
    out = re.sub(r"(?<=\d),(?=\d{3}\b)", "", out)
    for unit in sorted(units, key=len, reverse=True):
        out = re.sub(rf"(?<=\d)\s*{re.escape(unit.lower())}\b", "", out)
    out = re.sub(r"\s+", " ", out).strip()
    return out.strip(_QUOTES).rstrip(".,;:!").strip()


def contains(haystack: str, needle: str) -> bool:
    """Whole-word substring test: the needle may not start or end inside a word of the haystack.

    "1" is not in "2017" or "1.5", "120" is not in "1200", "no" is not in "not sure", "red" is not
    in "reddish"; "blue" is in "blue ink" and "gate 47" is in "it is gate 47.". Edges of the needle
    that are not word characters (a trailing "%", a leading "$") need no boundary.
    """
    if not needle:
        return False
    if _NUMBER.fullmatch(needle):
        return re.search(rf"(?<![\w.]){re.escape(needle)}(?![\w]|\.\d)", haystack) is not None
    start = r"(?<![\w.])" if re.match(r"\d", needle) else r"(?<!\w)" if re.match(r"\w", needle) else ""
    end = r"(?![\w]|\.\d)" if re.search(r"\w$", needle) else ""
    return re.search(f"{start}{re.escape(needle)}{end}", haystack) is not None


def numbers_in(text: str) -> list[float]:
    return [float(n) for n in _NUMBER.findall(text)]


def final_section(text: str) -> str:
    """The part after "answer is"/"answer:" when the agent wrote one, else the whole text."""
    found = _FINAL_SECTION.search(text)
    return found.group(1) if found else text


def check_golden(answer: str, golden: dict[str, Any]) -> AnswerVerdict:
    """Acc for one episode: the answer against ``golden_answer`` (and its accepted ``variants``)."""
    if "value" not in golden:
        raise AnswerSpecError("golden_answer needs a 'value'")
    spec = {
        "match_type": golden.get("match_type", "contains"),
        "target": golden["value"],
        "tolerance": golden.get("tolerance", 0.0),
        "units": golden.get("units", ()),
        "variants": [*golden.get("variants", ()), *golden.get("accepted_answers", ())],
    }
    return check_answer(answer, spec)


def check_answer(answer: str, spec: dict[str, Any]) -> AnswerVerdict:
    """One ``answer_check`` (official field names), or any accepted variant, against the answer."""
    match_type = str(spec.get("match_type", "exact"))
    if match_type not in MATCH_TYPES:
        raise AnswerSpecError(f"unknown match_type {match_type!r}; use one of {list(MATCH_TYPES)}")
    units = tuple(spec.get("units") or ())
    got = normalize(answer, units)
    targets = [spec.get("target", ""), *spec.get("variants", ())]
    reasons = []
    for target in targets:
        ok, reason = _MATCHERS[match_type](got, spec, normalize(str(target), units))
        if ok:
            return AnswerVerdict(True, match_type, str(target), got, reason)
        reasons.append(reason)
    return AnswerVerdict(False, match_type, str(spec.get("target", "")), got, "; ".join(dict.fromkeys(reasons)))


def _exact(got: str, spec: dict[str, Any], target: str) -> tuple[bool, str]:
    return got == target, f"normalized answer {'equals' if got == target else 'differs from'} {target!r}"


def _contains(got: str, spec: dict[str, Any], target: str) -> tuple[bool, str]:
    ok = contains(got, target)
    return ok, f"{target!r} {'found' if ok else 'not found'} in the answer"


def _string(got: str, spec: dict[str, Any], target: str) -> tuple[bool, str]:
    """Normalized string equality, forgiving punctuation and articles (the benchmark's "normalized exact
    match"); the part after "answer is"/"answer:" is compared too. Never containment either way."""
    wanted = _bare(target)
    candidates = {_bare(got), _bare(final_section(got))}
    ok = bool(wanted) and wanted in candidates
    return ok, f"normalized answer {'equals' if ok else 'differs from'} {target!r}"


def _bare(text: str) -> str:
    """``text`` without punctuation or articles, single spaces ("The Golden-Gate Bridge!" -> "golden gate bridge")."""
    words = re.sub(r"[^\w\s]|_", " ", normalize(text)).split()
    return " ".join(w for w in words if w not in ("a", "an", "the"))


def _numeric(got: str, spec: dict[str, Any], target: str) -> tuple[bool, str]:
    wanted = numbers_in(target)
    if len(wanted) != 1:
        raise AnswerSpecError(f"numeric target {target!r} must hold exactly one number")
    found = sorted(set(numbers_in(final_section(got))))
    if len(found) != 1:
        return False, f"a numeric answer must give one number, found {found or 'none'}"
    tolerance = float(spec.get("tolerance") or 0.0)
    ok = abs(found[0] - wanted[0]) <= tolerance
    return ok, f"{found[0]:g} is {'within' if ok else 'outside'} {tolerance:g} of {wanted[0]:g}"


def _keywords(got: str, spec: dict[str, Any], target: str) -> tuple[bool, str]:
    keywords = [normalize(str(k)) for k in spec.get("keywords") or ()]
    if not keywords:
        raise AnswerSpecError("keyword_inclusion needs a non-empty 'keywords' list")
    hits = [k for k in keywords if contains(got, k)]
    need = int(spec.get("min_matches", 1))
    return len(hits) >= need, f"{len(hits)} of {need} required keywords found {hits}"


def _extraction(got: str, spec: dict[str, Any], target: str) -> tuple[bool, str]:
    targets = spec.get("targets") or []
    if not targets:
        raise AnswerSpecError("extraction_match needs a non-empty 'targets' list of {key, value, tolerance}")
    numbers = numbers_in(got)
    missing = []
    for item in targets:
        value = normalize(str(item.get("value", "")))
        wanted = numbers_in(value)
        tolerance = float(item.get("tolerance") or 0.0)
        if len(wanted) == 1 and re.fullmatch(r"[-+\d.\s%]+", value):
            found = any(abs(n - wanted[0]) <= tolerance for n in numbers)
        else:
            found = contains(got, value)
        if not found:
            missing.append(item.get("key") or value)
    return not missing, f"missing {missing}" if missing else "every target found"


_MATCHERS = {
    "exact": _exact,
    "exact_match": _exact,
    "contains": _contains,
    "string": _string,
    "numeric": _numeric,
    "keyword_inclusion": _keywords,
    "extraction_match": _extraction,
}


def short_answer_matches(answer: str, expected: str) -> bool:
    """A judge's free answer against a checkpoint's short expected answer.

    Yes/no questions compare the first yes/no word; other answers must contain the expected
    one (numbers standing alone), after normalization.
    """
    got, want = normalize(answer), normalize(expected)
    if want in ("yes", "no"):
        first = re.search(r"\b(yes|no)\b", got)
        return first is not None and first.group(1) == want
    return bool(want) and (got == want or contains(got, want))
