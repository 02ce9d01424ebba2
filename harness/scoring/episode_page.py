"""One episode's page: its scores, checkpoints, where it looked against where it should have, the whole
conversation (the model's prose between its actions included), and every operation that executed."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any

from .columns import INFRASTRUCTURE, columns_of, metrics_of, primary_of
from .overlays import overlay_section, thumbnail
from .page import card, document, link
from .report_tables import episode_href

TAGGED = re.compile(r"(<code>.*?</code>|<answer>.*?</answer>|```.*?```)", re.DOTALL)


def episode_page(record: dict[str, Any], assets: Path, meta: dict[str, str]) -> str:
    """The HTML page of one scored episode (its images are written to ``assets``)."""
    score, view = record["score"], record["episode"]
    slug = episode_href(score["episode_id"])[: -len(".html")]
    parts = [
        card(_summary(score, view), "overview"),
        _tamper_block(score),
        card("<h2>Rubrics</h2>" + _rubric_table(score), "rubrics-card")
        if score.get("rubrics")
        else card("<h2>Checkpoints</h2>" + _checkpoint_table(score), "checkpoints-card"),
        card("<h2>Where the model looked</h2>" + overlay_section(view, score, assets, slug), "overlays"),
        card("<h2>Conversation</h2>" + conversation_html(view, assets, slug), "conversation"),
        card("<h2>Operations that executed</h2>" + _events_table(view), "events-card"),
    ]
    nav = link("← all episodes", "index.html")
    return document(score["episode_id"], "".join(parts), meta, score["episode_id"], nav)


def _summary(score: dict[str, Any], view: dict[str, Any]) -> str:
    task = view.get("task") or {"task_id": score["task_id"], "prompt": ""}
    facts = [f"task {task['task_id']}", f"L{task['level']}" if task.get("level") else "", f"mode {score['mode']}"]
    facts.append(f"category {task['category']}" if task.get("category") else "")
    head = f"<p class='muted'>{escape(' · '.join(f for f in facts if f))}</p>"
    head += f"<p><b>Prompt.</b> {escape(str(task.get('prompt') or ''))}</p>"
    answer = view.get("answer") or "(none)"
    why = escape(str(score.get("acc_reason") or ""))
    head += f"<p><b>Answer:</b> {escape(answer)} &nbsp; <span class='muted'>{why}</span></p>"
    if score.get("infrastructure"):
        why = escape(str(score["infrastructure"]))
        head += (
            f"<p class='note' id='infrastructure'><b>Infrastructure failure:</b> {why}. Not a model failure: "
            "its metrics read n/a and it is left out of the scores unless included on request.</p>"
        )
    elif score.get("failure"):
        failure = score["failure"]
        head += f"<p id='failure'><b>Failure label:</b> {escape(failure['label'])}: {escape(failure['evidence'])}</p>"
    return "<h2>Outcome</h2>" + head + _stats(score)


def _stats(score: dict[str, Any]) -> str:
    values, primary = metrics_of(score), primary_of(score)
    boxes = []
    for column in columns_of(score):
        value = values.get(column.key)
        if score.get("infrastructure"):
            shown, css = INFRASTRUCTURE, "infra"
        elif column.key == primary and value in (0.0, 1.0):
            shown, css = ("pass", "pass") if value else ("fail", "fail")
        else:
            shown, css = column.format(value), ""
        boxes.append(
            f"<div class='stat' data-metric='{escape(column.key)}' title='{escape(column.description)}'>"
            f"<b class='{css}'>{escape(shown)}</b><span>{escape(column.label)}</span></div>"
        )
    ended = escape(str(score.get("termination", "-")))
    boxes.append(f"<div class='stat'><b>{ended}</b><span>ended</span></div>")
    return f"<div class='stats' id='episode-stats'>{''.join(boxes)}</div>"


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
    return card(f"<h2>Trace integrity</h2><ul id='tamper'>{items}</ul>")


def _verdict(value: bool | None) -> str:
    cls, text = ("na", "—") if value is None else (("pass", "pass") if value else ("fail", "fail"))
    return f"<td class='verdict {cls}'>{text}</td>"


def _checkpoint_table(score: dict[str, Any]) -> str:
    if not score.get("checkpoints"):
        return "<p class='empty'>this task has no checkpoints</p>"
    head = "<tr><th>id</th><th>axis</th><th>description</th><th>tool / S / R</th><th>V_true</th><th>passed</th>"
    head += "<th>step</th><th>evidence</th></tr>"
    rows = "".join(
        f"<tr id='cp-{escape(c['checkpoint_id'])}'><td>{escape(c['checkpoint_id'])}</td><td>{escape(c['axis'])}</td>"
        f"<td>{escape(c['description'])}</td>{_verdict(c['tool'])}{_verdict(c['true'])}{_verdict(c['passed'])}"
        f"<td>{'—' if c['step'] is None else c['step']}</td><td>{_evidence_cell(c['evidence'])}</td></tr>"
        for c in score["checkpoints"]
    )
    orders = "".join(
        f"<li>{escape(o['constraint_id'])} {escape(' -> '.join(o['sequence']))} (max_gap {o['max_gap']}): "
        f"{'pass' if o['passed'] else 'fail'}: {escape(o['reason'])}</li>"
        for o in score.get("orders") or []
    )
    table = f"<div class='scroll'><table id='checkpoints'>{head}{rows}</table></div>"
    return table + (f"<p>Ordering:</p><ul>{orders}</ul>" if orders else "")


def _rubric_table(score: dict[str, Any]) -> str:
    """Rubric-judged suites (VisualToolBench): each rubric with its turn, weight, verdict and the judge's reason."""
    head = "<tr><th>turn</th><th>rubric</th><th>weight</th><th>verdict</th><th>judge</th></tr>"
    rows = []
    for r in score["rubrics"]:
        verdict = r.get("judge_result")
        css = "pass" if verdict == "Met" else "fail" if verdict == "Not Met" else "na"
        why = r.get("error") or r.get("explanation") or ""
        rows.append(
            f"<tr><td>{int(r.get('turn', 0)) + 1}</td><td>{escape(str(r.get('description') or r['rubric_id']))}</td>"
            f"<td>{escape(str(r.get('weight')))}</td><td class='verdict {css}'>{escape(str(verdict or '—'))}</td>"
            f"<td>{escape(str(why))}</td></tr>"
        )
    return f"<div class='scroll'><table id='rubrics'>{head}{''.join(rows)}</table></div>"


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


# -- the conversation ---------------------------------------------------------------------------------


def conversation_html(view: dict[str, Any], assets: Path, slug: str) -> str:
    """Every message and action in order; episodes scored before conversations were recorded show their actions."""
    interactions = {int(i["index"]): i for i in view.get("interactions") or []}
    entries = view.get("conversation") or [{"role": "action", "interaction": i} for i in sorted(interactions)]
    out = [_entry(e, interactions, view, assets, slug) for e in entries]
    return "<div class='conversation'>" + "".join(out) + "</div>" if out else "<p class='empty'>nothing was said</p>"


def _entry(
    entry: dict[str, Any], interactions: dict[int, dict[str, Any]], view: dict[str, Any], assets: Path, slug: str
) -> str:
    role = entry["role"]
    if role == "system":
        text = entry.get("text") or ""
        return (
            f"<details class='msg system'><summary>system prompt ({len(text)} characters)</summary>"
            f"<pre>{escape(text)}</pre></details>"
        )
    if role == "user":
        images = f" <span class='muted'>+ {entry['images']} image(s)</span>" if entry.get("images") else ""
        who = "harness to model" if entry.get("round") is not None else "user"
        return _bubble("user", who, f"<div class='prose'>{escape(entry.get('text') or '')}</div>{images}")
    if role == "assistant":
        return _assistant(entry)
    if role == "action":
        interaction = interactions.get(int(entry["interaction"]))
        return _action(interaction, view, assets, slug) if interaction else ""
    if role == "end":
        answer = f" — answer {escape(repr(entry.get('answer')))}" if entry.get("answer") else ""
        why = f": {escape(entry.get('text') or '')}" if entry.get("text") else ""
        return _bubble("end", "episode end", f"<b>{escape(str(entry.get('status')))}</b>{why}{answer}")
    label = {"error": f"error ({entry.get('where')})", "budget": "budget reached"}.get(role, role)
    return _bubble(role, label, f"<div class='prose'>{escape(entry.get('text') or '')}</div>")


def _bubble(role: str, who: str, body: str, extra: str = "") -> str:
    return f"<div class='msg {role}'{extra}><div class='who'>{escape(who)}</div>{body}</div>"


def _assistant(entry: dict[str, Any]) -> str:
    facts = [f"round {entry.get('round')}"]
    if entry.get("tokens"):
        facts.append(f"{entry['tokens']} tokens")
    if isinstance(entry.get("latency"), (int, float)) and entry["latency"] >= 0.05:
        facts.append(f"{entry['latency']:.1f} s")
    if (entry.get("attempts") or 1) > 1:
        facts.append(f"{entry['attempts']} attempts")
    body = f"<div class='prose'>{prose(entry.get('text') or '')}</div>"
    if entry.get("reasoning"):
        body = f"<details><summary>reasoning</summary><pre>{escape(entry['reasoning'])}</pre></details>" + body
    calls = "".join(
        f"<div class='call'>calls <b>{escape(c['name'])}</b>(<code>{escape(c['arguments'])}</code>)</div>"
        for c in entry.get("tool_calls") or []
    )
    extra = f" data-round='{escape(str(entry.get('round')))}'"
    return _bubble("assistant", "assistant · " + " · ".join(facts), body + calls, extra)


def prose(text: str) -> str:
    """The model's text with its ``<code>`` blocks and fences as code and its ``<answer>`` marked."""
    out = []
    for part in TAGGED.split(text):
        if part.startswith("<code>") and part.endswith("</code>"):
            out.append(f"<pre class='code'>{escape(part[6:-7].strip(chr(10)))}</pre>")
        elif part.startswith("```") and part.endswith("```") and len(part) >= 6:
            out.append(f"<pre class='code'>{escape(part[3:-3].strip(chr(10)))}</pre>")
        elif part.startswith("<answer>") and part.endswith("</answer>"):
            out.append(f"<span class='answer'>answer: {escape(part[8:-9])}</span>")
        else:
            out.append(escape(part))
    return "".join(out)


def _audit(code: str, audit: dict[str, Any] | None) -> str:
    """The block's audit: a table of what was written and not run, and run and not written, with the
    code's lines highlighted (red: written, not run; yellow: ran something not written there)."""
    if not audit:
        return ""
    if not audit.get("available"):
        return f"<p class='muted'>audit unavailable: {escape(str(audit.get('reason')))}</p>"
    unrun, unwritten = audit.get("written_not_run") or [], audit.get("run_not_written") or []
    if not unrun and not unwritten:
        return f"<p class='muted'>audit: {len(audit.get('written') or [])} written operations, all ran as written</p>"
    rows = [
        f"<tr><td>written, not run</td><td>{escape(str(w['op']))}</td><td>{w['line']}</td>"
        f"<td>{escape(str(w['reason']))}</td></tr>"
        for w in unrun
    ] + [
        f"<tr><td>run, not written</td><td>{escape(str(r['op'] or '(untraced)'))}</td><td>{r.get('line') or '-'}</td>"
        f"<td>{escape(str(r['how']))}</td></tr>"
        for r in unwritten
    ]
    red = {int(w["line"]) for w in unrun}
    yellow = {int(r["line"]) for r in unwritten if r.get("line") and "cell" not in r}
    numbered = []
    for n, text in enumerate(code.splitlines(), 1):
        mark = " class='unrun'" if n in red else " class='unwritten'" if n in yellow else ""
        numbered.append(f"<span{mark}><span class='ln'>{n:>3} </span>{escape(text)}</span>")
    table = "<table><tr><th>difference</th><th>op</th><th>line</th><th>why / how</th></tr>" + "".join(rows) + "</table>"
    listing = "<pre class='audited'>" + "".join(numbered) + "</pre>"
    return (
        f"<details open><summary>audit: {len(unrun) + len(unwritten)} differences</summary>{table}{listing}</details>"
    )


def _action(interaction: dict[str, Any], view: dict[str, Any], assets: Path, slug: str) -> str:
    artifacts = {a["index"]: a for a in view["artifacts"]}
    searches = {s["interaction"]: s for s in view["searches"]}
    code = interaction["arguments"].get("code")
    if code:
        lines = code.count("\n") + 1
        summary = f"code ({lines} line{'s' if lines > 1 else ''})"
        body = f"<details><summary>{summary}</summary><pre>{escape(code)}</pre></details>"
        body += _audit(code, interaction.get("audit"))
    else:
        called = interaction["arguments"]
        shown = called.get("arguments", called) if isinstance(called.get("arguments"), dict) else called
        body = f"<pre>{escape(json.dumps(shown, ensure_ascii=False))}</pre>"
    if interaction["index"] in searches:
        payload = searches[interaction["index"]]["payload"][:3000]
        body += f"<div class='muted'>returned:</div><pre>{escape(payload)}</pre>"
    if interaction["observation"]:
        body += f"<div class='muted'>output:</div><pre>{escape(interaction['observation'][:3000])}</pre>"
    thumbs = []
    for index in interaction["artifacts"]:
        artifact = artifacts.get(index)
        name = thumbnail(artifact, assets, slug) if artifact else None
        if artifact is None or name is None:
            thumbs.append(f"<p class='muted'>image {index} is missing</p>")
            continue
        title = f"image {index} {artifact['width']}x{artifact['height']} root box {artifact.get('box_root')}"
        thumbs.append(
            f"<figure class='tile'><img class='thumb' src='assets/{escape(name)}' title='{escape(title)}' "
            f"alt='{escape(title)}'><figcaption>image {index}</figcaption></figure>"
        )
    status = interaction["status"]
    css = "pass" if status == "ok" else "fail"
    who = f"#{interaction['index']} {interaction['kind']} {interaction['name']}"
    head = f"<div class='who'>{escape(who)} <span class='pill {css}'>{escape(status)}</span></div>"
    tiles = f"<div class='tiles'>{''.join(thumbs)}</div>" if thumbs else ""
    return f"<div class='msg action' data-interaction='{interaction['index']}'>{head}{body}{tiles}</div>"


def _events_table(view: dict[str, Any]) -> str:
    if not view.get("events"):
        return "<p class='empty'>no operation was recorded</p>"
    head = "<tr><th>seq</th><th>action</th><th>op</th><th>status</th><th>api</th><th>line</th><th>in -> out</th>"
    head += "<th>params</th></tr>"
    rows = "".join(
        f"<tr class='{'ok' if e['status'] == 'ok' else 'failed'}'><td class='num'>{e['seq']}</td>"
        f"<td class='num'>{e['interaction']}</td><td>{escape(e['op'])}</td>"
        f"<td class='{'pass' if e['status'] == 'ok' else 'fail'}'>{escape(e['status'])}</td><td>{escape(e['api'])}</td>"
        f"<td class='num'>{(e.get('src') or {}).get('line', '—')}</td>"
        f"<td>{escape(', '.join(e['inputs']))} -> {escape(str(e['output']))}</td>"
        f"<td><code>{escape(json.dumps(e['params'], default=str))}</code></td></tr>"
        for e in view["events"]
    )
    return f"<div class='scroll'><table id='events'>{head}{rows}</table></div>"
