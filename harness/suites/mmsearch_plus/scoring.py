"""MMSearch-Plus scoring: accuracy, where a prediction is correct when it matches any acceptable answer.

The paper judges with GPT-4o and a "lightweight rule-based verification", neither released. Ours:

1. the rule: the prediction, normalised (lower case, accents and punctuation dropped, articles
   removed, spaces collapsed), equals a normalised acceptable answer, or contains one as whole
   words (a short answer inside a longer sentence) -> correct, no judge call;
2. otherwise, with ``--judge openai:MODEL[@BASE_URL]`` (the paper used GPT-4o), one call with our
   prompt (:data:`JUDGE_PROMPT`, documented in docs/mmsearch-plus.md) listing every acceptable
   answer; the reply's last ``Correct: yes|no`` decides. Replies are cached in ``RUN/judge_cache``.
   With no ``--judge`` (``match``), the rule alone decides.

The prediction is the last ``<answer>`` of the episode's replies, else its last reply. Reports break
accuracy down by category and by difficulty (easy / difficult), as the paper does.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pixelbox.harness.scoring.columns import Column
from pixelbox.harness.scoring.judges.cache import JudgeCache

INFRA_STATUSES = ("agent_error", "runtime_error", "harness_error", "unfinished")
ANSWER = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.DOTALL)
VERDICT = re.compile(r"correct\s*:\s*\**\s*(yes|no)\b", re.IGNORECASE)
JUDGE_ATTEMPTS = 3

COLUMNS = (
    Column("accuracy", "Accuracy", "rate", "higher", "matches any acceptable answer (rule, then the judge)"),
    Column("text_searches", "Text searches", "number", None, "text_search rounds"),
    Column("image_searches", "Image searches", "number", None, "image_search calls"),
    Column("zooms", "Zooms", "number", None, "zoom_in calls that cut a region (Set-of-Mark)"),
    Column("visual_ops", "Visual ops", "number", None, "visual operations that executed in the sandbox"),
)

JUDGE_PROMPT = """You check answers to a search question. A prediction is correct when it names the same \
thing as ANY one of the acceptable answers: the same entity, number, date or title, in any wording, \
abbreviation or language; extra correct detail is fine, a different or hedged answer is not.

Question: {question}
Acceptable answers:
{answers}
Prediction: {prediction}

Explain briefly, then end with exactly one line: Correct: yes  or  Correct: no"""


class JudgeError(RuntimeError):
    """The judge's reply had no ``Correct: yes|no``."""


def normalise(text: str) -> str:
    """Lower case, accents and punctuation dropped, articles removed, spaces collapsed."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = re.sub(r"[^a-z0-9]+", " ", text)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def rule_match(prediction: str, answers: Sequence[str]) -> str | None:
    """The acceptable answer the prediction matches by rule, or None."""
    p = normalise(prediction)
    if not p:
        return None
    for answer in answers:
        a = normalise(answer)
        if a and (p == a or f" {a} " in f" {p} "):
            return answer
    return None


def parse_verdict(reply: str) -> bool:
    found = VERDICT.findall(reply)
    if not found:
        raise JudgeError(f"the judge reply has no 'Correct: yes|no': {reply[:200]!r}")
    return found[-1].lower() == "yes"


def prediction_of(replies: Sequence[str]) -> str:
    found = [m.strip() for text in replies for m in ANSWER.findall(text or "")]
    return found[-1] if found else (replies[-1].strip() if replies else "")


class Judge:
    """The rule, then (when an endpoint is given) the LLM judge with our prompt; replies cached."""

    def __init__(self, spec: str | None, cache: JudgeCache | None) -> None:
        self.endpoint = None
        self.cache = cache
        self.id = "match"
        if spec is not None:
            from pixelbox.harness.scoring.judges import parse_endpoint

            self.endpoint = parse_endpoint(spec)
            self.id = f"mmsearch-plus:{self.endpoint.model}@{self.endpoint.base_url}"

    def judge(self, question: str, answers: Sequence[str], prediction: str) -> dict[str, Any]:
        matched = rule_match(prediction, answers)
        if matched is not None:
            return {"correct": True, "by": "rule", "matched": matched}
        if self.endpoint is None or not prediction.strip():
            return {"correct": False, "by": "rule", "matched": None}
        prompt = JUDGE_PROMPT.format(
            question=question, answers="\n".join(f"- {a}" for a in answers), prediction=prediction
        )
        assert self.cache is not None
        hit = self.cache.get(self.id, prompt, "")
        if hit is not None and isinstance(hit.get("reply"), str):
            return {"correct": parse_verdict(hit["reply"]), "by": self.id, "reply": hit["reply"], "cached": True}
        problem: JudgeError | None = None
        for _ in range(JUDGE_ATTEMPTS):
            reply = self.endpoint.complete([{"role": "user", "content": prompt}], max_tokens=1024, temperature=0.0)
            try:
                correct = parse_verdict(reply)
            except JudgeError as exc:
                problem = exc
                continue
            self.cache.put(self.id, prompt, "", {"reply": reply})
            return {"correct": correct, "by": self.id, "reply": reply, "cached": False}
        assert problem is not None
        raise problem


def build_judge(specs: Sequence[str], cache_dir: Path) -> Judge:
    from pixelbox.harness.suites.shared import judge_spec

    spec = judge_spec(specs, "MMSearch-Plus", "openai:MODEL[@BASE_URL] (rule, then the LLM judge) or match (rule only)")
    return Judge(spec, JudgeCache(cache_dir)) if spec is not None else Judge(None, None)


def score_run(
    run_dir: str | Path,
    judges: Sequence[str],
    *,
    suite: str,
    progress: bool,
    options: Any = None,
    include_infrastructure: bool,
) -> dict[str, Any]:
    """Judge every episode under ``run_dir``; writes and returns ``scores.json``."""
    from pixelbox.harness.scoring.run import CACHE_DIR
    from pixelbox.harness.suites.shared import run_traces, score_each, write_scores

    root, traces = run_traces(run_dir, suite)
    judge = build_judge(list(judges), root / CACHE_DIR)
    records = score_each(traces, lambda path: score_episode(path, judge, suite), progress)
    return write_scores(root, suite, [judge.id], records, include_infrastructure)


def score_episode(path: Path, judge: Judge, suite: str) -> dict[str, Any]:
    from pixelbox.harness.suites.shared import episode_view
    from pixelbox.harness.traces.episode import read_episode

    episode = read_episode(path)
    task, end = episode.task, episode.end or {}
    replies = [str(r.get("text") or "") for r in episode.records if r.get("kind") == "turn"]
    prediction = prediction_of(replies)
    status = str(end.get("status") or "unfinished")
    infrastructure = f"{status}: {end.get('reason')}" if status in INFRA_STATUSES else None
    answers = [str(a) for a in task.get("answer") or []]
    verdict = None if infrastructure else judge.judge(str(task.get("question") or ""), answers, prediction)
    score = {
        "episode_id": f"{episode.model}-{episode.task_id}-{episode.mode}",
        "task_id": episode.task_id,
        "mode": episode.mode,
        "model": episode.model,
        "suite": suite,
        "category": task.get("category"),
        "level": task.get("difficulty"),
        "infrastructure": infrastructure,
        "prediction": prediction,
        "gold": answers,
        "judge": verdict,
        "metrics": {"accuracy": None if verdict is None else float(verdict["correct"]), **process_figures(episode)},
    }
    return {"score": score, "episode": episode_view(path, str(score["episode_id"]), episode.task_id)}


def process_figures(episode: Any) -> dict[str, float]:
    from pixelbox.contract.ops import VISUAL_OPS

    names = [r.get("name") for r in episode.records if r.get("kind") == "action"]
    events = [e for s in episode.steps for e in s.events]
    visual = [e for e in events if e.op in VISUAL_OPS and e.status == "ok"]
    zooms = [r for r in episode.records if r.get("kind") == "observation" and r.get("images") and not r.get("error")]
    return {
        "text_searches": float(names.count("text_search")),
        "image_searches": float(names.count("image_search")),
        "zooms": float(sum(1 for r in zooms if any("zoom" in str(i.get("origin")) for i in r["images"]))),
        "visual_ops": float(len(visual)),
    }
