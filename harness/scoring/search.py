"""S: did the agent's searches bring back the information a search checkpoint expects?

Lenient on query wording, strict on the returned content. A keyword pre-check passes a
checkpoint without a judge call when the expected string is plainly in a payload; otherwise an
LLM judge reads the queries and payloads. Without a judge such checkpoints stay unjudged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .answers import normalize
from .judges.cache import JudgeCache, NoCache
from .judges.chat import ChatEndpoint
from .view import EpisodeView, SearchCall

PAYLOAD_CHARS = 2000
MAX_CALLS_SHOWN = 6
_EXPECTED = re.compile(r"expected(?: to find| answer)?\s*:\s*([^)\n]+)", re.IGNORECASE)

JUDGE_PROMPT = """You check whether an agent's web searches retrieved a specific piece of information.

What the searches had to achieve:
{description}
{expected_line}
The agent's search calls, in order, each with the text the tool returned:
{calls}

Rules:
1. Query wording does not matter: synonyms, translations, broad queries about the right entity are all fine.
   A query about the wrong entity or an unrelated topic fails.
2. The returned text decides: the needed information (the expected answer, if one is given) must actually
   appear in what came back. A good query whose results lack the information fails.

Reply with one line of JSON: {{"verdict": "pass" or "fail", "reason": "<one sentence>"}}"""


@dataclass(frozen=True)
class SearchVerdict:
    """The verdict on one S checkpoint; ``passed`` is None when no judge could decide."""

    checkpoint_id: str
    passed: bool | None
    method: str
    reason: str
    call: SearchCall | None = None
    answer: str = ""


def expected_of(checkpoint: dict[str, Any]) -> str | None:
    """The information a search checkpoint expects: ``expected_answer``, else from its description."""
    if checkpoint.get("expected_answer"):
        return str(checkpoint["expected_answer"])
    found = _EXPECTED.search(str(checkpoint.get("description", "")))
    return found.group(1).strip().rstrip(".,;:") if found else None


def judge_searches(
    episode: EpisodeView, endpoint: ChatEndpoint | None = None, cache: JudgeCache | None = None
) -> list[SearchVerdict]:
    """Verdicts for every S checkpoint in task order; each search call serves one checkpoint."""
    used: set[int] = set()
    verdicts = []
    for checkpoint in (c for c in episode.task.checkpoints if c.get("axis") == "S"):
        verdict = _judge_one(checkpoint, episode, used, endpoint, cache or NoCache())
        if verdict.passed and verdict.call is not None:
            used.add(id(verdict.call))
        verdicts.append(verdict)
    return verdicts


def _judge_one(
    checkpoint: dict[str, Any], episode: EpisodeView, used: set[int], endpoint: ChatEndpoint | None, cache: JudgeCache
) -> SearchVerdict:
    cid = str(checkpoint.get("id", ""))
    tools = {str(t).lower() for t in checkpoint.get("tools") or []}
    calls = [c for c in episode.searches if (not tools or c.tool.lower() in tools) and id(c) not in used]
    ok_calls = [c for c in calls if c.status == "ok"]
    if not ok_calls:
        return SearchVerdict(cid, False, "none", f"no successful call of {sorted(tools) or 'any search tool'}")
    expected = expected_of(checkpoint)
    if expected:
        hit = next((c for c in ok_calls if normalize(expected) in normalize(c.payload)), None)
        if hit is not None:
            return SearchVerdict(cid, True, "precheck", f"{expected!r} appears in the result of {hit.query!r}", hit)
    elif tools and tools <= {"google_lens_search"}:
        return SearchVerdict(
            cid, True, "existence", "a reverse image search ran (no expected answer given)", ok_calls[0]
        )
    if endpoint is None:
        return SearchVerdict(cid, None, "unjudged", "needs an LLM judge (--judge openai:MODEL)")
    return _llm_verdict(cid, checkpoint, expected, ok_calls, endpoint, cache)


def _llm_verdict(
    cid: str,
    checkpoint: dict[str, Any],
    expected: str | None,
    calls: list[SearchCall],
    endpoint: ChatEndpoint,
    cache: JudgeCache,
) -> SearchVerdict:
    shown = calls[:MAX_CALLS_SHOWN]
    prompt = JUDGE_PROMPT.format(
        description=checkpoint.get("description", ""),
        expected_line=f"Expected information: {expected}\n" if expected else "",
        calls="\n".join(
            f"{n + 1}. {c.tool}({c.query!r}) returned:\n{c.payload[:PAYLOAD_CHARS]}" for n, c in enumerate(shown)
        ),
    )
    judge_id = f"search:{endpoint.model}"
    cached = cache.get(judge_id, prompt, "")
    answer = cached["answer"] if cached else endpoint.complete([{"role": "user", "content": prompt}])
    if cached is None:
        cache.put(judge_id, prompt, "", {"answer": answer})
    passed, reason = parse_verdict(answer)
    return SearchVerdict(cid, passed, "llm", reason, shown[0] if passed else None, answer)


def parse_verdict(answer: str) -> tuple[bool | None, str]:
    """Read the judge's JSON line; falls back to a leading PASS/FAIL word; None when unreadable."""
    found = re.search(r"\{.*\}", answer, re.DOTALL)
    if found:
        try:
            data = json.loads(found.group(0))
            verdict = str(data.get("verdict", "")).lower()
            if verdict in ("pass", "fail"):
                return verdict == "pass", str(data.get("reason", ""))
        except ValueError:
            pass
    word = re.match(r"\W*(pass|fail)\b", answer, re.IGNORECASE)
    if word:
        return word.group(1).lower() == "pass", answer
    return None, f"unreadable judge answer: {answer[:200]!r}"
