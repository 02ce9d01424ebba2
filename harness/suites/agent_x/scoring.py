"""Agent-X scoring: the official judge metrics, and deterministic ones where the trace makes them checkable.

Judge metrics (``--judge openai:MODEL[@BASE_URL]``; the paper used GPT-4o), one call each, with the
same inputs as ``evaluation/multiagent_evaluation.py`` and ``run_eval_gpt_as_judge.py`` (the ground
truth block ``{"query", "GT reasoning steps", "GT final answer"}`` and the prediction, both as Python
``str()`` of the objects; the tool metrics get the ground truth's ``tool_metadata``). The rubrics are
the official ones in our words (:data:`RUBRICS`), or the official prompts themselves read from the
user's checkout (``PIXELBOX_AGENTX_OFFICIAL``, :mod:`.official`); each reply must carry a ``'Score': x`` entry, read
by :func:`parse_score` (the repository does not show its parsing: we take the number after the last
``Score`` key, clamped to 0-1). Keys: ``grounding`` (G_s), ``tool_precision`` (T_p),
``tool_accuracy`` (T_acc), ``faithfulness`` (F_acc), ``context`` (C_s), ``factual_precision`` (F_p),
``semantic_accuracy`` (S_acc), ``goal_accuracy`` (G_acc; not for the 222 generative ids),
``toolset_accuracy`` (T_acc^s). G* (``g_star``) is, as in ``analysis/metrics.ipynb``, the mean of the
means of tool_precision, tool_accuracy and toolset_accuracy over the generative ids (a run figure;
episodes carry their own three-way mean).

Deterministic, from the trace (no judge needed): ``toolset_f1``, the F1 of the set of tools the
prediction used against the ground truth's (``executed``: the tools that really ran and succeeded;
``official``: the tools the model's steps name), and ``tool_precision_run`` (``executed`` only): of
the calls made, the share that ran, succeeded and is a ground-truth tool.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pixelbox.harness.scoring.columns import Column
from pixelbox.harness.scoring.judges.cache import JudgeCache

SUITE = "agent-x"
INFRA_STATUSES = ("agent_error", "runtime_error", "harness_error", "unfinished")
SCORE = re.compile(r"""['"]?score['"]?\s*:\s*['"]?\s*(-?\d+(?:\.\d+)?)""", re.IGNORECASE)
JUDGE_ATTEMPTS = 3
TOOL_METRICS = ("tool_precision", "tool_accuracy", "toolset_accuracy")

COLUMNS = (
    Column("goal_accuracy", "G_acc", "rate", "higher", "final answer vs the ground truth (judge; not generative ids)"),
    Column("grounding", "G_s", "rate", "higher", "steps grounded in the ground truth (judge)"),
    Column("tool_precision", "T_p", "rate", "higher", "the right tool per step (judge)"),
    Column("tool_accuracy", "T_acc", "rate", "higher", "tool outputs valid for their metadata (judge)"),
    Column("faithfulness", "F_acc", "rate", "higher", "the plan follows the ground truth's (judge)"),
    Column("context", "C_s", "rate", "higher", "uses the input well (judge)"),
    Column("factual_precision", "F_p", "rate", "higher", "no hallucinated facts (judge)"),
    Column("semantic_accuracy", "S_acc", "rate", "higher", "covers the query's parts (judge)"),
    Column("toolset_accuracy", "T_acc^s", "rate", "higher", "toolset F1 as the judge estimates it"),
    Column("g_star", "G*", "rate", "higher", "generative ids: mean of T_p, T_acc, T_acc^s"),
    Column("toolset_f1", "Toolset F1", "rate", "higher", "F1 of tools used vs the ground truth's (deterministic)"),
    Column("tool_precision_run", "Tool prec. (ran)", "rate", "higher", "calls that ran, succeeded, and are GT tools"),
    Column("tool_calls", "Tool calls", "number", None, "tool calls made (executed mode)"),
)

_GT_STEPS = (
    "You get a ground truth (GT): the query, its reasoning steps (each with a task, the tool used with its "
    "input and output, and a thought) and the final answer with its justification. You also get the agent's "
    "reasoning steps (task, tool and its output, thought)."
)
_STEP_COUNT = (
    "If the agent has more steps than the GT, each extra step scores 0; each GT step the agent skips scores 0. "
    "The score is the mean over steps."
)
_FORMAT = "Reply with one Python dictionary only: {{'Score': {kind}, 'Justification': '<one or two sentences>'}}"

RUBRICS: dict[str, str] = {
    "grounding": f"""You judge how well each reasoning step of a vision-language agent is grounded. {_GT_STEPS}
For each agent step: is its task relevant to the query and in line with the GT, is its tool suitable, is its \
output consistent with the GT, and is its thought grounded and logical? {_STEP_COUNT}
Score from 0 (ungrounded, hallucinated) to 1 (task, tool, output and thought all grounded).
{_FORMAT.format(kind="<0-1>")}""",
    "tool_precision": f"""You judge the tool choices of an agent. {_GT_STEPS}
For each step: is the agent's tool the one the GT uses there, and is it the most suitable tool for the step's \
task? {_STEP_COUNT}
Score 1 when the tool matches the GT and suits the task, 0 otherwise.
{_FORMAT.format(kind="<0 or 1>")}""",
    "tool_accuracy": """You judge how correctly an agent applied its tools. You get the metadata of the tools \
(purpose, inputs and outputs) and the agent's reasoning steps (task, tool with input and output, thought).
For each step: is the tool's output in the format its metadata specifies, and is it relevant and useful for \
the step's task? The score is the mean over steps, from 0 (badly formatted, irrelevant or useless) to 1 (valid, \
well formed and clearly relevant).
Reply with one Python dictionary only: {'Score': <0-1>, 'Justification': '<one or two sentences>'}""",
    "faithfulness": f"""You judge how faithful an agent's reasoning is to a reference plan. {_GT_STEPS}
Look at the structure and logical flow of the agent's steps: do they form a coherent strategy for the query \
that follows the GT's method and direction? This is about consistency with the GT's approach, not the \
correctness of each step.
Score from 0 (no logical progression, not aligned with the GT's plan) to 1 (a sound plan mirroring the GT).
{_FORMAT.format(kind="<0-1>")}""",
    "goal_accuracy": """You judge the final answer of a vision-language agent against the ground-truth answer. \
You get the agent's final answer, the GT final answer, and the query type: objective or subjective.
Score once for the whole query. Objective queries: 1 when the answer matches the GT or is clearly equivalent, \
0 when it is wrong, incomplete or unrelated. Subjective queries: the semantic (cosine-like) similarity of the \
two answers, from 0 to 1.
Reply with one Python dictionary only: {'Score': <number>, 'Justification': '<optional explanation>'}""",
    "toolset_accuracy": f"""You judge whether an agent used the right set of tools. {_GT_STEPS}
Compare the set of tools the agent used over its whole trace with the set the GT uses: penalise tools the GT \
does not use and GT tools the agent missed, as an F1 score would.
Reply with one Python dictionary only: {{'Score': <F1 rounded to 2 decimals>, 'Justification': '<explanation>'}}""",
    "context": f"""You judge how an agent's reasoning uses its input context (image, video, text or more). \
{_GT_STEPS} The agent's final answer and justification are included.
For each step: does the agent use the relevant parts of the input, is that input right for the tool and the \
task, and does the reasoning use it meaningfully? {_STEP_COUNT}
Score from 0 (ignores or misreads the input) to 1 (uses it fully and properly).
{_FORMAT.format(kind="<0-1>")}""",
    "factual_precision": f"""You judge the factual precision of an agent's reasoning. {_GT_STEPS}
Compare the agent's steps with the GT and look for hallucinated, invented or wrong facts in its outputs and \
thoughts; do not penalise small omissions unless they cause a factual error.
Score from 0 (major factual errors or fabrications) to 1 (no errors against the GT).
{_FORMAT.format(kind="<0-1>")}""",
    "semantic_accuracy": f"""You judge whether an agent's reasoning and answer cover what the query needs. \
{_GT_STEPS} The agent's final answer and justification are included.
Check that every essential part of the query, as the GT shows it, is addressed; credit real coverage, not \
surface similarity, and penalise ignored or misunderstood core parts.
Score from 0 (major parts omitted or misrepresented) to 1 (the GT's full semantic scope is covered).
{_FORMAT.format(kind="<0-1>")}""",
}


class JudgeError(RuntimeError):
    """A judge reply without a usable Score."""


def parse_score(reply: str) -> float:
    """The number after the last ``Score`` key, clamped to 0-1."""
    found = SCORE.findall(reply)
    if not found:
        raise JudgeError(f"the judge reply has no 'Score': {reply[:200]!r}")
    return min(1.0, max(0.0, float(found[-1])))


def judge_inputs(task: dict[str, Any], steps: Any, final: Any) -> dict[str, str]:
    """Each metric's user message, built as the official evaluation builds it (str() of the objects)."""
    gt_final = {
        "query": task.get("query"),
        "GT reasoning steps": task.get("reasoning_steps"),
        "GT final answer": task.get("final_answer"),
    }
    gt, pred, answer = str(gt_final), str(steps), str(final)
    return {
        "grounding": f"GT: {gt}\nagent's reasoning steps: {pred}",
        "tool_precision": f"GT: {gt}\nagent's reasoning trace: {pred}",
        "tool_accuracy": f"tool metadata: {task.get('tool_metadata')!s}\nagent's reasoning steps: {pred}",
        "faithfulness": f"GT: {gt}\nagent's reasoning trace: {pred}",
        "goal_accuracy": (
            f"GT answer: {task.get('final_answer')!s}\nquery_type: {task.get('query_type')}\n"
            f"agent's final answer: {answer}"
        ),
        "toolset_accuracy": f"GT: {gt}\nagent's reasoning steps: {pred}",
        "context": f"GT: {gt}\nagent's reasoning_steps: {pred}",
        "factual_precision": f"GT: {gt}\nagent's reasoning steps: {pred}",
        "semantic_accuracy": f"GT: {gt}\nagent's reasoning steps: {pred}\nagent's final answer: {answer}",
    }


class Judge:
    """One OpenAI-compatible endpoint asked once per metric; replies cached in ``RUN/judge_cache``."""

    def __init__(self, spec: str, cache: JudgeCache) -> None:
        from pixelbox.harness.scoring.judges import parse_endpoint
        from pixelbox.harness.suites.agent_x.official import official_rubrics

        self.endpoint = parse_endpoint(spec)
        self.cache = cache
        official = official_rubrics()
        self.rubrics = official or RUBRICS
        prompts = "official" if official else "pixelbox"
        self.id = f"agent-x:{self.endpoint.model}@{self.endpoint.base_url} ({prompts} prompts)"

    def score(self, metric: str, user: str) -> dict[str, Any]:
        system = self.rubrics[metric]
        hit = self.cache.get(self.id, system + "\n" + user, "")
        if hit is not None and isinstance(hit.get("reply"), str):
            return {"score": parse_score(hit["reply"]), "reply": hit["reply"], "cached": True}
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        problem: JudgeError | None = None
        for _ in range(JUDGE_ATTEMPTS):
            reply = self.endpoint.complete(messages, max_tokens=1024, temperature=0.0)
            try:
                value = parse_score(reply)
            except JudgeError as exc:
                problem = exc
                continue
            self.cache.put(self.id, system + "\n" + user, "", {"reply": reply})
            return {"score": value, "reply": reply, "cached": False}
        assert problem is not None
        return {"score": None, "reply": None, "error": str(problem)}


def normalise_tool(name: Any, known: Sequence[str]) -> str:
    """A step's tool as a tool name: the known name it mentions (case and spaces ignored), else itself."""
    text = re.sub(r"[\s_-]+", "", str(name or "")).lower()
    for tool in sorted(known, key=len, reverse=True):
        if re.sub(r"[\s_-]+", "", tool).lower() in text:
            return tool
    return str(name or "").strip()


def toolset_f1(used: set[str], gt: set[str]) -> float:
    """F1 of two tool sets (1.0 when both are empty)."""
    if not used and not gt:
        return 1.0
    hits = len(used & gt)
    if hits == 0:
        return 0.0
    precision, recall = hits / len(used), hits / len(gt)
    return 2 * precision * recall / (precision + recall)


def deterministic(task: dict[str, Any], steps: Any, executed: bool) -> dict[str, float | None]:
    from pixelbox.harness.suites.agent_x.tools import SCHEMAS

    gt = set(task.get("tool_metadata") or {})
    known = sorted(set(SCHEMAS) | gt)
    rows = steps if isinstance(steps, list) else []
    if executed:
        ran = [r for r in rows if isinstance(r, dict) and r.get("ok")]
        used = {normalise_tool(r.get("tool"), known) for r in ran}
        good = sum(1 for r in ran if normalise_tool(r.get("tool"), known) in gt)
        precision = good / len(rows) if rows else None
        return {"toolset_f1": toolset_f1(used, gt), "tool_precision_run": precision, "tool_calls": float(len(rows))}
    used = {
        normalise_tool(r.get("tool_used") or r.get("tool"), known)
        for r in rows
        if isinstance(r, dict) and (r.get("tool_used") or r.get("tool"))
    }
    return {"toolset_f1": toolset_f1(used, gt), "tool_precision_run": None, "tool_calls": None}


def score_run(
    run_dir: str | Path, judges: Sequence[str], *, progress: bool, options: Any = None, include_infrastructure: bool
) -> dict[str, Any]:
    """Score every episode under ``run_dir``; writes and returns ``scores.json`` (with the run's G* and G_acc)."""
    from pixelbox.harness.scoring.run import CACHE_DIR
    from pixelbox.harness.suites.shared import run_traces, score_each, write_scores

    root, traces = run_traces(run_dir, SUITE)
    judge = build_judge(list(judges), root / CACHE_DIR)
    records = score_each(traces, lambda path: score_episode(path, judge), progress)
    figures = run_figures([r["score"] for r in records])
    return write_scores(root, SUITE, [judge.id] if judge else [], records, include_infrastructure, agentx=figures)


def build_judge(specs: Sequence[str], cache_dir: Path) -> Judge | None:
    from pixelbox.harness.suites.shared import judge_spec

    meaning = "openai:MODEL[@BASE_URL] (the judge metrics) or match (deterministic metrics only)"
    spec = judge_spec(specs, "Agent-X", meaning)
    return Judge(spec, JudgeCache(cache_dir)) if spec is not None else None


def run_figures(scores: list[dict[str, Any]]) -> dict[str, Any]:
    """Per mode: G_acc over non-generative episodes, and G* (the mean of the three tool metrics' means over
    the generative ones)."""
    out: dict[str, Any] = {}
    for mode in sorted({s["mode"] for s in scores}):
        mine = [s for s in scores if s["mode"] == mode and not s["infrastructure"]]
        goal = [s["metrics"]["goal_accuracy"] for s in mine if s["metrics"]["goal_accuracy"] is not None]
        generative = [s for s in mine if s["generative"]]
        means = {}
        for key in TOOL_METRICS:
            values = [s["metrics"][key] for s in generative if s["metrics"][key] is not None]
            means[key] = sum(values) / len(values) if values else None
        known = [v for v in means.values() if v is not None]
        out[mode] = {
            "goal_accuracy": sum(goal) / len(goal) if goal else None,
            "g_star": sum(known) / len(known) if len(known) == len(TOOL_METRICS) else None,
            "generative_means": means,
            "episodes": len(mine),
            "generative": len(generative),
        }
    return out


def score_episode(path: Path, judge: Judge | None) -> dict[str, Any]:
    from pixelbox.harness.suites.shared import episode_view
    from pixelbox.harness.traces.episode import read_episode

    episode = read_episode(path)
    task, end = episode.task, episode.end or {}
    status = str(end.get("status") or "unfinished")
    infrastructure = f"{status}: {end.get('reason')}" if status in INFRA_STATUSES else None
    start = next((r for r in episode.records if r.get("kind") == "episode_start"), {})
    executed = start.get("agentx_mode") == "executed"
    prediction = (end.get("totals") or {}).get("prediction")
    steps = prediction.get("reasoning_steps") if prediction else ""
    final = prediction.get("final_answer") if prediction else {"value": "", "justification": ""}
    generative = bool(task.get("generative"))
    metrics: dict[str, float | None] = {key: None for key in RUBRICS}
    judged: dict[str, Any] = {}
    if infrastructure is None and judge is not None:
        for metric, user in judge_inputs(task, official_steps(steps), final).items():
            if metric == "goal_accuracy" and generative:
                continue
            judged[metric] = judge.score(metric, user)
            metrics[metric] = judged[metric]["score"]
    three = [v for v in (metrics[k] for k in TOOL_METRICS) if v is not None]
    metrics["g_star"] = sum(three) / 3 if generative and len(three) == len(TOOL_METRICS) else None
    metrics.update(deterministic(task, steps, executed) if infrastructure is None else {})
    score = {
        "episode_id": f"{episode.model}-{episode.task_id}-{episode.mode}",
        "task_id": episode.task_id,
        "mode": episode.mode,
        "agentx_mode": "executed" if executed else "official",
        "model": episode.model,
        "suite": SUITE,
        "category": task.get("query_type"),
        "level": "video" if task.get("video") else "image",
        "generative": generative,
        "infrastructure": infrastructure,
        "prediction": final.get("value") if isinstance(final, dict) else final,
        "gold": (task.get("final_answer") or {}).get("value") if isinstance(task.get("final_answer"), dict) else None,
        "judge": judged or None,
        "metrics": metrics,
    }
    return {"score": score, "episode": episode_view(path, str(score["episode_id"]), episode.task_id)}


def official_steps(steps: Any) -> Any:
    """Executed steps in the official prediction's shape (task, tool_used, tool_output, thought)."""
    if not isinstance(steps, list):
        return steps
    out = []
    for row in steps:
        if isinstance(row, dict) and "output" in row and "tool_output" not in row:
            out.append(
                {
                    "step": row.get("step"),
                    "task": row.get("task"),
                    "tool_used": row.get("tool"),
                    "tool_input": row.get("input"),
                    "tool_output": row.get("output"),
                    "thought": row.get("thought"),
                }
            )
        else:
            out.append(row)
    return out
