"""The comparison report: ``index.html`` and ``compare.md`` with the same tables, charts as inline SVG and
``.svg`` files, ``compare.json`` with everything computed. Links lead to each episode's page in its run's
report, relative to the output folder, so the folders can be moved together.
"""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from typing import Any

from pixelbox import __version__
from pixelbox.harness.scoring.charts import Series, bar_chart, standalone
from pixelbox.harness.scoring.columns import INFRASTRUCTURE, NOT_APPLICABLE, Column
from pixelbox.harness.scoring.page import card, document
from pixelbox.harness.scoring.runmeta import run_meta
from pixelbox.harness.scoring.tables import Cell, Table, to_html, to_markdown

from .systems import System

STATE_TEXT = {"pass": "pass", "fail": "fail", "infra": "infra", "missing": "missing", "na": NOT_APPLICABLE}


def write_comparison(out: Path, comparison: dict[str, Any], systems: list[System]) -> dict[str, str]:
    """Write ``index.html``, ``compare.md``, ``compare.json`` and ``assets/*.svg`` under ``out``; returns the paths."""
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    links = _Links(out)
    charts = {suite["suite"]: _suite_charts(suite) for suite in comparison["suites"]}
    for suite_charts in charts.values():
        for chart_id, svg in suite_charts:
            (assets / f"{chart_id}.svg").write_text(standalone(svg), encoding="utf-8")
    meta = run_meta([r for s in systems for r in s.episodes.values()])
    if meta.get("pixelbox") != __version__:
        meta["pixelbox"] = f"{meta.get('pixelbox', 'n/a')} (compared with {__version__})"
    tables = _tables(comparison, systems, links)
    html = _html(comparison, tables, charts, meta)
    (out / "index.html").write_text(html, encoding="utf-8")
    (out / "compare.md").write_text(_markdown(comparison, tables, charts, meta), encoding="utf-8")
    (out / "compare.json").write_text(json.dumps(comparison, indent=1, default=str), encoding="utf-8")
    return {"html": str(out / "index.html"), "markdown": str(out / "compare.md"), "json": str(out / "compare.json")}


class _Links:
    """Paths relative to the output folder (links in index.html and compare.md)."""

    def __init__(self, out: Path) -> None:
        self.out = out.resolve()

    def to(self, target: str | Path) -> str:
        return os.path.relpath(Path(target).resolve(), self.out)


# -- tables -------------------------------------------------------------------------------------------


def _tables(comparison: dict[str, Any], systems: list[System], links: _Links) -> dict[str, Any]:
    return {
        "systems": _systems_table(systems, links),
        "across": _across_table(comparison["across_suites"]) if comparison["across_suites"] else None,
        "suites": {
            s["suite"]: {"aggregate": _aggregate_table(s), "pairs": _pairs_table(s), "grid": _grid_tables(s, links)}
            for s in comparison["suites"]
        },
    }


def _systems_table(systems: list[System], links: _Links) -> Table:
    headers = ["system", "model", "mode", "suite", "endpoint", "backend", "runtime", "date", "pixelbox", "episodes"]
    rows = []
    for system in systems:
        meta = system.meta
        report = system.run / "report" / "index.html"
        rows.append(
            [
                Cell(system.label, href=links.to(report)),
                *(Cell(v) for v in (system.model, system.mode, system.suite)),
                *(Cell(meta.get(k, "n/a")) for k in ("endpoint", "backend", "runtime", "date", "pixelbox")),
                Cell(str(len(system.episodes)), css="num"),
            ]
        )
    return Table("systems", "Systems compared", headers, rows)


def _aggregate_table(suite: dict[str, Any]) -> Table:
    columns = [Column.from_dict(c) for c in suite["columns"]]
    rows = []
    best = _best(suite)
    for row in suite["aggregate"]:
        cells = [Cell(row["system"]), Cell(str(row["n"]), css="num")]
        infra = row["infrastructure"]
        cells.append(Cell(str(infra), css="num infra" if infra else "num"))
        for column in columns:
            if row["n"] == 0 and infra:
                cells.append(Cell(INFRASTRUCTURE, css="na infra", title="every episode failed for infrastructure"))
                continue
            mark = column.key == suite["metric"] and row["system"] in best
            cells.append(Cell(column.format(row.get(column.key)), css="num best" if mark else "num"))
        rows.append(cells)
    headers = ["system", "n", "infra", *(c.label for c in columns)]
    note = f"{suite['metric_label']} decides pass/fail; infra counts episodes whose run failed (left out of the means)."
    return Table(f"aggregate-{_id(suite['suite'])}", f"{suite['suite']}: aggregate", headers, rows, note)


def _best(suite: dict[str, Any]) -> set[str]:
    values = [(r["system"], r.get(suite["metric"])) for r in suite["aggregate"]]
    known = [v for _, v in values if v is not None]
    if len(values) < 2 or not known or _metric(suite).better is None:
        return set()
    best = min(known) if _metric(suite).better == "lower" else max(known)
    return {name for name, v in values if v == best}


def _metric(suite: dict[str, Any]) -> Column:
    return Column.from_dict(suite["metric_column"])


def _pairs_table(suite: dict[str, Any]) -> Table:
    label = suite["metric_label"]
    headers = ["A", "B", "shared tasks", f"{label} A", f"{label} B", "A - B", "interval", "p", "A / B better on"]
    headers.append("verdict")
    rows = []
    for pair in suite["pairs"]:
        if not pair["tasks"]:
            empty = [Cell(NOT_APPLICABLE)] * 6
            rows.append([Cell(pair["a"]), Cell(pair["b"]), Cell("0", css="num"), *empty, Cell("no shared task")])
            continue
        metric = _metric(suite)
        ci = f"[{_difference(pair['low'], metric)}, {_difference(pair['high'], metric)}]"
        verdict, css = _verdict(pair, metric)
        rows.append(
            [
                Cell(pair["a"]),
                Cell(pair["b"]),
                Cell(str(pair["tasks"]), css="num"),
                Cell(metric.format(pair["mean_a"]), css="num"),
                Cell(metric.format(pair["mean_b"]), css="num"),
                Cell(_difference(pair["difference"], metric), css="num"),
                Cell(ci, css="num"),
                Cell(f"{pair['p']:.3f}", css="num"),
                Cell(f"{pair['a_better']} / {pair['b_better']}", css="num"),
                Cell(verdict, css=css),
            ]
        )
    boot = suite["pairs"][0] if suite["pairs"] and suite["pairs"][0]["tasks"] else None
    how = (
        f"Paired bootstrap over the tasks both systems have a value for ({boot['resamples']} resamples, seed "
        f"{boot['seed']}, {100 * boot['confidence']:.0f}% percentile interval)."
        if boot
        else "Paired bootstrap over shared tasks."
    )
    title = f"{suite['suite']}: differences in {label}"
    return Table(f"pairs-{_id(suite['suite'])}", title, headers, rows, how, "only one system: nothing to pair")


def _verdict(pair: dict[str, Any], metric: Column) -> tuple[str, str]:
    """Which system the interval favours, given whether the metric is better higher or lower."""
    if not pair["significant"] or metric.better is None:
        return ("no clear difference", "") if not pair["significant"] else ("differ", "")
    a_ahead = (pair["difference"] > 0) == (metric.better == "higher")
    return ("A ahead", "pass") if a_ahead else ("B ahead", "fail")


def _difference(value: float, metric: Column) -> str:
    """A difference in percentage points for rates, in the metric's units otherwise."""
    return f"{100 * value:+.1f} pp" if metric.kind == "rate" else f"{value:+.2f}"


def _grid_tables(suite: dict[str, Any], links: _Links) -> tuple[Table, Table]:
    """The per-task grid split into tasks where the systems differ and tasks where they agree."""
    labels = [r["system"] for r in suite["aggregate"]]
    with_category = any(row["category"] for row in suite["grid"])
    headers = ["task", *(["category"] if with_category else []), *labels]
    differ: list[list[Cell]] = []
    agree: list[list[Cell]] = []
    for row in suite["grid"]:
        cells = [Cell(row["task_id"]), *([Cell(row["category"] or "")] if with_category else [])]
        for label in labels:
            cell = row["cells"].get(label) or {"state": "missing", "value": None, "page": None}
            text = STATE_TEXT.get(cell["state"]) or _metric(suite).format(cell["value"])
            href = links.to(cell["page"]) if cell["page"] else None
            cells.append(Cell(text, href=href, css=f"cell {cell['state']}"))
        (differ if row["differs"] else agree).append(cells)
    ident = _id(suite["suite"])
    title = f"{suite['suite']}: tasks where the systems differ ({len(differ)} of {len(suite['grid'])})"
    first = Table(f"grid-{ident}", title, headers, differ, empty="the systems agree on every task")
    second = Table(f"grid-{ident}-agree", f"tasks where they agree ({len(agree)})", headers, agree, empty="none")
    return first, second


def _across_table(across: dict[str, Any]) -> Table:
    suites = across["suites"]
    rows = []
    for model, by_suite in across["models"].items():
        cells = [Cell(model)]
        for suite in suites:
            found = by_suite.get(suite)
            if found is None:
                cells.append(Cell(NOT_APPLICABLE, css="na", title="not run on this suite"))
            elif found["n"] == 0 and found["infrastructure"]:
                cells.append(Cell(INFRASTRUCTURE, css="na infra", title="every episode failed for infrastructure"))
            else:
                value = found["value"]
                text = NOT_APPLICABLE if value is None else f"{100 * value:.1f}% {found['metric']} (n={found['n']})"
                cells.append(Cell(text, css="num"))
        rows.append(cells)
    return Table("across-suites", "The same model across suites", ["model · mode", *suites], rows)


# -- charts -------------------------------------------------------------------------------------------


def _suite_charts(suite: dict[str, Any]) -> list[tuple[str, str]]:
    ident, label = _id(suite["suite"]), suite["metric_label"]
    systems = [r["system"] for r in suite["aggregate"]]
    charts = []
    if suite["categories"]:
        groups = list(suite["categories"])
        series = [Series(s, [suite["categories"][g].get(s) for g in groups]) for s in systems]
        title = f"{suite['suite']}: {label} by category"
        charts.append((f"chart-{ident}-category", bar_chart(f"chart-{ident}-category", title, groups, series)))
    levels = list(suite["levels"])
    overall = {r["system"]: r.get(suite["metric"]) for r in suite["aggregate"]}
    series = [Series(s, [*(suite["levels"][g].get(s) for g in levels), overall.get(s)]) for s in systems]
    title = f"{suite['suite']}: {label} by level"
    charts.append((f"chart-{ident}-level", bar_chart(f"chart-{ident}-level", title, [*levels, "overall"], series)))
    rates = [Column.from_dict(c) for c in suite["columns"] if c.get("kind") == "rate"]
    if len(rates) > 1:
        series = [Series(r["system"], [r.get(c.key) for c in rates]) for r in suite["aggregate"]]
        title = f"{suite['suite']}: every rate metric"
        chart = bar_chart(f"chart-{ident}-metrics", title, [c.label for c in rates], series)
        charts.append((f"chart-{ident}-metrics", chart))
    return charts


# -- pages --------------------------------------------------------------------------------------------


def _html(comparison: dict[str, Any], tables: dict[str, Any], charts: dict[str, Any], meta: dict[str, str]) -> str:
    parts = [card(to_html(tables["systems"]), "systems-card")]
    if tables["across"] is not None:
        parts.append(card(to_html(tables["across"]), "across-card"))
    for suite in comparison["suites"]:
        name = suite["suite"]
        own = tables["suites"][name]
        differ, agree = own["grid"]
        svg = "".join(s for _, s in charts[name])
        folded = f"<details class='agree'><summary>{escape(agree.title)}</summary>{to_html(agree, 'h3')}</details>"
        grid = to_html(differ) + folded
        parts += [
            card(to_html(own["aggregate"]), f"suite-{_id(name)}"),
            card(f"<h2>{escape(name)}: charts</h2><div class='charts'>{svg}</div>", f"charts-{_id(name)}"),
            card(to_html(own["pairs"]), f"pairs-card-{_id(name)}"),
            card(grid, f"grid-card-{_id(name)}"),
        ]
    heading = f"Comparison · {len(comparison['systems'])} systems"
    return document("pixelbox comparison", "".join(parts), meta, heading)


def _markdown(comparison: dict[str, Any], tables: dict[str, Any], charts: dict[str, Any], meta: dict[str, str]) -> str:
    from pixelbox.harness.scoring.report_tables import meta_table

    out = ["# pixelbox comparison", "", "HTML: [index.html](index.html)", "", to_markdown(meta_table(meta))]
    out.append(to_markdown(tables["systems"]))
    if tables["across"] is not None:
        out.append(to_markdown(tables["across"]))
    for suite in comparison["suites"]:
        own = tables["suites"][suite["suite"]]
        out.append(to_markdown(own["aggregate"]))
        out += [f"![{cid}](assets/{cid}.svg)" for cid, _ in charts[suite["suite"]]] + [""]
        out.append(to_markdown(own["pairs"]))
        out += [to_markdown(t, heading="###" if n else "##") for n, t in enumerate(own["grid"])]
    return "\n".join(out)


def _id(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower())
