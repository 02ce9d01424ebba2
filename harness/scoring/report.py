"""Aggregate episode scores per mode and level (and per category) into the summary reports read.

Metrics are the columns the scores declare (:mod:`.columns`), so another suite's scores aggregate the
same way. Episodes ended by infrastructure are counted apart in every row (``infrastructure``) and
left out of the means unless ``include_infrastructure``.
"""

from __future__ import annotations

from collections import Counter
from statistics import mean
from typing import Any

from .columns import Column, metrics_of, primary_column, union_columns


def mean_of(values: list[float | None]) -> float | None:
    """The mean of the known values, rounded to 4 places; None when none is known."""
    known = [v for v in values if v is not None]
    return round(mean(known), 4) if known else None


def level_label(score: dict[str, Any]) -> str | None:
    """``L1``... for a positive integer level; None when the task has none."""
    level = score.get("level")
    return f"L{level}" if isinstance(level, int) and not isinstance(level, bool) and level > 0 else None


def summarize(episodes: list[dict[str, Any]], include_infrastructure: bool = False) -> dict[str, Any]:
    """Rows per (mode, level) and per mode overall, and per (mode, category): metric means over the
    episodes that define them, with ``n`` (episodes counted) and ``infrastructure`` (episodes whose run
    failed: agent endpoint, sandbox or harness failure, or never finished) apart.
    """
    infra = [e for e in episodes if e.get("infrastructure")]
    columns = union_columns(episodes)
    rows, categories = [], []
    for mode in sorted({str(e["mode"]) for e in episodes}):
        of_mode = [e for e in episodes if e["mode"] == mode]
        levels = sorted({label for e in of_mode if (label := level_label(e)) is not None})
        for level in [*levels, "overall"]:
            chosen = of_mode if level == "overall" else [e for e in of_mode if level_label(e) == level]
            rows.append({"mode": mode, "level": level, **_stats(chosen, columns, include_infrastructure)})
        for category in sorted({str(e["category"]) for e in of_mode if e.get("category")}):
            chosen = [e for e in of_mode if e.get("category") == category]
            categories.append({"mode": mode, "category": category, **_stats(chosen, columns, include_infrastructure)})
    failures = Counter(e["failure"]["label"] for e in episodes if e.get("failure"))
    statuses = Counter(str(e["infrastructure"]).split(":", 1)[0] for e in infra)
    return {
        "columns": [c.to_dict() for c in columns],
        "primary": primary_column(episodes).key,
        "rows": rows,
        "categories": categories,
        "episodes": len(episodes),
        "scored_episodes": len(episodes) if include_infrastructure else len(episodes) - len(infra),
        "failures": dict(sorted(failures.items())),
        "infrastructure": {
            "count": len(infra),
            "included_in_metrics": include_infrastructure,
            "all": bool(episodes) and len(infra) == len(episodes),
            "by_status": dict(sorted(statuses.items())),
            "episodes": [{"episode_id": e["episode_id"], "reason": e["infrastructure"]} for e in infra],
        },
        "tampered_episodes": sum(1 for e in episodes if e.get("tamper")),
    }


def _stats(episodes: list[dict[str, Any]], columns: list[Column], include_infrastructure: bool) -> dict[str, Any]:
    counted = episodes if include_infrastructure else [e for e in episodes if not e.get("infrastructure")]
    values = [metrics_of(e) for e in counted]
    stats: dict[str, Any] = {"n": len(counted), "infrastructure": sum(1 for e in episodes if e.get("infrastructure"))}
    for column in columns:
        stats[column.key] = mean_of([v.get(column.key) for v in values])
    return stats


def to_markdown(summary: dict[str, Any]) -> str:
    """The score tables (per mode and level, per category, failure labels, infrastructure) in Markdown,
    without links (``pixelbox score`` prints them before any report page exists)."""
    from .report_tables import summary_tables
    from .tables import to_markdown as table_markdown

    return "".join(table_markdown(t, link_prefix=None) for t in summary_tables(summary))
