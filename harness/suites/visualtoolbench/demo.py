"""``pixelbox demo --suite visualtoolbench``: three generated tasks in the official downloader's layout,
solved offline by recorded turns through the real episode loop and sandbox, judged by recorded
verdicts, scored (APR, ARS, process figures) and reported.

The tasks: a tag too small to read without a crop (single-turn, region switch), a price sign and a
sum (single-turn, hybrid: crop then ``calculator``), and a two-turn task whose second turn shows a
new, upside-down label (multi-turn, follow-up; the first turn's golden answer is fed back).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from pixelbox.harness.demo.drawing import backdrop, font
from pixelbox.harness.suites import DemoResult

HELP = """Writes under --out: tasks/ (dataset.json and images/sample_K/ as the official downloader makes them),
recordings/ (the recorded model turns), verdicts.json (the recorded judge), run/ (traces, scores.json,
report.md, report/index.html)."""
MODEL = "replay-demo"
"""The Agentic-MME demo's model name too, so `pixelbox compare` puts the two demos side by side."""


def _tag_scene() -> Image.Image:
    image = backdrop((900, 600), 11, (70, 90, 120), (150, 160, 170))
    draw = ImageDraw.Draw(image)
    draw.rectangle((760, 500, 860, 560), fill="white", outline="black")
    draw.text((772, 512), "B-7", fill="black", font=font(30))
    return image


def _price_scene() -> Image.Image:
    image = backdrop((900, 600), 12, (120, 100, 80), (190, 180, 160))
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, 40, 240, 120), fill="yellow", outline="black")
    draw.text((52, 58), "$4 each", fill="black", font=font(34))
    return image


def _label_scene(upside_down: bool) -> Image.Image:
    image = backdrop((700, 500), 13, (60, 110, 90), (160, 190, 170))
    draw = ImageDraw.Draw(image)
    draw.rectangle((250, 200, 470, 280), fill="white", outline="black")
    draw.text((268, 218), "LOT 42" if upside_down else "SHELF 3", fill="black", font=font(36))
    return image.rotate(180) if upside_down else image


def _rubrics(*items: tuple[str, int]) -> str:
    return json.dumps(
        {
            f"r{n}": {"description": d, "weight": w, "objective/subjective": "objective"}
            for n, (d, w) in enumerate(items, start=1)
        }
    )


CROP = (
    "from PIL import Image\nimport os\nsrc = os.environ['INPUT_IMAGE_PATHS'].split(os.pathsep)[{k}]\n"
    "img = Image.open(src)\nzoom = img.crop({box}).resize(({w}, {h}))\n"
    "zoom.save(f'{{PROCESSED_IMAGE_SAVE_PATH}}/transformed_image_0.png')\n"
)
ROTATE = (
    "from PIL import Image\nimport os\nsrc = os.environ['INPUT_IMAGE_PATHS'].split(os.pathsep)[1]\n"
    "Image.open(src).rotate(180).save(f'{PROCESSED_IMAGE_SAVE_PATH}/transformed_image_0.png')\n"
)


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


TASKS: list[dict[str, Any]] = [
    {
        "id": "vtb-demo-tag",
        "turncase": "single-turn",
        "prompt_category": "generalist",
        "eval_focus": "region_switch",
        "turn_prompts": ["What is written on the small tag in the lower right corner?"],
        "turn_golden_answers": ["The tag reads B-7."],
        "rubrics": [_rubrics(("The answer says the tag reads B-7", 5), ("The answer is brief", 1))],
        "scenes": [_tag_scene],
        "turns": [
            {
                "text": "",
                "tool_calls": [
                    _call(
                        "c1", "python_image_processing", code=CROP.format(k=0, box=(740, 480, 880, 580), w=420, h=300)
                    )
                ],
            },
            {"text": "The tag reads B-7."},
        ],
    },
    {
        "id": "vtb-demo-price",
        "turncase": "single-turn",
        "prompt_category": "finance",
        "eval_focus": "hybrid_tool_use",
        "turn_prompts": ["How much would 7 of the items on the yellow sign cost?"],
        "turn_golden_answers": ["The sign says $4 each, so 7 cost $28."],
        "rubrics": [_rubrics(("The answer gives a total of $28", 5), ("The answer reads the unit price as $4", 3))],
        "scenes": [_price_scene],
        "turns": [
            {
                "text": "",
                "tool_calls": [
                    _call("c1", "python_image_processing", code=CROP.format(k=0, box=(30, 30, 250, 130), w=440, h=200))
                ],
            },
            {"text": "", "tool_calls": [_call("c2", "calculator", expression="7 * 4")]},
            {"text": "Each item is $4, so 7 of them cost $28."},
        ],
    },
    {
        "id": "vtb-demo-labels",
        "turncase": "multi-turn",
        "prompt_category": "generalist",
        "eval_focus": "follow_up",
        "turn_prompts": ["Which shelf is this label for?", "And this second label, upside down: what lot is it?"],
        "turn_golden_answers": ["It is for shelf 3.", "The label reads LOT 42."],
        "rubrics": [
            _rubrics(("The answer names shelf 3", 5)),
            _rubrics(("The answer says the lot is 42", 5), ("The answer notes the label was upside down", 2)),
        ],
        "scenes": [lambda: _label_scene(False), lambda: _label_scene(True)],
        "turns": [
            {"text": "Shelf 3."},
            {"text": "", "tool_calls": [_call("c1", "python_image_processing", code=ROTATE)]},
            {"text": "Turned right side up, the label reads LOT 42."},
        ],
    },
]
VERDICTS = {
    "vtb-demo-tag": {"r1": "Met", "r2": "Met"},
    "vtb-demo-price": {"r1": "Met", "r2": "Met"},
    "vtb-demo-labels": [{"r1": "Met"}, {"r1": "Met", "r2": "Not Met"}],
}


def write_tasks(out: Path) -> Path:
    """The demo tasks as ``dataset.json`` with ``images/sample_K/`` beside it; returns the JSON's path."""
    records = []
    for k, spec in enumerate(TASKS):
        folder = out / "images" / f"sample_{k}"
        folder.mkdir(parents=True, exist_ok=True)
        by_turn = []
        for t, scene in enumerate(spec["scenes"]):
            scene().save(folder / f"turn_{t}_image_0.png")
            by_turn.append([f"images/sample_{k}/turn_{t}_image_0.png"])
        scene_0 = folder / "image_0.png"
        spec["scenes"][0]().save(scene_0)
        record = {
            key: spec[key]
            for key in ("id", "turncase", "prompt_category", "eval_focus", "turn_prompts", "turn_golden_answers")
        }
        record.update(
            num_turns=len(spec["turn_prompts"]),
            rubrics_by_turn=spec["rubrics"],
            turn_tool_trajectories=["[]"] * len(spec["turn_prompts"]),
            image_paths=[f"images/sample_{k}/image_0.png"],
            images_by_turn_paths=by_turn,
        )
        records.append(record)
    path = out / "dataset.json"
    path.write_text(json.dumps(records, indent=1), encoding="utf-8")
    return path


def write_recordings(out: Path) -> Path:
    """One recording per task (``TASK_ID.json``: the model's turns)."""
    from pixelbox.harness.suites.shared import write_recordings as write

    return write(out, {spec["id"]: {"turns": spec["turns"]} for spec in TASKS})


def run_demo(out: Path, suite_name: str, *, backend: str, concurrency: int, progress: bool) -> DemoResult:
    """Tasks, recordings and verdicts written, the run played, scored and reported under ``out``."""
    from pixelbox.harness.suites import SUITES
    from pixelbox.harness.suites.shared import replay_run

    suite = SUITES.get(suite_name)
    dataset = write_tasks(out / "tasks")
    recordings = write_recordings(out / "recordings")
    verdicts = out / "verdicts.json"
    verdicts.write_text(json.dumps(VERDICTS, indent=1), encoding="utf-8")
    tasks = suite.load_tasks(dataset)
    run_dir = out / "run"
    summary = replay_run(
        suite, tasks, recordings, MODEL, run_dir, mode="atm", backend=backend, concurrency=concurrency,
        progress=progress,
    )  # fmt: skip
    failures = [
        f"{e['task_id']}: {e.get('status')} ({e.get('reason')})"
        for e in summary.episodes
        if e.get("status") != "answered"
    ]
    scores = suite.score_run(run_dir, [f"recorded:{verdicts}"], progress=progress)
    paths = suite.write_report(run_dir)
    lines = [*suite.score_lines(scores, run_dir), f"tasks: {dataset}", f"report: {paths['html']}"]
    return DemoResult(out, lines, failures)
