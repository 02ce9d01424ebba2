"""The frame every report page shares: one stylesheet, a header with the run metadata, a content column.

Pages are static files with relative links and no script beyond marking images loaded, so a report
folder can be copied, served, or opened from disk without a network.
"""

from __future__ import annotations

from html import escape

from .runmeta import meta_labels

STYLE = """
:root{--ink:#1f2933;--muted:#616e7c;--line:#d9dee3;--bg:#f5f7fa;--card:#fff;--accent:#2f6db5;
--pass:#e3f4e6;--pass-ink:#1d6b33;--fail:#fbe3e3;--fail-ink:#9b1c1c;--infra:#fff4d6;--infra-ink:#7a5200}
*{box-sizing:border-box} body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",
sans-serif;color:var(--ink);background:var(--bg)} a{color:var(--accent)}
header.top{background:#1f2933;color:#e4e7eb;padding:12px 28px 14px} header.top a{color:#9fc5f8}
header.top .bar{display:flex;gap:18px;align-items:baseline;flex-wrap:wrap}
header.top .brand{font-weight:700;color:#fff;font-size:15px;letter-spacing:.02em}
header.top h1{font-size:20px;margin:6px 0 8px;color:#fff;font-weight:600;word-break:break-all}
dl.meta{display:flex;flex-wrap:wrap;gap:4px 20px;margin:0;font-size:12.5px}
dl.meta div{display:flex;gap:6px} dl.meta dt{color:#9aa5b1} dl.meta dd{margin:0;color:#fff;font-weight:600}
main{max-width:1240px;margin:0 auto;padding:12px 28px 56px}
section.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:6px 18px 14px;
margin:16px 0;box-shadow:0 1px 2px rgba(31,41,51,.04)}
h2{font-size:17px;margin:12px 0 8px} h3{font-size:15px;margin:12px 0 6px}
.scroll{overflow-x:auto} table{border-collapse:collapse;font-size:13px;background:#fff;margin:4px 0}
th{background:#eef1f4;text-align:left;font-weight:600} td,th{border:1px solid var(--line);padding:4px 9px;
vertical-align:top} td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.pass,span.pass{background:var(--pass);color:var(--pass-ink);font-weight:600}
td.fail,span.fail{background:var(--fail);color:var(--fail-ink);font-weight:600}
td.infra,span.infra{background:var(--infra);color:var(--infra-ink)} td.na{color:var(--muted)}
tr.differs td:first-child{border-left:3px solid #e0a800}
p.note{background:var(--infra);border-left:4px solid #e0a800;padding:6px 12px;margin:6px 0;border-radius:4px}
p.empty{color:var(--muted)} .muted{color:var(--muted)}
.charts{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}
.charts svg.chart{border:1px solid var(--line);border-radius:8px;max-width:100%;height:auto}
.pill{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12.5px;font-weight:600;margin-right:4px}
.stats{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0}
.stat{border:1px solid var(--line);border-radius:8px;padding:6px 12px;min-width:92px;background:#fafbfc}
.stat b{display:block;font-size:18px} .stat span{color:var(--muted);font-size:12px}
pre{background:#f4f6f8;border:1px solid #e4e7eb;border-radius:6px;padding:8px 10px;white-space:pre-wrap;
word-break:break-word;max-height:26em;overflow:auto;font-size:12.5px;margin:6px 0}
details>summary{cursor:pointer;color:var(--accent)}
.conversation{display:flex;flex-direction:column;gap:8px}
.msg{border:1px solid var(--line);border-radius:10px;padding:8px 14px;background:#fff;max-width:100%}
.msg .who{font-size:12px;color:var(--muted);font-weight:600;margin-bottom:3px}
.msg.assistant{background:#edf4fc;border-color:#c6dbf3;margin-right:48px}
.msg.user{background:#fff;margin-left:48px} .msg.system{background:#f8f9fa}
.msg.action{background:#fafbfc;margin-left:24px;margin-right:24px;border-style:dashed}
.msg.error{background:var(--fail);border-color:#f0b4b4} .msg.budget{background:var(--infra)}
.msg.end{background:#eef1f4;font-size:13px}
.prose{white-space:pre-wrap;word-break:break-word} pre.code{background:#1f2933;color:#e4e7eb;border-color:#1f2933}
pre.audited span{display:block} pre.audited .unrun{background:#fdecea} pre.audited .unwritten{background:#fff4d6}
pre.audited .ln{color:var(--muted);display:inline;user-select:none}
.answer{background:var(--pass);color:var(--pass-ink);font-weight:700;padding:1px 8px;border-radius:8px}
.call{font-size:13px;margin-top:4px} .call code{background:#fff;border:1px solid #c6dbf3;border-radius:4px;
padding:0 4px;word-break:break-all}
.tiles{display:flex;gap:14px;flex-wrap:wrap;align-items:flex-start;margin:6px 0}
figure.tile{margin:0;max-width:260px;font-size:12.5px} figure.tile img{display:block;border:1px solid #9aa5b1;
border-radius:4px;max-width:100%} .tile.empty{color:var(--muted);padding:20px;border:1px dashed var(--line)}
figure.overlay-figure{margin:6px 0 14px} figure.overlay-figure figcaption{margin-top:4px;font-size:13px}
.pair{border-top:1px solid var(--line);padding-top:4px;margin-top:8px} .pair h3{margin-bottom:0}
td.cell{text-align:center;font-weight:600} td.cell a{color:inherit} td.cell.partial{background:#fdf2cc}
td.cell.missing{color:#9aa5b1;font-weight:400} td.best{font-weight:700;background:#eef4fc}
details.agree{margin-top:10px}
"""


def document(title: str, body: str, meta: dict[str, str], heading: str, nav: str = "") -> str:
    """A whole page: the header (brand, ``nav`` links, ``heading``, the metadata) above ``body``."""
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
        f"content='width=device-width,initial-scale=1'><title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body><header class='top'><div class='bar'><span class='brand'>pixelbox</span>{nav}</div>"
        f"<h1>{escape(heading)}</h1>{meta_bar(meta)}</header><main>{body}</main></body></html>"
    )


def meta_bar(meta: dict[str, str]) -> str:
    """The run metadata as a definition list (``#run-meta``), one ``data-field`` per entry."""
    labels = meta_labels()
    items = "".join(
        f"<div data-field='{escape(key)}'><dt>{escape(labels.get(key, key))}</dt><dd>{escape(value)}</dd></div>"
        for key, value in meta.items()
    )
    return f"<dl class='meta' id='run-meta'>{items}</dl>"


def card(body: str, section_id: str = "") -> str:
    """A white panel."""
    ident = f" id='{escape(section_id)}'" if section_id else ""
    return f"<section class='card'{ident}>{body}</section>"


def link(text: str, href: str) -> str:
    return f"<a href='{escape(href)}'>{escape(text)}</a>"
