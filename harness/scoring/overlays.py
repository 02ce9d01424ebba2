"""Where the model looked, against where the task expected it to look.

For each input image: an SVG overlay of the image with every executed crop (green when a checkpoint
matched it, orange otherwise) and every checkpoint's expected region (blue, dashed); then, per
expected region, the expected cut-out beside the model's crop (the matched one, else the closest)
with their IoU and coverage, and the image the judges looked at. Boxes are drawn as SVG over a
copy of the image, so they stay sharp at any zoom and can be read back from the page.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from PIL import Image

from pixelbox.tracer.events import Event, EventFormatError

from .geometry import coverage, event_region, iou
from .view import Box

MAX_SIDE = 1600
CUT = (240, 170)
THUMB = (256, 256)
EXPECTED, MATCHED, OTHER = "#2f6db5", "#1d9a4a", "#f28e2b"


def overlay_section(view: dict[str, Any], score: dict[str, Any], assets: Path, slug: str) -> str:
    """The overlays and comparisons of every input image (HTML)."""
    if not view.get("root_images"):
        return "<p class='muted'>no input image</p>"
    matched = _matched_seqs(score)
    judged = {
        str(c["checkpoint_id"]): list((c.get("evidence") or {}).get("judged_artifacts") or [])
        for c in score.get("checkpoints") or []
    }
    artifacts = {int(a["index"]): a for a in view["artifacts"]}
    regions = view.get("expected_regions") or []
    events = _events(view)
    out = []
    for k, root in enumerate(view["root_images"]):
        root_id = f"input:{k}"
        source = Path(root)
        if not source.is_file():
            out.append(f"<p class='muted'>input {k}: {escape(root)} is missing</p>")
            continue
        crops = [e for e in view["events"] if _crop_on(e, root_id)]
        mine = [r for r in regions if r["root"] == root_id]
        with Image.open(source) as opened:
            image = opened.convert("RGB")
        name = _save(image, assets / f"{slug}_input_{k}.png")
        out.append(_figure(k, name, image.size, crops, mine, set(matched.values())))
        for region in mine:
            shown = [artifacts[i] for i in judged.get(region["checkpoint_id"], []) if i in artifacts]
            out.append(_pair(region, image, events, matched, shown, assets, slug))
    if not out:
        return "<p class='muted'>no input image</p>"
    return "".join(out)


def _events(view: dict[str, Any]) -> list[Event]:
    try:
        return [Event.from_dict(e) for e in view["events"]]
    except (EventFormatError, KeyError, TypeError, ValueError):
        return []


def _as_box(raw: list[float] | tuple[float, ...]) -> Box:
    x1, y1, x2, y2 = (float(v) for v in raw)
    return (x1, y1, x2, y2)


def _matched_seqs(score: dict[str, Any]) -> dict[str, int]:
    """Checkpoint id -> seq of the event V_tool matched to it."""
    found = {}
    for checkpoint in score.get("checkpoints") or []:
        seq = (checkpoint.get("evidence") or {}).get("matched_seq")
        if seq is not None:
            found[str(checkpoint["checkpoint_id"])] = int(seq)
    return found


def _crop_on(event: dict[str, Any], root: str) -> bool:
    params = event.get("params") or {}
    return (
        event["op"] == "crop"
        and event["status"] == "ok"
        and params.get("bbox_2d_root") is not None
        and params.get("root", root) == root
    )


def _save(image: Image.Image, target: Path) -> str:
    copy = image.copy()
    copy.thumbnail((MAX_SIDE, MAX_SIDE))
    copy.save(target)
    return target.name


def _figure(
    k: int,
    name: str,
    size: tuple[int, int],
    crops: list[dict[str, Any]],
    regions: list[dict[str, Any]],
    matched: set[int],
) -> str:
    w, h = size
    font = max(12.0, max(w, h) / 48)
    same_box: dict[tuple[float, ...], list[str]] = {}
    for region in regions:
        same_box.setdefault(_as_box(region["bbox_2d"]), []).append(str(region["checkpoint_id"]))
    shapes = []
    for event in crops:
        kind = "matched" if event["seq"] in matched else "other"
        colour = MATCHED if kind == "matched" else OTHER
        shapes.append(_box(event["params"]["bbox_2d_root"], w, h, f"crop {kind}", colour, f"seq {event['seq']}", font))
    shapes += [  # over the crops, dashed: where both coincide, each stays visible
        _box(list(box), w, h, "expected", EXPECTED, f"{', '.join(ids)} expected", font, " ".join(ids))
        for box, ids in same_box.items()
    ]
    legend = (
        f"<span class='pill' style='color:{EXPECTED}'>&#9633; expected region ({len(regions)})</span>"
        f"<span class='pill' style='color:{MATCHED}'>&#9632; crop matched to a checkpoint</span>"
        f"<span class='pill' style='color:{OTHER}'>&#9632; other crop</span> "
        f"<span class='muted'>{len(crops)} executed crop(s)</span>"
    )
    return (
        f"<figure class='overlay-figure'><svg class='overlay' xmlns='http://www.w3.org/2000/svg' "
        f"viewBox='0 0 {w} {h}' data-root='input:{k}' data-crops='{len(crops)}' data-expected='{len(regions)}' "
        f"style='width:100%;max-width:900px;height:auto;border:1px solid #9aa5b1;border-radius:6px' "
        f"role='img' aria-label='input {k} with expected regions and executed crops'>"
        f"<image href='assets/{escape(name)}' x='0' y='0' width='{w}' height='{h}' preserveAspectRatio='none' "
        f"onload=\"this.closest('svg').dataset.loaded='yes'\"/>{''.join(shapes)}</svg>"
        f"<figcaption>input {k}: {legend}</figcaption></figure>"
    )


def _box(box: list[float], w: int, h: int, css: str, colour: str, label: str, font: float, checkpoint: str = "") -> str:
    x1, y1, x2, y2 = (float(v) for v in box)
    x, y, bw, bh = x1 / 1000 * w, y1 / 1000 * h, (x2 - x1) / 1000 * w, (y2 - y1) / 1000 * h
    dash = " stroke-dasharray='9 6'" if css == "expected" else ""
    fill = "rgba(47,109,181,0.10)" if css == "expected" else "none"
    data = f" data-checkpoint='{escape(checkpoint)}'" if checkpoint else ""
    below, above = y + bh + font * 1.05, y - font * 0.3
    if css == "expected":
        ty = below if below < h - font * 0.2 else y + font * 1.1
    else:
        ty = above if above > font else y + font * 1.1
    return (
        f"<rect class='{css}'{data} x='{x:.1f}' y='{y:.1f}' width='{bw:.1f}' height='{bh:.1f}' fill='{fill}' "
        f"stroke='{colour}' stroke-width='3' vector-effect='non-scaling-stroke'{dash}/>"
        f"<text x='{x:.1f}' y='{ty:.1f}' font-size='{font:.0f}' font-weight='700' fill='{colour}' stroke='#fff' "
        f"stroke-width='{font / 5:.1f}' paint-order='stroke' font-family='sans-serif'>{escape(label)}</text>"
    )


def _pair(
    region: dict[str, Any],
    image: Image.Image,
    events: list[Event],
    matched: dict[str, int],
    judged: list[dict[str, Any]],
    assets: Path,
    slug: str,
) -> str:
    cid = region["checkpoint_id"]
    expected: Box = _as_box(region["bbox_2d"])
    tiles = [_tile(image, expected, assets / f"{slug}_expected_{_safe(cid)}.png", f"{cid}: expected region", "")]
    found = _model_region(region["root"], matched.get(cid), events, expected)
    if found is None:
        tiles.append("<div class='tile empty'>no operation on this image</div>")
    else:
        box, caption = found
        facts = f"IoU {iou(box, expected):.2f} · covers {coverage(box, expected):.0%} of the expected region"
        target = assets / f"{slug}_region_{_safe(cid)}.png"
        tiles.append(_tile(image, box, target, caption, facts))
    for artifact in judged[:2]:
        name = thumbnail(artifact, assets, slug)
        if name is not None:
            caption = f"image {artifact['index']} the judges looked at ({artifact['width']}x{artifact['height']})"
            tiles.append(
                f"<figure class='tile'><img src='assets/{escape(name)}' alt='{escape(caption)}'>"
                f"<figcaption>{escape(caption)}</figcaption></figure>"
            )
    needs = [f"IoU ≥ {region['min_iou']:.2f}" if region.get("min_iou") is not None else ""]
    needs.append(f"coverage ≥ {region['min_coverage']:.0%}" if region.get("min_coverage") is not None else "")
    rule = ", ".join(n for n in needs if n)
    return (
        f"<div class='pair' data-checkpoint='{escape(cid)}'><h3>{escape(cid)}: expected region beside the model's"
        f"</h3><p class='muted'>{escape(region['source'])}{': needs ' + escape(rule) if rule else ''}</p>"
        f"<div class='tiles'>{''.join(tiles)}</div></div>"
    )


def _model_region(root: str, seq: int | None, events: list[Event], expected: Box) -> tuple[Box, str] | None:
    """The region the checkpoint's matched operation acted on (a crop's box, or the region its input shows),
    else the crop on ``root`` closest to ``expected``; with a caption saying which."""
    hit = next((e for e in events if e.seq == seq), None)
    if hit is not None:
        hit_root, box, _ = event_region(events, hit)
        if hit_root == root:
            what = "matched crop" if hit.op == "crop" else f"matched {hit.op}, on this region"
            return box, f"{what}: seq {hit.seq}"
    crops = [(e, event_region(events, e)) for e in events if e.op == "crop" and e.status == "ok"]
    on_root = [(e, found[1]) for e, found in crops if found[0] == root and e.params.get("bbox_2d_root") is not None]
    if not on_root:
        return None
    closest, box = max(on_root, key=lambda pair: iou(pair[1], expected))
    return box, f"closest crop (not matched): seq {closest.seq}"


def thumbnail(artifact: dict[str, Any], assets: Path, slug: str) -> str | None:
    """A small copy of an image the episode produced, in ``assets`` (made once per content: the name carries
    its hash, so a rerun episode's new image never shows an old thumbnail); None when the file is gone."""
    digest = str(artifact.get("sha256") or "")[:10]
    target = assets / f"{slug}_image_{artifact['index']}_{digest}.png"
    if target.is_file():
        return target.name
    source = Path(artifact["path"])
    if not source.is_file():
        return None
    with Image.open(source) as img:
        thumb = img.convert("RGB")
    thumb.thumbnail(THUMB)
    thumb.save(target)
    return target.name


def _tile(image: Image.Image, box: Box, target: Path, caption: str, facts: str) -> str:
    w, h = image.size
    x1, y1, x2, y2 = box
    pixels = (int(x1 / 1000 * w), int(y1 / 1000 * h), max(int(x2 / 1000 * w), 1), max(int(y2 / 1000 * h), 1))
    cut = image.crop(pixels)
    cut.thumbnail(CUT)
    cut.save(target)
    extra = f"<div class='muted'>{escape(facts)}</div>" if facts else ""
    return (
        f"<figure class='tile'><img src='assets/{escape(target.name)}' alt='{escape(caption)}'>"
        f"<figcaption>{escape(caption)}{extra}</figcaption></figure>"
    )


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)
