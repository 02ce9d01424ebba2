"""Aggregate episode scores per mode and level (L1, L2, L3, overall) into JSON and Markdown."""

from __future__ import annotations

from collections import Counter
from statistics import mean
from typing import Any

METRICS = ("acc", "s", "v", "v_tool", "v_true", "calls", "overthink")
HEADERS = {
    "acc": "Acc",
    "s": "S",
    "v": "V",
    "v_tool": "V_tool",
    "v_true": "V_true",
    "calls": "calls/task",
    "overthink": "Overthink",
}


def _mean(values: list[Any]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return round(mean(known), 4) if known else None


def summarize(episodes: list[dict[str, Any]], include_infrastructure: bool = False) -> dict[str, Any]:
    """One row per (mode, level) and per mode overall: metric means over the episodes that define them.

    Episodes ended by infrastructure (``score["infrastructure"]`` set: agent endpoint, sandbox or
    harness failure, or never finished) are left out of the rows unless ``include_infrastructure``,
    and are listed under ``infrastructure`` either way.
    """
    infra = [e for e in episodes if e.get("infrastructure")]
    counted = episodes if include_infrastructure else [e for e in episodes if not e.get("infrastructure")]
    rows = []
    for mode in sorted({e["mode"] for e in counted}):
        of_mode = [e for e in counted if e["mode"] == mode]
        for level in ("L1", "L2", "L3", "overall"):
            chosen = of_mode if level == "overall" else [e for e in of_mode if f"L{e['level']}" == level]
            if chosen:
                rows.append(_row(mode, level, chosen))
    failures = Counter(e["failure"]["label"] for e in episodes if e.get("failure"))
    statuses = Counter(str(e["infrastructure"]).split(":", 1)[0] for e in infra)
    return {
        "rows": rows,
        "episodes": len(episodes),
        "scored_episodes": len(counted),
        "failures": dict(sorted(failures.items())),
        "infrastructure": {
            "count": len(infra),
            "included_in_metrics": include_infrastructure,
            "by_status": dict(sorted(statuses.items())),
            "episodes": [{"episode_id": e["episode_id"], "reason": e["infrastructure"]} for e in infra],
        },
        "tampered_episodes": sum(1 for e in episodes if e.get("tamper")),
    }


def _row(mode: str, level: str, episodes: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {"mode": mode, "level": level, "n": len(episodes)}
    for metric in METRICS:
        row[metric] = _mean([e[metric] for e in episodes])
    return row


def to_markdown(summary: dict[str, Any]) -> str:
    """The summary as a Markdown table plus the failure-mode counts."""
    head = ["mode", "level", "n", *(HEADERS[m] for m in METRICS)]
    lines = ["# Scores", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in summary["rows"]:
        cells = [row["mode"], row["level"], str(row["n"]), *(_cell(row[m], m) for m in METRICS)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Failure modes", ""]
    lines += [f"- {label}: {n}" for label, n in summary["failures"].items()] or ["- none"]
    infra = summary.get("infrastructure") or {}
    if infra.get("count"):
        how = "counted as failures in the table" if infra.get("included_in_metrics") else "left out of the table"
        lines += ["", f"## Infrastructure ({infra['count']} episode(s), {how})", ""]
        lines += [f"- infrastructure: {e['episode_id']}: {e['reason']}" for e in infra["episodes"]]
    if summary.get("tampered_episodes"):
        lines += ["", f"Episodes with executions flagged as tampered: {summary['tampered_episodes']}"]
    return "\n".join(lines) + "\n"


def _cell(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if metric in ("calls", "overthink") else f"{100 * value:.1f}%"
