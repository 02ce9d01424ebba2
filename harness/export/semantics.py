"""Verified and official semantics side by side: both columns per episode and every disagreement, with why.

``verified`` is pixelbox's scoring (executed operations, parameters, lineage, replay-verified
evidence; ``scores.json``); ``official`` the official evaluator's reading of our export
(:mod:`.official_score`). A disagreement names the task, mode, what differs (a checkpoint, an
ordering constraint, the efficiency penalty) and the reason, e.g. which operations the official
reading of the code lists against the operations that executed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pixelbox.harness.export.official_vtool import exported_folders


def _ops(entries: list[dict[str, Any]]) -> list[str]:
    names = []
    for entry in entries:
        if entry.get("raw_tool_name") in ("script_exec",):
            continue
        op = (entry.get("arguments") or {}).get("op")
        names.append(str(op or entry.get("tool_name")))
    return names


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def episode_rows(scores: dict[str, Any], export_root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one row per episode with both columns, the disagreements with their reasons)."""
    folders = exported_folders(export_root)
    rows: list[dict[str, Any]] = []
    disagreements: list[dict[str, Any]] = []
    for record in scores.get("episodes") or []:
        score = record["score"]
        folder = folders.get((score["mode"], score["model"], score["task_id"]))
        if folder is None:
            continue
        result = _read(folder / "result_scored.json")
        if result is None or result.get("incomplete_run"):
            continue
        official = result["eval"]
        listed = _ops(_read(folder / "tool_use_list.json") or [])
        executed = _ops((_read(folder / "pixelbox.json") or {}).get("executed") or [])
        why_ops = (
            f"official reading lists: {', '.join(listed) or 'nothing'}; executed: {', '.join(executed) or 'nothing'}"
        )
        row = {
            "task_id": score["task_id"],
            "mode": score["mode"],
            "model": score["model"],
            "verified": {"acc": score["acc"], "s": score["s"], "v": score["v"], "overthink": score["overthink"]},
            "official": {
                "acc": official["final_answer_accuracy"]["correct"],
                "s": official["scores"]["S"],
                "v": official["scores"]["V"],
                "penalty": official["scores"]["penalty"],
            },
        }
        rows.append(row)
        base = {"task_id": score["task_id"], "mode": score["mode"]}
        if row["verified"]["acc"] != row["official"]["acc"]:
            reason = f"{score.get('acc_reason')}; official {official['final_answer_accuracy']['match_type']} match"
            disagreements.append(
                {
                    **base,
                    "what": "final answer",
                    "verified": score["acc"],
                    "official": row["official"]["acc"],
                    "reason": reason,
                }
            )
        disagreements += _checkpoints(base, score, official, why_ops)
        disagreements += _ordering(base, score, folder, official)
        ours_over = bool(score.get("overthink"))
        theirs = float(official["scores"]["penalty"] or 0.0) > 0
        if ours_over != theirs:
            calls = official["efficiency"]
            reason = (
                f"official effective_tool_calls {calls['effective_tool_calls']} vs reference "
                f"{calls['reference_tool_calls']} (penalty {official['scores']['penalty']:g}); "
                f"verified overthink {score.get('overthink')}; {why_ops}"
            )
            disagreements.append(
                {**base, "what": "efficiency", "verified": ours_over, "official": theirs, "reason": reason}
            )
    return rows, disagreements


def _checkpoints(
    base: dict[str, Any], score: dict[str, Any], official: dict[str, Any], why_ops: str
) -> list[dict[str, Any]]:
    found = []
    results = official.get("checkpoint_results") or {}
    for mine in score.get("checkpoints") or []:
        theirs = results.get(mine["checkpoint_id"])
        if theirs is None or "passed" not in theirs or mine.get("passed") is None:
            continue
        if bool(mine["passed"]) == bool(theirs["passed"]):
            continue
        how = theirs.get("matched_by") or ("verifier" if "code_check" in theirs else "no matching entry")
        evidence = mine.get("evidence") or {}
        ours = "; ".join(str(x) for x in [evidence.get("reason"), evidence.get("true_reason")] if x) or "-"
        reason = f"official: {how}, hit entry {theirs.get('hit_index')}; verified: {ours}; {why_ops}"
        found.append(
            {
                **base,
                "what": f"checkpoint {mine['checkpoint_id']}",
                "verified": mine["passed"],
                "official": theirs["passed"],
                "reason": reason,
            }
        )
    return found


def _ordering(
    base: dict[str, Any], score: dict[str, Any], folder: Path, official: dict[str, Any]
) -> list[dict[str, Any]]:
    """Ordering constraints recomputed from the official hit indices against ours."""
    from pixelbox.harness.export.official_eval import ordering_verdict as official_order

    task = _read(Path((_read(folder / "run_meta.json") or {}).get("task_file", ""))) or {}
    results = official.get("checkpoint_results") or {}
    hits = {cid: r.get("hit_index") for cid, r in results.items()}
    found = []
    ours = {o.get("constraint_id"): o for o in score.get("orders") or []}
    for constraint in (task.get("process_evaluation") or {}).get("ordering_constraints") or []:
        theirs = official_order(constraint, results, hits)
        mine = ours.get(str(constraint.get("id", "")))
        if mine is None or bool(mine["passed"]) == theirs["passed"]:
            continue
        indices, gap = theirs["indices"], theirs["max_gap"]
        reason = f"official entry indices {indices} (max_gap {gap}); verified: {mine.get('reason')}"
        found.append(
            {
                **base,
                "what": f"ordering {theirs['id']}",
                "verified": mine["passed"],
                "official": theirs["passed"],
                "reason": reason,
            }
        )
    return found


def summary_lines(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """One line per official summary file: its figures as the official evaluator prints them."""
    lines = []
    for path, data in summaries.items():
        o = data.get("overall_scores") or {}
        if not o:
            continue
        lines.append(
            f"official {data['mode']}/{data['model']}: final answer {o['final_answer_accuracy']:.4f} "
            f"({o['final_answer_correct_count']}/{o['total_cases']}), S {o['avg_S']:.4f} ({o['total_s_cases']}), "
            f"V {o['avg_V']:.4f} ({o['total_v_cases']}), penalty {o['avg_penalty']:.4f}, perfect {o['perfect_cases']}, "
            f"pass@50 {o['checkpoint_pass_rate_50']:.4f}, pass@80 {o['checkpoint_pass_rate_80']:.4f} -> {path}"
        )
    return lines


def semantics_markdown(rows: list[dict[str, Any]], disagreements: list[dict[str, Any]]) -> str:
    """Both columns per episode and the disagreements, as Markdown (the CLI prints it; report.md ends with it)."""
    lines = [
        "| task | mode | acc verified | acc official | V verified | V official | overthink | penalty |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        v, o = row["verified"], row["official"]
        lines.append(
            f"| {row['task_id']} | {row['mode']} | {v['acc']} | {o['acc']} | {_num(v['v'])} | {_num(o['v'])} "
            f"| {_num(v['overthink'])} | {_num(o['penalty'])} |"
        )
    lines.append(f"{len(disagreements)} disagreement(s) between verified and official semantics")
    for item in disagreements:
        lines.append(
            f"- {item['task_id']} [{item['mode']}] {item['what']}: verified {item['verified']}, "
            f"official {item['official']}: {item['reason']}"
        )
    return "\n".join(lines) + "\n"


def _num(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}"
