"""The charts of a run's report: the primary metric (Acc) per category and per level, the other rate
metrics (V_tool, V_true...), calls per task, and failure labels, one series per mode.

Built from the summary and the scored records only, with the columns the scores declare, so
another suite's report gets the same charts over its own metrics.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .charts import Series, bar_chart, hbar_chart
from .columns import Column, metrics_of
from .report_tables import summary_columns

CALLS_CAP = 12
"""Calls per task above this are counted in one ``12+`` bar."""


def run_charts(summary: dict[str, Any], records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(chart_id, svg)`` pairs, in the order the report shows them."""
    columns = summary_columns(summary)
    primary = next((c for c in columns if c.key == summary.get("primary")), None)
    modes = sorted({str(r["mode"]) for r in summary["rows"]})
    charts = []
    if primary is not None and summary.get("categories"):
        charts.append(_by_category(summary, primary, modes))
    if primary is not None and summary["rows"]:
        charts.append(_by_level(summary, primary, modes))
    others = [c for c in columns if c.kind == "rate" and c is not primary and _has_values(summary, c)]
    if others:
        charts.append(_process(summary, others, modes))
    scores = [r["score"] for r in records if not r["score"].get("infrastructure")]
    if any(c.key == "calls" for c in columns) and scores:
        charts.append(_calls(scores, modes))
    failed = [r["score"] for r in records if r["score"].get("failure") or r["score"].get("infrastructure")]
    if failed:
        charts.append(_failures(failed, modes))
    return charts


def _row(summary: dict[str, Any], mode: str, level: str) -> dict[str, Any]:
    return next((r for r in summary["rows"] if r["mode"] == mode and r["level"] == level), {})


def _by_category(summary: dict[str, Any], primary: Column, modes: list[str]) -> tuple[str, str]:
    categories = sorted({str(r["category"]) for r in summary["categories"]})
    found = {(r["mode"], r["category"]): r.get(primary.key) for r in summary["categories"]}
    series = [Series(m, [found.get((m, c)) for c in categories]) for m in modes]
    return "chart-category", bar_chart("chart-category", f"{primary.label} by category", categories, series)


def _by_level(summary: dict[str, Any], primary: Column, modes: list[str]) -> tuple[str, str]:
    levels = [*sorted({str(r["level"]) for r in summary["rows"] if r["level"] != "overall"}), "overall"]
    series = [Series(m, [_row(summary, m, level).get(primary.key) for level in levels]) for m in modes]
    return "chart-level", bar_chart("chart-level", f"{primary.label} by level", levels, series)


def _process(summary: dict[str, Any], columns: list[Column], modes: list[str]) -> tuple[str, str]:
    series = [Series(m, [_row(summary, m, "overall").get(c.key) for c in columns]) for m in modes]
    title = ", ".join(c.label for c in columns) + " (all levels)"
    return "chart-process", bar_chart("chart-process", title, [c.label for c in columns], series)


def _has_values(summary: dict[str, Any], column: Column) -> bool:
    return any(r.get(column.key) is not None for r in summary["rows"])


def _calls(scores: list[dict[str, Any]], modes: list[str]) -> tuple[str, str]:
    counts = {m: Counter(_calls_bucket(metrics_of(s).get("calls")) for s in scores if s["mode"] == m) for m in modes}
    top = max((int(b.rstrip("+")) for c in counts.values() for b in c), default=0)
    buckets = [str(n) for n in range(top + 1)] if top < CALLS_CAP else [*map(str, range(CALLS_CAP)), f"{CALLS_CAP}+"]
    series = [Series(m, [float(counts[m].get(b, 0)) for b in buckets]) for m in modes]
    chart = bar_chart("chart-calls", "Calls per task (episodes)", buckets, series, percent=False)
    return "chart-calls", chart


def _calls_bucket(value: float | None) -> str:
    calls = int(value or 0)
    return f"{CALLS_CAP}+" if calls >= CALLS_CAP else str(calls)


def _failures(scores: list[dict[str, Any]], modes: list[str]) -> tuple[str, str]:
    labels = sorted({s["failure"]["label"] for s in scores if s.get("failure")})
    infra = any(s.get("infrastructure") for s in scores)
    rows = [*labels, *(["infrastructure (not the model)"] if infra else [])]

    def count(mode: str, label: str) -> float:
        if label.startswith("infrastructure"):
            return float(sum(1 for s in scores if s["mode"] == mode and s.get("infrastructure")))
        return float(sum(1 for s in scores if s["mode"] == mode and (s.get("failure") or {}).get("label") == label))

    series = [Series(m, [count(m, label) for label in rows]) for m in modes]
    return "chart-failures", hbar_chart("chart-failures", "Failure labels (episodes)", rows, series)
