"""Tables written once and rendered twice, as HTML and as Markdown, so report.md carries what the pages show.

A :class:`Table` is headers and rows of :class:`Cell` (text, an optional link, a CSS class for the
verdict colours and a tooltip); a ``note`` is printed above the rows (e.g. "every episode failed for
infrastructure") and ``empty`` stands in for a table without rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape


@dataclass(frozen=True)
class Cell:
    """One table cell; ``css`` is one of the report's classes (pass, fail, na, infra, num...)."""

    text: str
    href: str | None = None
    css: str = ""
    title: str = ""


@dataclass(frozen=True)
class Table:
    """A titled table with an id (the HTML element id, tests look for it)."""

    id: str
    title: str
    headers: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    note: str = ""
    empty: str = "none"


def cells(*texts: str) -> list[Cell]:
    """Plain cells."""
    return [Cell(t) for t in texts]


def to_html(table: Table, heading: str = "h2") -> str:
    """The table as an HTML section: heading, note, then the table (or the ``empty`` text)."""
    out = f"<{heading}>{escape(table.title)}</{heading}>" if table.title else ""
    if table.note:
        out += f"<p class='note' id='{table.id}-note'>{escape(table.note)}</p>"
    if not table.rows:
        return out + f"<p class='empty' id='{table.id}'>{escape(table.empty)}</p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    body = "".join("<tr>" + "".join(_html_cell(c) for c in row) + "</tr>" for row in table.rows)
    table_html = f"<table id='{table.id}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return out + f"<div class='scroll'>{table_html}</div>"


def _html_cell(cell: Cell) -> str:
    text = escape(cell.text)
    if cell.href:
        text = f"<a href='{escape(cell.href)}'>{text}</a>"
    css = f" class='{cell.css}'" if cell.css else ""
    title = f" title='{escape(cell.title)}'" if cell.title else ""
    return f"<td{css}{title}>{text}</td>"


def to_markdown(table: Table, heading: str = "##", link_prefix: str | None = "") -> str:
    """The same table in GitHub Markdown; links get ``link_prefix`` (report.md sits beside the report folder),
    or are left out with None (text for a terminal)."""
    lines = [f"{heading} {table.title}", ""] if table.title else []
    if table.note:
        lines += [f"**{_md(table.note)}**", ""]
    if not table.rows:
        return "\n".join([*lines, _md(table.empty), ""]) + "\n"
    lines.append("| " + " | ".join(_md(h) for h in table.headers) + " |")
    lines.append("|" + "---|" * len(table.headers))
    for row in table.rows:
        lines.append("| " + " | ".join(_md_cell(c, link_prefix) for c in row) + " |")
    return "\n".join(lines) + "\n\n"


def _md_cell(cell: Cell, prefix: str | None) -> str:
    text = _md(cell.text)
    return f"[{text}]({prefix}{cell.href})" if cell.href and prefix is not None else text


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
