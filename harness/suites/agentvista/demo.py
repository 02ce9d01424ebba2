"""``pixelbox demo --suite agentvista``: three generated AgentVista tasks solved offline.

The tasks are drawn here (a small sign to read by cropping, two photos to compare, a landmark whose
city a web search names), written as AgentVista's ``val.json`` with their images, and played
through the real runner and sandboxes by a replay agent whose recorded turns call
``code_interpreter`` and ``web_search`` as a model would. The web search is answered from a
recorded cache (replay mode: nothing leaves the machine). Scored with the offline ``match`` judge
(``--judge openai:MODEL`` gives the official LLM verdicts), reported, and the paths printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pixelbox.harness.suites import DemoResult

HELP = (
    "AgentVista demo: three generated tasks (read a small sign by cropping it, compare two images, find a "
    "landmark's city with a recorded web search) in AgentVista's val.json layout, replayed through the real "
    "runner and sandboxes with code_interpreter and web_search, scored with the offline match judge and "
    "reported. Writes tasks/ (val.json and images), recordings/, web-cache/, run/ (traces, scores.json, "
    "report/index.html) and export/ (the official output layout)."
)
SIGN_WORD = "HARBOR"
SIGN_BOX = (392, 308, 532, 392)
"""Where the sign is drawn (left, top, right, bottom) on the 560x420 picture (sides multiples of 28)."""


def build_tasks(folder: Path) -> Path:
    """Draw the demo images and write ``val.json`` beside them; returns its path."""
    from PIL import Image, ImageDraw, ImageFont

    folder.mkdir(parents=True, exist_ok=True)
    scene = Image.new("RGB", (560, 420), (70, 120, 170))
    draw = ImageDraw.Draw(scene)
    draw.rectangle((0, 280, 560, 420), fill=(40, 90, 60))
    draw.rectangle(SIGN_BOX, fill=(245, 240, 220), outline=(20, 20, 20), width=3)
    draw.text((402, 336), SIGN_WORD, fill=(10, 10, 10), font=ImageFont.load_default(size=22))
    scene.save(folder / "sign.png")
    for name, count in (("first.png", 2), ("second.png", 5)):
        image = Image.new("RGB", (336, 252), (230, 230, 230))
        shapes = ImageDraw.Draw(image)
        for k in range(count):
            x = 20 + 60 * k
            shapes.rectangle((x, 100, x + 40, 140), fill=(220, 30, 30))
        image.save(folder / name)
    tower = Image.new("RGB", (420, 560), (150, 190, 230))
    ImageDraw.Draw(tower).polygon([(210, 60), (150, 520), (270, 520)], fill=(90, 80, 70))
    tower.save(folder / "tower.png")
    records = [
        {
            "question_id": "av-sign",
            "problem": "<image>\nWhat word is written on the small sign at the lower right?",
            "images": ["sign.png"],
            "solution": SIGN_WORD,
            "domain": "demo",
        },
        {
            "question_id": "av-compare",
            "problem": "<image><image>\nWhich picture has more red squares? A. the first  B. the second",
            "images": ["first.png", "second.png"],
            "solution": "B. the second",
            "domain": "demo",
        },
        {
            "question_id": "av-tower",
            "problem": "<image>\nThis is a model of the Demo Spire. In which city does the real one stand?",
            "images": ["tower.png"],
            "solution": "Examplestad",
            "domain": "demo",
        },
    ]
    path = folder / "val.json"
    path.write_text(json.dumps(records, indent=1), encoding="utf-8")
    return path


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


RECORDINGS: dict[str, list[dict[str, Any]]] = {
    "av-sign": [
        {
            "text": "The sign is small; I will crop the lower right corner and enlarge it.",
            "tool_calls": [
                _call("code_interpreter", code=f"original_image.crop({SIGN_BOX}).resize((420, 252))"),
            ],
        },
        {"text": f"The enlarged crop reads {SIGN_WORD}. <answer>{SIGN_WORD}</answer>"},
    ],
    "av-compare": [
        {
            "text": "I will count the red squares in each picture.",
            "tool_calls": [
                _call(
                    "code_interpreter",
                    code=(
                        "import numpy as np\nfrom scipy import ndimage\n"
                        "def red_squares(im):\n"
                        "    a = np.asarray(im.convert('RGB')).astype(int)\n"
                        "    mask = (a[..., 0] > 180) & (a[..., 1] < 80) & (a[..., 2] < 80)\n"
                        "    return ndimage.label(mask)[1]\n"
                        "print(red_squares(original_image), red_squares(original_image_1))"
                    ),
                ),
            ],
        },
        {"text": "The first has 2 red squares, the second 5. <answer>B</answer>"},
    ],
    "av-tower": [
        {
            "text": "I need the city of the Demo Spire; a web search should tell.",
            "tool_calls": [_call("web_search", query="Demo Spire city")],
        },
        {"text": "The search says the Demo Spire stands in Examplestad. <answer>Examplestad</answer>"},
    ],
}


def record_web(cache_root: Path) -> None:
    """The recorded search result of the tower task (what Serper would have answered)."""
    from pixelbox.harness.web import WebCache

    cache = WebCache.for_task(cache_root, "av-tower", "record")
    results = [
        {
            "title": "Demo Spire - Examplestad landmarks",
            "link": "https://example.org/demo-spire",
            "snippet": "The Demo Spire is a stone tower in the centre of Examplestad, built in 1888.",
        }
    ]
    data = {"query": "Demo Spire city", "results": results}
    cache.put("google_search", {"query": "Demo Spire city", "gl": "us", "hl": "en"}, ok=True, data=data, error=None)


def run_demo(out: Path, *, backend: str, concurrency: int, progress: bool) -> DemoResult:
    """Build, replay, score and report the demo under ``out``."""
    from pixelbox.harness.suites import SUITES
    from pixelbox.harness.suites.shared import judged_wrong, replay_run, write_recordings

    suite = SUITES.get("agentvista")
    tasks_file = build_tasks(out / "tasks")
    recordings = write_recordings(out / "recordings", RECORDINGS)
    record_web(out / "web-cache")
    tasks = suite.load_tasks(tasks_file)
    run_dir = out / "run"
    summary = replay_run(
        suite, tasks, recordings, "demo-vista", run_dir, mode="gen", backend=backend, concurrency=concurrency,
        progress=progress, web_cache=out / "web-cache",
    )  # fmt: skip
    failures = [f"{e['task_id']}: {e['error']}" for e in summary.failed]
    scores = suite.score_run(run_dir, ["match"], progress=progress)
    paths = suite.write_report(run_dir)
    suite.export_run(run_dir, out / "export")
    failures += judged_wrong(scores)
    lines = [
        *suite.score_lines(scores, run_dir),
        f"tasks: {tasks_file}",
        f"recordings: {recordings}",
        f"traces: {run_dir / 'episodes'}",
        f"report: {paths['html']}",
        f"official layout: {out / 'export'} (results.jsonl, summary_metrics.json, one folder per question)",
    ]
    return DemoResult(out, lines, failures)
