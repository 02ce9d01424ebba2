"""VisualToolBench's rubric judge and its official arithmetic.

One judge call per rubric, sent as the official judge sends it (JSON response format, the model's own
temperature and length limits, so reasoning models such as o4-mini accept it): the judge model sees the
turn's question, its golden answer, the rubric criterion and the model's answer, and returns JSON
``{"explanation", "judge_result": "Met" | "Not Met"}``. A task's ARS is the weight of its met rubrics
over the weight of all its rubrics (every turn's rubrics pooled, for multi-turn tasks); its APR is 0
when any rubric of weight >= 4 is not met, else 1 (the ``critical`` field is not read, as officially).

Judges: ``openai:MODEL[@BASE_URL]`` (any OpenAI-compatible endpoint; the paper's judge is o4-mini)
and ``recorded:FILE`` (verdicts written down beforehand, ``{task_id: {rubric_id: "Met"|"Not Met"}}``
or per turn ``{task_id: [{rubric_id: ...}, ...]}``; for demos and offline tests). Answers of
``openai`` judges are kept in the run's judge cache keyed by (judge, prompt), so scoring again is
free and gives the same verdicts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pixelbox.harness.scoring.judges import JudgeCache, JudgeEndpointError, parse_endpoint

from .tasks import Rubric

MET, NOT_MET = "Met", "Not Met"
DECISIVE_WEIGHT = 4
"""Rubrics at least this heavy decide the pass rate (APR)."""

JUDGE_PROMPT = """You grade one answer against one rubric criterion.

You get a question, a reference (golden) answer, a rubric criterion and the answer of the model under test.
Decide whether the model's answer satisfies the criterion. Consult the reference answer only as far as the
criterion needs it.

Guidance:
- If the criterion does not ask for correctness, an incorrect answer can still satisfy it (a criterion asking
  the model to show its reasoning is met by an answer that shows its reasoning, right or wrong).
- Be lenient on style and presentation criteria (an answer a little longer than the reference can still count
  as concise).
- A criterion can be met implicitly: the answer need not use the criterion's exact words if what it says
  clearly amounts to it.

Question: {question}

Golden answer: {golden}

Rubric criterion: {criterion}

Model answer: {answer}

Reply with JSON only, in this form:
{{"explanation": "<one or two sentences>", "judge_result": "Met" or "Not Met"}}"""
"""Our wording of the official rubric-judge prompt (same inputs, same output format)."""


class RubricJudgeError(ValueError):
    """A judge spec or a recorded-verdicts file cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Verdict:
    """One rubric's outcome: ``Met``, ``Not Met``, or None when the judge gave none (``error`` says why)."""

    rubric_id: str
    turn: int
    weight: float
    result: str | None
    explanation: str = ""
    cached: bool = False
    error: str | None = None
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "rubric_id": self.rubric_id,
            "description": self.description,
            "turn": self.turn,
            "weight": self.weight,
            "judge_result": self.result,
            "explanation": self.explanation,
            "cached": self.cached,
            "error": self.error,
        }


class RubricJudge(Protocol):
    """Judges one rubric of one turn."""

    judge_id: str

    def verdict(self, task_id: str, turn: int, rubric: Rubric, question: str, golden: str, answer: str) -> Verdict: ...


class LlmRubricJudge:
    """A model behind an OpenAI-compatible endpoint, its raw answers cached on disk."""

    def __init__(self, spec: str, cache: JudgeCache) -> None:
        self.endpoint = parse_endpoint(spec)
        self.judge_id = f"rubric:{self.endpoint.model}"
        self.cache = cache

    def verdict(self, task_id: str, turn: int, rubric: Rubric, question: str, golden: str, answer: str) -> Verdict:
        prompt = JUDGE_PROMPT.format(question=question, golden=golden, criterion=rubric.description, answer=answer)
        cached = self.cache.get(self.judge_id, prompt, "")
        raw = cached.get("answer") if cached else None
        if not isinstance(raw, str):
            try:
                raw = self.endpoint.complete(
                    [{"role": "user", "content": prompt}],
                    max_tokens=None,
                    temperature=None,
                    response_format={"type": "json_object"},
                )
            except JudgeEndpointError as exc:
                return Verdict(
                    rubric.rubric_id, turn, rubric.weight, None, error=str(exc), description=rubric.description
                )
            self.cache.put(self.judge_id, prompt, "", {"answer": raw})
        result, explanation = parse_judgement(raw)
        error = None if result else f"the judge's reply names neither Met nor Not Met: {raw[:200]!r}"
        return Verdict(
            rubric.rubric_id, turn, rubric.weight, result, explanation, cached is not None, error, rubric.description
        )


class RecordedRubricJudge:
    """Verdicts from a file: ``{task_id: {rubric_id: verdict}}`` or ``{task_id: [{rubric_id: verdict}, ...]}``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.judge_id = f"recorded:{self.path.name}"
        try:
            self.table = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RubricJudgeError(f"recorded verdicts {self.path}: cannot read them as JSON ({exc})") from None
        if not isinstance(self.table, dict):
            raise RubricJudgeError(f"recorded verdicts {self.path}: expected an object keyed by task id")

    def verdict(self, task_id: str, turn: int, rubric: Rubric, question: str, golden: str, answer: str) -> Verdict:
        entry = self.table.get(task_id)
        if isinstance(entry, list):
            entry = entry[turn] if turn < len(entry) else None
        value = entry.get(rubric.rubric_id) if isinstance(entry, dict) else None
        if isinstance(value, dict):
            value = value.get("judge_result")
        if value not in (MET, NOT_MET):
            missing = f"no recorded verdict for task {task_id} turn {turn} rubric {rubric.rubric_id}"
            return Verdict(rubric.rubric_id, turn, rubric.weight, None, error=missing, description=rubric.description)
        return Verdict(rubric.rubric_id, turn, rubric.weight, str(value), "recorded", True, None, rubric.description)


def build_rubric_judge(spec: str, cache_dir: Path) -> RubricJudge:
    """``openai:MODEL[@BASE_URL]`` or ``recorded:FILE``; :class:`RubricJudgeError` for anything else."""
    kind, _, rest = spec.partition(":")
    if kind == "openai" and rest:
        return LlmRubricJudge(spec, JudgeCache(cache_dir))
    if kind == "recorded" and rest:
        return RecordedRubricJudge(rest)
    raise RubricJudgeError(
        f"VisualToolBench is scored by a rubric judge: --judge openai:MODEL[@BASE_URL] (any OpenAI-compatible "
        f"endpoint; the paper used o4-mini) or --judge recorded:FILE; got {spec!r}"
    )


_RESULT = re.compile(r'"judge_result"\s*:\s*"(Met|Not Met)"', re.IGNORECASE)


def parse_judgement(raw: str) -> tuple[str | None, str]:
    """``(Met | Not Met | None, explanation)`` from a judge reply: its JSON object, else the quoted field, else
    a bare verdict on the last line."""
    for candidate in (raw, *re.findall(r"\{.*\}", raw, flags=re.DOTALL)):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            result = _normalise(data.get("judge_result"))
            if result:
                return result, str(data.get("explanation") or "")
    found = _RESULT.search(raw)
    if found:
        return _normalise(found.group(1)), ""
    last = raw.strip().splitlines()[-1] if raw.strip() else ""
    return _normalise(last.strip(" .*\"'")), ""


def _normalise(value: Any) -> str | None:
    text = str(value or "").strip().lower()
    return {"met": MET, "not met": NOT_MET}.get(text)


def task_scores(verdicts: list[Verdict]) -> tuple[float | None, float | None]:
    """``(ARS, APR)`` of one task; ``(None, None)`` when some rubric has no verdict (judge failed: score again)."""
    if not verdicts or any(v.result is None for v in verdicts):
        return None, None
    total = sum(v.weight for v in verdicts)
    met = sum(v.weight for v in verdicts if v.result == MET)
    passed = not any(v.result == NOT_MET and v.weight >= DECISIVE_WEIGHT for v in verdicts)
    return (met / total if total > 0 else 0.0), (1.0 if passed else 0.0)
