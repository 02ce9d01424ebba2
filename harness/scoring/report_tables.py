"""The tables of a run's report, built once for both the HTML index and report.md.

Infrastructure failures are never shown as model failures: an episode whose run failed reads
``n/a`` in every metric, each aggregate row counts such episodes in its own ``infra`` column, and a
score table over episodes that all failed for infrastructure says so instead of showing nothing.
"""

from __future__ import annotations

from typing import Any

from .columns import INFRASTRUCTURE, Column, metrics_of, primary_of, union_columns
from .runmeta import meta_labels
from .tables import Cell, Table

PASS, FAIL = "pass", "fail"


def episode_href(episode_id: str) -> str:
    """The file name of an episode's page in the report folder."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in episode_id) + ".html"


def summary_columns(summary: dict[str, Any]) -> list[Column]:
    return [Column.from_dict(c) for c in summary.get("columns") or []]


def meta_table(meta: dict[str, str]) -> Table:
    """Run metadata, one field per row."""
    labels = meta_labels()
    return Table("run-meta", "Run", ["field", "value"], [[Cell(labels.get(k, k)), Cell(v)] for k, v in meta.items()])


def summary_tables(summary: dict[str, Any]) -> list[Table]:
    """Scores per mode and level, per category (when tasks have categories), failure labels, infrastructure."""
    tables = [score_table(summary)]
    if summary.get("categories"):
        tables.append(category_table(summary))
    tables.append(failure_table(summary))
    if (summary.get("infrastructure") or {}).get("count"):
        tables.append(infrastructure_table(summary))
    return tables


def score_table(summary: dict[str, Any]) -> Table:
    columns = summary_columns(summary)
    rows = [[Cell(r["mode"]), Cell(str(r["level"])), *_counts(r), *_metric_cells(r, columns)] for r in summary["rows"]]
    headers = ["mode", "level", "n", "infra", *(c.label for c in columns)]
    notes = [_infrastructure_note(summary), _tamper_note(summary)]
    return Table("summary", "Scores", headers, rows, " ".join(n for n in notes if n), "no episodes were scored")


def category_table(summary: dict[str, Any]) -> Table:
    columns = summary_columns(summary)
    rows = [
        [Cell(r["mode"]), Cell(r["category"]), *_counts(r), *_metric_cells(r, columns)] for r in summary["categories"]
    ]
    headers = ["mode", "category", "n", "infra", *(c.label for c in columns)]
    return Table("categories", "By category", headers, rows)


def _counts(row: dict[str, Any]) -> list[Cell]:
    infra = int(row.get("infrastructure") or 0)
    return [Cell(str(row["n"]), css="num"), Cell(str(infra), css="num infra" if infra else "num")]


def _metric_cells(row: dict[str, Any], columns: list[Column]) -> list[Cell]:
    if row["n"] == 0 and row.get("infrastructure"):
        why = "every episode of this row failed for infrastructure"
        return [Cell(INFRASTRUCTURE, css="na infra", title=why) for _ in columns]
    return [Cell(c.format(row.get(c.key)), css="num") for c in columns]


def _infrastructure_note(summary: dict[str, Any]) -> str:
    infra = summary.get("infrastructure") or {}
    count = int(infra.get("count") or 0)
    if infra.get("all"):
        return (
            f"Every episode ({count}) failed for infrastructure (agent endpoint, sandbox or harness), so no metric "
            "can be computed; the reasons are listed under Infrastructure failures."
        )
    if count and not infra.get("included_in_metrics"):
        return f"{count} episode(s) failed for infrastructure: counted in 'infra', left out of the metrics."
    if count:
        return f"{count} episode(s) failed for infrastructure and are counted as failures in the metrics, on request."
    return ""


def _tamper_note(summary: dict[str, Any]) -> str:
    count = summary.get("tampered_episodes") or 0
    return f"Episodes with executions flagged as tampered: {count} (see their pages)." if count else ""


def failure_table(summary: dict[str, Any]) -> Table:
    failures = summary.get("failures") or {}
    scored = max(int(summary.get("scored_episodes") or 0), 1)
    rows = [
        [Cell(label), Cell(str(n), css="num"), Cell(f"{100 * n / scored:.0f}%", css="num")]
        for label, n in failures.items()
    ]
    return Table("failures", "Failure labels", ["label", "episodes", "share of scored"], rows, empty="none")


def infrastructure_table(summary: dict[str, Any]) -> Table:
    infra = summary.get("infrastructure") or {}
    rows = []
    for item in infra.get("episodes") or []:
        status, _, reason = str(item["reason"]).partition(": ")
        rows.append(
            [Cell(item["episode_id"], href=episode_href(item["episode_id"])), Cell(status, css="infra"), Cell(reason)]
        )
    how = "counted as failures in the metrics" if infra.get("included_in_metrics") else "left out of the metrics"
    title = f"Infrastructure failures ({infra.get('count', 0)}, {how})"
    return Table("infrastructure", title, ["episode", "status", "reason"], rows)


def episodes_table(records: list[dict[str, Any]]) -> Table:
    """One row per episode, linked to its page; metrics of infrastructure failures read ``n/a``."""
    scores = [r["score"] for r in records]
    columns = union_columns(scores)
    with_category = any(s.get("category") for s in scores)
    headers = ["episode", *(["category"] if with_category else []), "level", "mode", *(c.label for c in columns)]
    rows = []
    for score in scores:
        row = [Cell(score["episode_id"], href=episode_href(score["episode_id"]))]
        row += [Cell(str(score.get("category") or ""))] if with_category else []
        row += [Cell(f"L{score['level']}" if score.get("level") else ""), Cell(str(score["mode"]))]
        row += episode_metric_cells(score, columns)
        rows.append([*row, _outcome_cell(score)])
    return Table("episodes", "Episodes", [*headers, "failure"], rows)


def episode_metric_cells(score: dict[str, Any], columns: list[Column]) -> list[Cell]:
    """An episode's metric cells: the primary as pass/fail, rates as %, numbers as decimals; ``n/a`` throughout
    when its run failed."""
    if score.get("infrastructure"):
        why = f"infrastructure failure: {score['infrastructure']}"
        return [Cell(INFRASTRUCTURE, css="na infra", title=why) for _ in columns]
    values, primary = metrics_of(score), primary_of(score)
    out = []
    for column in columns:
        value = values.get(column.key)
        if column.key == primary and value is not None and value in (0.0, 1.0):
            out.append(Cell(PASS if value else FAIL, css=PASS if value else FAIL))
        else:
            out.append(Cell(_episode_value(column, value), css="num"))
    return out


def _episode_value(column: Column, value: float | None) -> str:
    if value is None or column.kind != "number" or value != int(value):
        return column.format(value)
    return str(int(value))


def _outcome_cell(score: dict[str, Any]) -> Cell:
    if score.get("infrastructure"):
        return Cell(f"infrastructure: {score['infrastructure']}", css="infra")
    text = score["failure"]["label"] if score.get("failure") else ""
    if score.get("tamper"):
        text += f" (tampered executions: {len(score['tamper'])})"
    return Cell(text)
