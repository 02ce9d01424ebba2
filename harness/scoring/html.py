"""Static HTML report: an index (run metadata, score tables, charts, episodes) and one page per episode.

Everything is written under ``run_dir/report/`` with relative links, so the folder can be copied,
served or opened from disk: charts are inline SVG, overlays SVG over PNG copies of the inputs,
thumbnails PNG files in ``assets/`` (also where the charts are kept as ``.svg`` files for report.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from .charts import standalone
from .episode_page import episode_page
from .page import card, document
from .report_charts import run_charts
from .report_tables import episode_href, episodes_table, summary_tables
from .runmeta import run_meta
from .tables import to_html


def write_html(
    report_dir: Path, summary: dict[str, Any], episodes: list[dict[str, Any]], judges: list[str] | None = None
) -> Path:
    """Write ``index.html``, one page per episode and the chart files; returns the index path.

    ``assets/`` is emptied first, so it holds this report's images only (not those of episodes rerun since).
    """
    assets = report_dir / "assets"
    shutil.rmtree(assets, ignore_errors=True)
    assets.mkdir(parents=True, exist_ok=True)
    for record in episodes:
        meta = run_meta([record], judges or [])
        page = episode_page(record, assets, meta)
        (report_dir / episode_href(record["score"]["episode_id"])).write_text(page, encoding="utf-8")
    charts = run_charts(summary, episodes)
    for chart_id, svg in charts:
        (assets / f"{chart_id}.svg").write_text(standalone(svg), encoding="utf-8")
    index = report_dir / "index.html"
    index.write_text(index_page(summary, episodes, charts, run_meta(episodes, judges or [])), encoding="utf-8")
    return index


def index_page(
    summary: dict[str, Any], episodes: list[dict[str, Any]], charts: list[tuple[str, str]], meta: dict[str, str]
) -> str:
    """The report's front page: scores, charts, failure labels, infrastructure failures, every episode."""
    tables = summary_tables(summary)
    parts = [card(to_html(tables[0]), "scores")]
    parts.append(card("<h2>Charts</h2><div class='charts'>" + "".join(svg for _, svg in charts) + "</div>", "charts"))
    parts += [card(to_html(t), f"{t.id}-card") for t in tables[1:]]
    parts.append(card(to_html(episodes_table(episodes)), "episodes-card"))
    count = summary.get("episodes", len(episodes))
    return document("pixelbox report", "".join(parts), meta, f"Run report · {count} episode(s)")
