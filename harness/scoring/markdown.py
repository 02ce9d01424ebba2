"""report.md: the HTML index's tables in Markdown, with its charts as the ``.svg`` files beside the pages.

The file sits in the run directory next to ``report/``, so links and images point into that folder.
"""

from __future__ import annotations

from typing import Any

from .report_tables import episodes_table, meta_table, summary_tables
from .tables import to_markdown

TITLES = {
    "chart-category": "by category",
    "chart-level": "by level",
    "chart-process": "process metrics",
    "chart-calls": "calls per task",
    "chart-failures": "failure labels",
}


def report_markdown(
    summary: dict[str, Any],
    episodes: list[dict[str, Any]],
    charts: list[tuple[str, str]],
    meta: dict[str, str],
    folder: str = "report/",
) -> str:
    """The whole report.md; ``folder`` is the HTML report's folder relative to report.md."""
    tables = summary_tables(summary)
    out = ["# pixelbox report", "", f"HTML report: [{folder}index.html]({folder}index.html)", ""]
    out.append(to_markdown(meta_table(meta)))
    out.append(to_markdown(tables[0]))
    if charts:
        out += ["## Charts", ""]
        out += [f"![{TITLES.get(cid, cid)}]({folder}assets/{cid}.svg)" for cid, _ in charts]
        out.append("")
    out += [to_markdown(t, link_prefix=folder) for t in tables[1:]]
    out.append(to_markdown(episodes_table(episodes), link_prefix=folder))
    return "\n".join(out)
