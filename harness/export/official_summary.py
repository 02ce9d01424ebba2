"""The official evaluator's summary file for one mode and model, from its per-run result records.

Our reading of how ``evaluation/eval_runs_search.py`` aggregates (the figures must match to the
digit): averages of S and V over the runs that have them (0.0 when none), final-answer accuracy,
average penalty, effective tool calls, tool usage counted from each ``tool_use_list.json`` (an
entry's ``arguments.op``, else its tool name), perfect cases (PQS exactly 1), the share of runs
passing at least 50 % and 80 % of their checkpoints (the final-answer placeholder left out), the
same per level (``meta.level`` equal to 1, 2 or 3 in the task file, so ``"1"`` as text is in no
level), and the overthink analysis against the tasks' reference calls. Search checkpoint counts read
``task_json`` from the results, which the runners never write, so they stay 0, as officially.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LEVELS = (("L1", 1), ("L2", 2), ("L3", 3))


def _read(path: Any) -> dict[str, Any] | None:
    """A task file as the evaluator reads it (None when there is none)."""
    if not path or not Path(str(path)).exists():
        return None
    data: dict[str, Any] = json.loads(Path(str(path)).read_text(encoding="utf-8"))
    return data


def _tool_usage(results: list[dict[str, Any]]) -> dict[str, int]:
    counter: dict[str, int] = {}
    for record in results:
        path = Path(record["run_dir"]) / "tool_use_list.json"
        if not path.exists():
            continue
        for entry in json.loads(path.read_text(encoding="utf-8")):
            if (entry.get("output") or {}).get("declared_only"):
                continue
            op = (entry.get("arguments") or {}).get("op") or ""
            name = entry.get("tool_name") or entry.get("raw_tool_name") or ""
            key = op.lower() if op else name.lower()
            if key:
                counter[key] = counter.get(key, 0) + 1
    return dict(sorted(counter.items(), key=lambda item: -item[1]))


def _checkpoint_passes(results: list[dict[str, Any]]) -> tuple[int, int]:
    at_50 = at_80 = 0
    for record in results:
        total = passed = 0
        for data in (record["eval"].get("checkpoint_results") or {}).values():
            if data.get("axis") == "V" and len(data) == 1:
                continue
            total += 1
            passed += 1 if data.get("passed", False) else 0
        if total:
            at_50 += 1 if passed / total >= 0.5 else 0
            at_80 += 1 if passed / total >= 0.8 else 0
    return at_50, at_80


def subset_scores(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of ``overall_scores`` / ``level_scores`` for a set of result records."""
    total = len(results)
    scores = [r["eval"]["scores"] for r in results]
    s_values = [s["S"] for s in scores if s["S"] is not None]
    v_values = [s["V"] for s in scores if s["V"] is not None]
    correct = sum(1 for r in results if r["eval"].get("final_answer_accuracy", {}).get("correct", False))
    calls = sum(r["eval"]["efficiency"]["effective_tool_calls"] for r in results)
    usage = _tool_usage(results)
    at_50, at_80 = _checkpoint_passes(results)
    return {
        "total_cases": total,
        "avg_S": round(sum(s_values) / len(s_values), 4) if s_values else 0.0,
        "avg_V": round(sum(v_values) / len(v_values), 4) if v_values else 0.0,
        "total_s_cases": len(s_values),
        "total_v_cases": len(v_values),
        "final_answer_accuracy": round(correct / total, 4),
        "final_answer_correct_count": correct,
        "avg_penalty": round(sum(s.get("penalty", 0.0) for s in scores) / total, 4),
        "total_tool_calls": calls,
        "avg_tool_calls_per_case": round(calls / total, 2),
        "unique_tool_types": len(usage),
        "tool_usage": usage,
        "perfect_cases": sum(1 for s in scores if s.get("PQS", 0.0) == 1.0),
        "checkpoint_pass_rate_50": round(at_50 / total, 4),
        "checkpoint_pass_rate_80": round(at_80 / total, 4),
        "cases_pass_50_checkpoints": at_50,
        "cases_pass_80_checkpoints": at_80,
    }


def level_scores(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-level figures for the levels that have runs."""
    buckets: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in LEVELS}
    for record in results:
        try:
            task = _read(record.get("task_file", "") or record.get("task_json", ""))
            if task is None:
                continue
            level = task.get("meta", {}).get("level", 0)
            for name, number in LEVELS:
                if level == number:
                    buckets[name].append(record)
                    break
        except Exception:  # the evaluator skips a task it cannot read
            continue
    return {name: subset_scores(found) for name, found in buckets.items() if found}


class _Human:
    """The reference side of the overthink analysis, accumulated task by task."""

    def __init__(self) -> None:
        self.reference_calls = 0
        self.s_checkpoints = 0
        self.tools: dict[str, int] = {}
        self.exceeded_max = 0

    def count(self, name: str) -> None:
        self.tools[name] = self.tools.get(name, 0) + 1

    def add(self, record: dict[str, Any], model_calls: int) -> None:
        """One task's reference figures; a task that breaks the reading keeps what was counted before."""
        try:
            task = _read(record.get("task_file", ""))
            if task is None:
                return
            process = task.get("process_evaluation", {})
            checkpoints = process.get("checkpoints", [])
            searches = [cp for cp in checkpoints if cp.get("axis") == "S"]
            self.s_checkpoints += len(searches)
            for cp in searches:
                for tool in cp.get("tools", []):
                    self.count(tool.lower())
            for cp in (cp for cp in checkpoints if cp.get("axis") == "V"):
                verifier = (cp.get("code_check", {}).get("verifier", "") or "").lower()
                op = next((p for p in ("crop", "flip", "rotate", "enhance", "resize") if p in verifier), None)
                for tool in cp.get("tools", []):
                    name = tool.lower()
                    self.count(op if op else name)
            cap = process.get("efficiency", {}).get("max_tool_calls", 0)
            if cap > 0 and model_calls > cap:
                self.exceeded_max += 1
        except Exception:  # the evaluator skips the rest of a task it cannot read
            return


def overthink(results: list[dict[str, Any]], total_calls: int) -> dict[str, Any]:
    """``overthink_analysis``: model calls against the tasks' reference calls."""
    human = _Human()
    over = under = optimal = 0
    ratios = []
    for record in results:
        efficiency = record["eval"].get("efficiency", {})
        reference = efficiency.get("reference_tool_calls", 0)
        calls = efficiency.get("effective_tool_calls", 0)
        human.reference_calls += reference
        human.add(record, calls)
        if reference > 0:
            over += 1 if calls > reference else 0
            under += 1 if calls < reference else 0
            optimal += 1 if calls == reference else 0
            ratios.append(calls / reference)
    total = len(results)
    return {
        "human_total_reference_calls": human.reference_calls,
        "human_avg_reference_calls": round(human.reference_calls / total, 2),
        "human_total_s_checkpoints": human.s_checkpoints,
        "human_avg_s_checkpoints": round(human.s_checkpoints / total, 2),
        "human_tool_usage": dict(sorted(human.tools.items(), key=lambda item: -item[1])),
        "model_total_calls": total_calls,
        "model_avg_calls": round(total_calls / total, 2),
        "total_excess_calls": total_calls - human.reference_calls,
        "avg_excess_calls": round((total_calls - human.reference_calls) / total, 2),
        "avg_overthink_ratio": round(sum(ratios) / len(ratios) if ratios else 0, 2),
        "cases_overthink": over,
        "cases_underthink": under,
        "cases_optimal": optimal,
        "cases_exceeded_max": human.exceeded_max,
        "pct_overthink": round(over / total * 100, 1),
        "pct_underthink": round(under / total * 100, 1),
        "pct_optimal": round(optimal / total * 100, 1),
    }


def _search_counts(results: list[dict[str, Any]]) -> tuple[int, int]:
    total = passed = 0
    for record in results:
        try:
            task = _read(record.get("task_json"))
            if task is None:
                continue
            for cp in task.get("process_evaluation", {}).get("checkpoints", []):
                if any(t.lower() == "google_search" for t in cp.get("tools") or []):
                    total += 1
                    data = record["eval"].get("checkpoint_results", {}).get(cp.get("id"), {})
                    passed += 1 if data.get("search_check", {}).get("passed", False) else 0
        except Exception:
            continue
    return total, passed


def summary_file(mode: str, model: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole ``runs/scores/{mode}_{model}_scored.json`` document."""
    overall: dict[str, Any] = {}
    levels: dict[str, Any] = {}
    thinking: dict[str, Any] = {}
    if results:
        levels = level_scores(results)
        overall = subset_scores(results)
        thinking = overthink(results, overall["total_tool_calls"])
        total, passed = _search_counts(results)
        overall["search_checkpoints_total"] = total
        overall["search_checkpoints_passed"] = passed
        overall["search_checkpoint_pass_rate"] = round(passed / total, 4) if total else 0.0
    return {
        "model": model,
        "mode": mode,
        "shard": None,
        "num_shards": None,
        "overall_scores": overall,
        "level_scores": levels,
        "overthink_analysis": thinking,
        "count": len(results),
        "run_ids": None,
        "results": results,
    }
