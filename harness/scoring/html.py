"""Static HTML report: an index table and one page per episode showing what executed.

Everything is written under ``run_dir/report/`` with relative links, so the folder can be
copied or served as is. Images (thumbnails, root overlays) are PNG files made with PIL.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from .report import HEADERS, METRICS

THUMB = (256, 256)
MATCHED, OTHER = (20, 170, 60), (255, 140, 0)
STYLE = """
body{font-family:sans-serif;margin:1.5em;color:#222} table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #bbb;padding:3px 6px;font-size:13px;vertical-align:top} th{background:#eee}
.pass{background:#d9f2dc} .fail{background:#f7d4d4} .na{background:#f2f2f2} pre{background:#f7f7f7;padding:6px;
white-space:pre-wrap;max-height:22em;overflow:auto;font-size:12px} img.thumb{border:1px solid #999;margin:2px}
img.overlay{max-width:900px;border:1px solid #444} .turn{border-left:4px solid #88a;padding-left:8px;margin:8px 0}
"""


def write_html(report_dir: Path, summary: dict[str, Any], episodes: list[dict[str, Any]]) -> Path:
    """Write ``index.html`` and one page per episode; returns the index path."""
    assets = report_dir / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    for record in episodes:
        page = _episode_page(record, assets)
        (report_dir / f"{_slug(record['score']['episode_id'])}.html").write_text(page, encoding="utf-8")
    index = report_dir / "index.html"
    index.write_text(_index_page(summary, episodes), encoding="utf-8")
    return index


def _doc(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>{body}</body></html>"
    )


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def _fmt(value: Any, metric: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}" if metric in ("calls", "overthink") else f"{100 * value:.0f}%"
    return escape(str(value))


def _verdict(value: bool | None) -> str:
    cls, text = ("na", "-") if value is None else (("pass", "pass") if value else ("fail", "fail"))
    return f"<td class='verdict {cls}'>{text}</td>"


def _index_page(summary: dict[str, Any], episodes: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ["mode", "level", "n", *(HEADERS[m] for m in METRICS)])
    rows = "".join(
        "<tr>"
        + f"<td>{escape(r['mode'])}</td><td>{r['level']}</td><td>{r['n']}</td>"
        + "".join(f"<td>{_fmt(r[m], m)}</td>" for m in METRICS)
        + "</tr>"
        for r in summary["rows"]
    )
    ep_head = "<tr><th>episode</th><th>level</th><th>mode</th><th>Acc</th><th>S</th><th>V_tool</th><th>V_true</th>"
    ep_head += "<th>calls</th><th>Overthink</th><th>failure</th></tr>"
    ep_rows = "".join(_index_row(e["score"]) for e in episodes)
    failures = "".join(f"<li>{escape(k)}: {v}</li>" for k, v in summary["failures"].items()) or "<li>none</li>"
    body = (
        f"<h1>Scores</h1><table id='summary'><tr>{head}</tr>{rows}</table>"
        f"<h2>Failure modes</h2><ul>{failures}</ul>{_infrastructure_block(summary)}"
        f"<h2>Episodes</h2><table id='episodes'>{ep_head}{ep_rows}</table>"
    )
    return _doc("pixelbox scores", body)


def _infrastructure_block(summary: dict[str, Any]) -> str:
    infra = summary.get("infrastructure") or {}
    if not infra.get("count"):
        return ""
    how = "counted as failures in the table above" if infra.get("included_in_metrics") else "not in the table above"
    items = "".join(
        f"<li>infrastructure: {escape(e['episode_id'])}: {escape(str(e['reason']))}</li>" for e in infra["episodes"]
    )
    return f"<h2>Infrastructure</h2><p id='infrastructure'>{infra['count']} episode(s), {how}:</p><ul>{items}</ul>"


def _index_row(score: dict[str, Any]) -> str:
    link = f"<a href='{_slug(score['episode_id'])}.html'>{escape(score['episode_id'])}</a>"
    failure = escape(score["failure"]["label"]) if score.get("failure") else ""
    if score.get("infrastructure"):
        failure = f"infrastructure: {escape(str(score['infrastructure']))}"
    if score.get("tamper"):
        failure += f" (tampered executions: {len(score['tamper'])})"
    cells = [link, f"L{score['level']}", escape(score["mode"])]
    metrics = [_verdict(score["acc"])] + [f"<td>{_fmt(score[m], m)}</td>" for m in ("s", "v_tool", "v_true")]
    tail = [f"<td>{score['calls']}</td><td>{_fmt(score['overthink'], 'overthink')}</td><td>{failure}</td>"]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "".join(metrics) + "".join(tail) + "</tr>"


def _episode_page(record: dict[str, Any], assets: Path) -> str:
    score, view = record["score"], record["episode"]
    slug = _slug(score["episode_id"])
    parts = [
        f"<p><a href='index.html'>index</a></p><h1>{escape(score['episode_id'])}</h1>",
        _summary_block(score, view),
        _tamper_block(score),
        "<h2>Checkpoints</h2>" + _checkpoint_table(score),
        "<h2>Executed crops on the input</h2>" + _overlays(view, score, assets, slug),
        "<h2>Turns</h2>" + _turns(view, assets, slug),
        "<h2>Events</h2>" + _events_table(view),
    ]
    return _doc(score["episode_id"], "".join(parts))


def _tamper_block(score: dict[str, Any]) -> str:
    flagged = score.get("tamper") or []
    if not flagged:
        return ""
    items = "".join(
        f"<li>interaction {t['interaction']}"
        + (" (trusted on request)" if t.get("trusted") else " (its operations satisfy no checkpoint)")
        + "".join(f"<div class='why'>{escape(str(n))}</div>" for n in t.get("notices") or ["no notice recorded"])
        + "</li>"
        for t in flagged
    )
    return f"<h2>Trace integrity</h2><ul id='tamper'>{items}</ul>"


def _summary_block(score: dict[str, Any], view: dict[str, Any]) -> str:
    failure = score.get("failure")
    failure_html = (
        f"<p id='failure'><b>Failure mode:</b> {escape(failure['label'])}: {escape(failure['evidence'])}</p>"
        if failure
        else ""
    )
    if score.get("infrastructure"):
        failure_html = (
            f"<p id='infrastructure'><b>Infrastructure:</b> {escape(str(score['infrastructure']))} "
            "(not a model failure; left out of the metrics unless included on request)</p>"
        )
    return (
        f"<p><b>Task</b> {escape(view['task']['task_id'])} (L{view['task']['level']}, {escape(view['mode'])}, "
        f"model {escape(view['model'])}): {escape(view['task']['prompt'])}</p>"
        f"<p><b>Answer:</b> {escape(view['answer'])} &mdash; <b>Acc</b> {_fmt(score['acc'])} "
        f"({escape(score['acc_reason'])})</p>"
        f"<p>S {_fmt(score['s'])} &middot; V {_fmt(score['v'])} &middot; V_tool {_fmt(score['v_tool'])} &middot; "
        f"V_true {_fmt(score['v_true'])} &middot; calls {score['calls']} &middot; Overthink "
        f"{_fmt(score['overthink'], 'overthink')} &middot; ended: {escape(str(score.get('termination', '-')))}</p>"
        f"{failure_html}"
    )


def _checkpoint_table(score: dict[str, Any]) -> str:
    head = "<tr><th>id</th><th>axis</th><th>description</th><th>tool / S / R</th><th>V_true</th><th>passed</th>"
    head += "<th>step</th><th>evidence</th></tr>"
    rows = "".join(
        f"<tr id='cp-{escape(c['checkpoint_id'])}'><td>{escape(c['checkpoint_id'])}</td><td>{escape(c['axis'])}</td>"
        f"<td>{escape(c['description'])}</td>{_verdict(c['tool'])}{_verdict(c['true'])}{_verdict(c['passed'])}"
        f"<td>{_fmt(c['step'])}</td><td>{_evidence_cell(c['evidence'])}</td></tr>"
        for c in score["checkpoints"]
    )
    orders = "".join(
        f"<li>{escape(o['constraint_id'])} {escape(' -> '.join(o['sequence']))} (max_gap {o['max_gap']}): "
        f"{'pass' if o['passed'] else 'fail'}: {escape(o['reason'])}</li>"
        for o in score.get("orders") or []
    )
    return f"<table id='checkpoints'>{head}{rows}</table>" + (f"<p>Ordering:</p><ul>{orders}</ul>" if orders else "")


def _evidence_cell(evidence: dict[str, Any]) -> str:
    """The deciding reasons in words, the full evidence folded underneath."""
    reasons = [str(evidence[k]) for k in ("reason", "true_reason") if evidence.get(k)]
    reasons += [f"order: {o}" for o in evidence.get("order", [])]
    reasons += [
        f"replay of artifact {r['artifact']}: {r['verdict']}"
        + (f", similarity {r['score']:.2f}" if isinstance(r.get("score"), (int, float)) else "")
        + (f" ({r['reason']})" if r.get("verdict") != "consistent" and r.get("reason") else "")
        for r in evidence.get("replay", [])
    ]
    full = escape(json.dumps(evidence, indent=1, default=str))
    why = "".join(f"<div class='why'>{escape(r)}</div>" for r in reasons)
    return f"{why}<details><summary>evidence</summary><pre>{full}</pre></details>"


def _overlays(view: dict[str, Any], score: dict[str, Any], assets: Path, slug: str) -> str:
    matched_seqs = {
        c["evidence"]["matched_seq"] for c in score["checkpoints"] if c["evidence"].get("matched_seq") is not None
    }
    out = []
    for k, root in enumerate(view["root_images"]):
        crops = [e for e in view["events"] if _crop_on(e, f"input:{k}")]
        target = assets / f"{slug}_overlay_{k}.png"
        if not Path(root).is_file():
            out.append(f"<p>input {k}: {escape(root)} is missing</p>")
            continue
        draw_crops(Path(root), crops, matched_seqs, target)
        legend = f"{len(crops)} executed crop(s); green = matched to a checkpoint, orange = other"
        out.append(
            f"<figure><img class='overlay' alt='input {k} with crops' src='assets/{target.name}' "
            f"data-crops='{len(crops)}' onload=\"this.dataset.loaded='yes'\">"
            f"<figcaption>input {k}: {legend}</figcaption></figure>"
        )
    return "".join(out)


def _crop_on(event: dict[str, Any], root: str) -> bool:
    params = event.get("params") or {}
    return (
        event["op"] == "crop"
        and event["status"] == "ok"
        and params.get("bbox_2d_root") is not None
        and params.get("root", root) == root
    )


def draw_crops(root: Path, crops: list[dict[str, Any]], matched: set[int], target: Path) -> Path:
    """The root image with each crop's root box drawn and numbered by its event seq."""
    with Image.open(root) as img:
        canvas = img.convert("RGB")
    draw = ImageDraw.Draw(canvas)
    w, h = canvas.size
    width = max(3, round(min(w, h) / 200))
    font = ImageFont.load_default(size=max(14, min(w, h) // 30))
    for event in crops:
        x1, y1, x2, y2 = (float(v) for v in event["params"]["bbox_2d_root"])
        box = (x1 / 1000 * w, y1 / 1000 * h, x2 / 1000 * w - 1, y2 / 1000 * h - 1)
        color = MATCHED if event["seq"] in matched else OTHER
        draw.rectangle(box, outline=color, width=width)
        draw.text((box[0] + width + 2, box[1] + width + 2), f"seq {event['seq']}", fill=color, font=font)
    canvas.save(target)
    return target


def _turns(view: dict[str, Any], assets: Path, slug: str) -> str:
    artifacts = {a["index"]: a for a in view["artifacts"]}
    searches = {s["interaction"]: s for s in view["searches"]}
    out = []
    for turn in view["interactions"]:
        code = turn["arguments"].get("code")
        body = f"<pre>{escape(code)}</pre>" if code else f"<pre>{escape(json.dumps(turn['arguments']))}</pre>"
        if turn["index"] in searches:
            body += f"<p>returned:</p><pre>{escape(searches[turn['index']]['payload'][:3000])}</pre>"
        if turn["observation"]:
            body += f"<p>observation:</p><pre>{escape(turn['observation'][:3000])}</pre>"
        thumbs = "".join(_thumb(artifacts[i], assets, slug) for i in turn["artifacts"] if i in artifacts)
        out.append(
            f"<div class='turn'><b>#{turn['index']} {escape(turn['kind'])} {escape(turn['name'])}</b> "
            f"({escape(turn['status'])}){body}{thumbs}</div>"
        )
    return "".join(out)


def _thumb(artifact: dict[str, Any], assets: Path, slug: str) -> str:
    source = Path(artifact["path"])
    if not source.is_file():
        return f"<p>image {artifact['index']}: {escape(str(source))} is missing</p>"
    target = assets / f"{slug}_image_{artifact['index']}.png"
    with Image.open(source) as img:
        thumb = img.convert("RGB")
        thumb.thumbnail(THUMB)
        thumb.save(target)
    box = artifact.get("box_root")
    title = f"image {artifact['index']} {artifact['width']}x{artifact['height']} root box {box}"
    return f"<img class='thumb' src='assets/{target.name}' title='{escape(title)}' alt='{escape(title)}'>"


def _events_table(view: dict[str, Any]) -> str:
    head = "<tr><th>seq</th><th>turn</th><th>op</th><th>status</th><th>api</th><th>line</th><th>in -> out</th>"
    head += "<th>params</th></tr>"
    rows = "".join(
        f"<tr class='{'pass' if e['status'] == 'ok' else 'fail'}'><td>{e['seq']}</td><td>{e['interaction']}</td>"
        f"<td>{escape(e['op'])}</td><td>{escape(e['status'])}</td><td>{escape(e['api'])}</td>"
        f"<td>{(e.get('src') or {}).get('line', '-')}</td>"
        f"<td>{escape(', '.join(e['inputs']))} -> {escape(str(e['output']))}</td>"
        f"<td>{escape(json.dumps(e['params'], default=str))}</td></tr>"
        for e in view["events"]
    )
    return f"<table id='events'>{head}{rows}</table>"
