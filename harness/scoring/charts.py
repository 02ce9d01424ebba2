"""Charts as self-contained SVG: inline in the HTML pages, and as ``.svg`` files beside report.md.

No script, no web font, no external file: the charts render offline, in a browser or a file viewer.
Each bar is a ``rect.bar`` carrying ``data-series``, ``data-group`` and ``data-value`` (what it shows)
and a tooltip; a value that does not exist is drawn as ``n/a`` at the baseline, never as a zero bar.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
"""Tableau 10: distinguishable for most colour-blind readers, in a fixed order (series k gets colour k)."""
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif"
INK, MUTED, GRID = "#1f2933", "#616e7c", "#e4e7eb"
MIN_WIDTH = 380


@dataclass(frozen=True)
class Series:
    """One coloured set of bars: a value (or None) per group."""

    name: str
    values: list[float | None]


def bar_chart(chart_id: str, title: str, groups: list[str], series: list[Series], *, percent: bool = True) -> str:
    """Grouped vertical bars: one cluster per group, one bar per series; ``percent`` scales 0-1 to 0-100%."""
    bar = 36 if len(series) <= 2 else 28 if len(series) <= 4 else 20
    left = 52
    cluster = max(bar * len(series) + 18, (MIN_WIDTH - left - 16) / max(len(groups), 1))
    gap = cluster - bar * len(series)
    rotate = any(len(g) > max(6, cluster // 7) for g in groups)
    width = left + 16 + cluster * len(groups)
    legend, rows = _legend(series, left, 40, width - 16)
    top, bottom = 40 + 18 * rows, 70 if rotate else 36
    height = top + 200 + bottom
    plot_h = 200
    top_value = 1.0 if percent else _nice_max([v for s in series for v in s.values if v is not None])
    parts = [_title(title, width), legend]
    parts += _y_axis(left, top, plot_h, width - 16, top_value, percent)
    for g, group in enumerate(groups):
        x0 = left + g * cluster + gap / 2
        for k, one in enumerate(series):
            parts.append(_bar(x0 + k * bar, top, plot_h, bar - 3, one, g, group, top_value, percent, k))
        parts.append(_x_label(x0 + (cluster - gap) / 2, top + plot_h, group, rotate))
    return _svg(chart_id, title, width, height, parts)


def hbar_chart(chart_id: str, title: str, labels: list[str], series: list[Series]) -> str:
    """Grouped horizontal bars of counts (long labels such as failure labels read left of their bars)."""
    bar = 14
    row = bar * len(series) + 10
    left = min(300, 16 + 7 * max((len(label) for label in labels), default=4))
    width = max(520, left + 320)
    legend, rows = _legend(series, 16, 40, width - 16)
    top = 40 + 18 * rows
    height = top + row * max(len(labels), 1) + 34
    plot_w = width - left - 56
    top_value = _nice_max([v for s in series for v in s.values if v is not None])
    parts = [_title(title, width), legend]
    for tick in _ticks(top_value, False):
        x = left + plot_w * tick / top_value
        parts.append(f"<line x1='{x:.1f}' y1='{top - 4}' x2='{x:.1f}' y2='{height - 30}' stroke='{GRID}'/>")
        parts.append(_text(x, height - 16, f"{tick:g}", anchor="middle", size=11, fill=MUTED))
    for r, label in enumerate(labels):
        y0 = top + r * row + 4
        parts.append(_text(left - 8, y0 + row / 2 - 2, label, anchor="end", size=12))
        for k, one in enumerate(series):
            value = one.values[r]
            y = y0 + k * bar
            tip = escape(f"{one.name}: {label}: {_shown(value, False)}")
            if value is None:
                continue
            w = plot_w * value / top_value
            parts.append(
                f"<rect class='bar' x='{left}' y='{y:.1f}' width='{max(w, 1.5):.1f}' height='{bar - 3}' "
                f"fill='{PALETTE[k % len(PALETTE)]}' data-series='{escape(one.name)}' data-group='{escape(label)}' "
                f"data-value='{value:g}'><title>{tip}</title></rect>"
            )
            parts.append(_text(left + w + 4, y + bar - 5, _shown(value, False), size=11, fill=MUTED))
    return _svg(chart_id, title, width, height, parts)


def standalone(svg: str) -> str:
    """An inline chart as the content of a ``.svg`` file."""
    return "<?xml version='1.0' encoding='UTF-8'?>\n" + svg + "\n"


# -- pieces -------------------------------------------------------------------------------------------


def _svg(chart_id: str, title: str, width: float, height: float, parts: list[str]) -> str:
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' class='chart' id='{escape(chart_id)}' role='img' "
        f"aria-label='{escape(title)}' width='{width:.0f}' height='{height:.0f}' "
        f"viewBox='0 0 {width:.0f} {height:.0f}' "
        f'font-family="{FONT}"><title>{escape(title)}</title>'
        f"<rect width='100%' height='100%' fill='#ffffff'/>" + "".join(parts) + "</svg>"
    )


def _title(title: str, width: float) -> str:
    return _text(16, 24, title, size=15, weight="600")


def _legend(series: list[Series], left: float, y: float, right: float) -> tuple[str, int]:
    """The legend, wrapped onto as many rows as it needs between ``left`` and ``right``; and the rows used."""
    out, x, rows = [], left, 1
    for k, one in enumerate(series):
        step = 28 + 7 * len(one.name)
        if x > left and x + step > right:
            x, y, rows = left, y + 18, rows + 1
        out.append(f"<rect x='{x:.1f}' y='{y - 9}' width='11' height='11' rx='2' fill='{PALETTE[k % len(PALETTE)]}'/>")
        out.append(_text(x + 15, y, one.name, size=12, fill=MUTED))
        x += step
    return "".join(out), rows


def _y_axis(left: float, top: float, plot_h: float, right: float, top_value: float, percent: bool) -> list[str]:
    out = []
    for tick in _ticks(top_value, percent):
        y = top + plot_h - plot_h * tick / top_value
        out.append(f"<line x1='{left}' y1='{y:.1f}' x2='{right}' y2='{y:.1f}' stroke='{GRID}'/>")
        out.append(_text(left - 6, y + 4, _shown(tick, percent, axis=True), anchor="end", size=11, fill=MUTED))
    return out


def _bar(
    x: float,
    top: float,
    plot_h: float,
    width: float,
    series: Series,
    index: int,
    group: str,
    top_value: float,
    percent: bool,
    colour: int,
) -> str:
    value = series.values[index]
    base = top + plot_h
    if value is None:
        return _text(x + width / 2, base - 4, "n/a", anchor="middle", size=10, fill=MUTED)
    h = plot_h * min(value, top_value) / top_value
    tip = escape(f"{series.name}: {group}: {_shown(value, percent)}")
    narrow = width < 26
    shown = _shown(value, percent).rstrip("%") if narrow else _shown(value, percent)
    return (
        f"<rect class='bar' x='{x:.1f}' y='{base - h:.1f}' width='{width:.1f}' height='{max(h, 0.75):.1f}' rx='2' "
        f"fill='{PALETTE[colour % len(PALETTE)]}' data-series='{escape(series.name)}' data-group='{escape(group)}' "
        f"data-value='{value:g}'><title>{tip}</title></rect>"
        + _text(x + width / 2, base - h - 4, shown, anchor="middle", size=9 if narrow else 10, fill=INK)
    )


def _x_label(x: float, y: float, label: str, rotate: bool) -> str:
    shown = label if len(label) <= 24 else label[:23] + "…"
    if not rotate:
        return _text(x, y + 18, shown, anchor="middle", size=12)
    return (
        f"<text x='{x:.1f}' y='{y + 14:.1f}' font-size='12' fill='{INK}' text-anchor='end' "
        f"transform='rotate(-30 {x:.1f} {y + 14:.1f})'>{escape(shown)}<title>{escape(label)}</title></text>"
    )


def _text(
    x: float, y: float, text: str, *, anchor: str = "start", size: int = 12, fill: str = INK, weight: str = "400"
) -> str:
    return (
        f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' font-weight='{weight}' fill='{fill}' "
        f"text-anchor='{anchor}'>{escape(text)}</text>"
    )


def _ticks(top_value: float, percent: bool) -> list[float]:
    if percent:
        return [0.0, 0.25, 0.5, 0.75, 1.0]
    step = _step(top_value)
    return [step * k for k in range(round(top_value / step) + 1)]


def _step(biggest: float) -> float:
    """The smallest of 1, 2, 5, 10, 20, 50... that reaches ``biggest`` in at most five steps."""
    step = 1.0
    while math.ceil(biggest / step) > 5:
        step = step * 2.5 if str(int(step))[0] == "2" else step * 2
    return step


def _nice_max(values: list[float]) -> float:
    """The axis end for counts: the largest value rounded up to a whole step (at least 1)."""
    biggest = max(values, default=0.0)
    step = _step(biggest)
    return max(step, math.ceil(biggest / step) * step)


def _shown(value: float | None, percent: bool, axis: bool = False) -> str:
    if value is None:
        return "n/a"
    if percent:
        return f"{100 * value:.0f}%"
    return f"{value:g}" if axis or value == int(value) else f"{value:.2f}"
