"""AgentVista scoring as the official verifier does it, plus pixelbox's process figures beside it.

The prediction is the content of the last ``<answer>...</answer>`` over all of the model's replies,
else its last reply. A judge model compares it with the gold answer and replies ending in
``Score: 1`` or ``Score: 0``; the verdict is the first word after the last ``score:`` (correct
when it contains ``1``). Accuracy is the mean over episodes. The judge is any OpenAI-compatible
endpoint (``--judge openai:MODEL[@BASE_URL]``; the official run used ``openai/gpt-4.1`` at
temperature 0.2); each raw reply is cached in ``RUN/judge_cache`` by (judge, prompt), so scoring
again is free and gives the same verdicts. ``--judge match`` is an offline stand-in (normalised
exact match, or the same option letter) for demos and tests; it is not the official metric.

Process figures, which the official harness cannot give: code calls, visual operations that
actually executed, and whether the answer came after the model saw an image its own code produced
by a crop (``answer_after_crop``, over answered episodes that ran code).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelbox.harness.scoring.columns import Column
from pixelbox.harness.scoring.judges.cache import JudgeCache

SUITE = "agentvista"
ANSWER = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.DOTALL)
JUDGE_TEMPERATURE = 0.2
JUDGE_MAX_TOKENS = 8192
JUDGE_ATTEMPTS = 3
INFRA_STATUSES = ("agent_error", "runtime_error", "harness_error")

COLUMNS = (
    Column("accuracy", "Accuracy", "rate", "higher", "the judge's Score: 1 (the official metric)"),
    Column("answer_after_crop", "Answer after crop", "rate", "higher", "answered after seeing a crop its code made"),
    Column("visual_ops", "Visual ops", "number", None, "visual operations that executed in the sandbox"),
    Column("code_calls", "Code calls", "number", None, "code_interpreter calls"),
    Column("tool_calls", "Tool calls", "number", None, "tool calls of every kind"),
)

JUDGE_SYSTEM = (
    "You grade answers to questions. Decide whether the model's answer means the same as the reference "
    "answer; accept paraphrases and synonyms, and ignore formatting."
)
JUDGE_QUERY = """Question: {question}
Reference answer: {ground_truth}
Model's answer: {prediction}

Is the model's answer correct? Give 1 for correct and 0 for incorrect, exactly in this form:
Score: 1 or Score: 0
Explanation: <why>"""


class JudgeError(RuntimeError):
    """The judge gave no usable score; the message says what it replied."""


def prediction_of(replies: Sequence[str]) -> str:
    """The last ``<answer>`` over all replies, else the last reply (the official extraction)."""
    found = [m.strip() for text in replies for m in ANSWER.findall(text or "")]
    if found:
        return found[-1]
    return (replies[-1] if replies else "").strip()


def parse_score(reply: str) -> tuple[bool, str]:
    """``(correct, explanation)`` from a judge reply; :class:`JudgeError` when it has no ``Score: 0/1``."""
    lowered = reply.lower()
    if "score:" not in lowered:
        raise JudgeError(f"the judge reply has no 'Score:': {reply[:200]!r}")
    tail = lowered.split("score:")[-1].strip()
    word = tail.split("\n")[0].strip().split()[0] if tail.split() else ""
    if "1" not in word and "0" not in word:
        raise JudgeError(f"the judge reply has no 0/1 after 'Score:': {reply[:200]!r}")
    explanation = lowered.split("explanation:")[-1].strip() if "explanation:" in lowered else ""
    return "1" in word, explanation


@dataclass(frozen=True)
class Verdict:
    correct: bool
    judge: str
    reply: str
    explanation: str
    cached: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "correct": self.correct,
            "judge": self.judge,
            "reply": self.reply,
            "explanation": self.explanation,
            "cached": self.cached,
        }


class LLMJudge:
    """The official judge: one chat call per episode to ``endpoint``, raw replies cached."""

    def __init__(self, spec: str, cache: JudgeCache) -> None:
        from pixelbox.harness.scoring.judges import parse_endpoint
        from pixelbox.harness.suites.agentvista.official import official_from_env

        self.spec, self.cache = spec, cache
        self.endpoint = parse_endpoint(spec)
        official = official_from_env()
        self.system = official.judge_system if official else JUDGE_SYSTEM
        self.query = official.judge_query if official else JUDGE_QUERY
        prompts = "official" if official else "pixelbox"
        self.id = f"agentvista:{self.endpoint.model}@{self.endpoint.base_url} ({prompts} prompts)"

    def judge(self, question: str, gold: str, prediction: str) -> Verdict:
        prompt = self.query.format(question=question, ground_truth=gold, prediction=prediction)
        hit = self.cache.get(self.id, self.system + "\n" + prompt, "")
        if hit is not None and isinstance(hit.get("reply"), str):
            correct, why = parse_score(hit["reply"])
            return Verdict(correct, self.id, hit["reply"], why, True)
        messages = [
            {"role": "system", "content": [{"type": "text", "text": self.system}]},
            {"role": "user", "content": [{"type": "text", "text": prompt}]},
        ]
        problem: JudgeError | None = None
        for _ in range(JUDGE_ATTEMPTS):
            reply = self.endpoint.complete(messages, max_tokens=JUDGE_MAX_TOKENS, temperature=JUDGE_TEMPERATURE)
            try:
                correct, why = parse_score(reply)
            except JudgeError as exc:
                problem = exc
                continue
            self.cache.put(self.id, self.system + "\n" + prompt, "", {"reply": reply})
            return Verdict(correct, self.id, reply, why, False)
        assert problem is not None
        raise problem


class MatchJudge:
    """Offline stand-in: normalised exact match, or the same leading option letter (``C`` vs ``C. ...``)."""

    id = "match"

    def judge(self, question: str, gold: str, prediction: str) -> Verdict:
        g, p = _normal(gold), _normal(prediction)
        letter_g, letter_p = _option(gold), _option(prediction)
        correct = bool(p) and (g == p or (letter_g is not None and letter_g == letter_p))
        return Verdict(correct, self.id, "", "normalised match" if correct else "no match", False)


def build_judge(specs: Sequence[str], cache_dir: Path) -> LLMJudge | MatchJudge:
    """The judge named by ``specs``: the first ``openai:`` spec, else ``match``; anything else is an error."""
    from pixelbox.harness.suites.shared import judge_spec

    spec = judge_spec(specs, "AgentVista", "openai:MODEL[@BASE_URL] (the official LLM verifier) or match (offline)")
    return LLMJudge(spec, JudgeCache(cache_dir)) if spec is not None else MatchJudge()


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _option(text: str) -> str | None:
    found = re.match(r"\s*\(?([A-Ha-h])[\).:\s]", text + " ")
    return found.group(1).upper() if found else None


# -- a run ----------------------------------------------------------------------------------------


def score_run(
    run_dir: str | Path, judges: Sequence[str], *, progress: bool, options: Any = None, include_infrastructure: bool
) -> dict[str, Any]:
    """Judge every episode traced under ``run_dir``; writes and returns ``scores.json``."""
    from pixelbox.harness.scoring.run import CACHE_DIR
    from pixelbox.harness.suites.shared import run_traces, score_each, write_scores

    root, traces = run_traces(run_dir, SUITE)
    judge = build_judge(list(judges), root / CACHE_DIR)
    records = score_each(traces, lambda path: _scored_or_damaged(path, judge), progress)
    return write_scores(root, SUITE, [judge.id], records, include_infrastructure)


def score_episode(path: Path, judge: LLMJudge | MatchJudge) -> dict[str, Any]:
    """One episode's score record and the view reports show."""
    from pixelbox.harness.scoring.from_trace import episode_from_trace
    from pixelbox.harness.scoring.view import episode_to_dict
    from pixelbox.harness.traces.episode import read_episode

    episode = read_episode(path)
    task = episode.task
    end = episode.end or {}
    replies = [str(r.get("text") or "") for r in episode.records if r.get("kind") == "turn"]
    prediction = prediction_of(replies)
    status = str(end.get("status") or "unfinished")
    infrastructure = f"{status}: {end.get('reason')}" if status in (*INFRA_STATUSES, "unfinished") else None
    verdict = None
    if infrastructure is None:
        verdict = judge.judge(str(task.get("question") or ""), str(task.get("solution") or ""), prediction)
    figures = process_figures(episode, status)
    score = {
        "episode_id": f"{episode.model}-{episode.task_id}-{episode.mode}",
        "task_id": episode.task_id,
        "mode": episode.mode,
        "model": episode.model,
        "suite": SUITE,
        "category": task.get("domain"),
        "level": None,
        "infrastructure": infrastructure,
        "prediction": prediction,
        "gold": task.get("solution"),
        "judge": verdict.to_dict() if verdict else None,
        "metrics": {"accuracy": None if verdict is None else float(verdict.correct), **figures},
    }
    try:
        shown = episode_to_dict(episode_from_trace(path))
    except Exception as exc:  # the report still lists the episode
        shown = {"episode_id": score["episode_id"], "task": {"task_id": episode.task_id}, "view_error": str(exc)}
    return {"score": score, "episode": shown}


def _scored_or_damaged(path: Path, judge: LLMJudge | MatchJudge) -> dict[str, Any]:
    """``score_episode``, except that steps the reader cannot read (a kernel-made record of the wrong
    shape) make that episode a failure (accuracy 0, not infrastructure), never a stop of the run's scoring."""
    from pixelbox.harness.scoring.from_trace import DAMAGED
    from pixelbox.harness.traces.store import read_trace
    from pixelbox.tracer.events import EventFormatError

    try:
        return score_episode(path, judge)
    except EventFormatError as exc:
        start = read_trace(path).of_kind("episode_start")[0]
        task = start.get("task") or {}
        task_id = str(task.get("task_id") or path.stem)
        model, mode = str(start.get("model") or ""), str(start.get("mode") or "")
        reason = f"{DAMAGED}: scoring could not read this episode's trace, so it counts as failed: {exc}"
        score = {
            "episode_id": f"{model}-{task_id}-{mode}",
            "task_id": task_id,
            "mode": mode,
            "model": model,
            "suite": SUITE,
            "category": task.get("domain"),
            "level": None,
            "infrastructure": None,
            "damaged": reason,
            "prediction": None,
            "gold": task.get("solution"),
            "judge": None,
            "metrics": {
                "accuracy": 0.0,
                "answer_after_crop": None,
                "visual_ops": None,
                "code_calls": None,
                "tool_calls": None,
            },
        }
        return {"score": score, "episode": {"episode_id": score["episode_id"], "task": {"task_id": task_id}}}


def process_figures(episode: Any, status: str) -> dict[str, float | None]:
    """Code calls, executed visual ops, tool calls, and whether the answer followed a crop the code made."""
    from pixelbox.contract.ops import VISUAL_OPS

    code_steps = [s for s in episode.steps if s.is_code]
    events = [e for s in episode.steps for e in s.events]
    visual = [e for e in events if e.op in VISUAL_OPS and e.status == "ok"]
    crop_seqs = {e.seq for e in visual if e.op == "crop"}
    cropped = {index for seq in crop_seqs for index in episode.derived.get(seq, [])}
    after_crop: float | None = None
    if status == "answered" and code_steps:
        after_crop = 1.0 if cropped else 0.0
    return {
        "answer_after_crop": after_crop,
        "visual_ops": float(len(visual)),
        "code_calls": float(len(code_steps)),
        "tool_calls": float(len(episode.steps)),
    }
