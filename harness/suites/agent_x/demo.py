"""``pixelbox demo --suite agent-x``: two generated Agent-X tasks (an image and a short video) in both modes.

The tasks are drawn here and written in the released layout (``data.json``, ``toolmeta.json``,
``files/AgentX_0.png``, ``files/AgentX_1.mp4`` made with OpenCV's VideoWriter). A replay agent plays
them through the real runner and sandbox twice: ``official`` (one JSON reply with steps and invented
tool outputs) and ``executed`` (``Calculator`` and ``DrawBoundingBox`` run in the sandbox,
``SceneDescriber`` answered from recorded vision-model answers). Scored with the deterministic
metrics (toolset F1, tool precision of what ran; ``--judge openai:MODEL`` adds the judge metrics)
and reported.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pixelbox.harness.suites import DemoResult, Suite

if TYPE_CHECKING:
    from pixelbox.harness.modes import Mode

HELP = (
    "Agent-X demo: an image task and a video task written in the released layout (data.json, toolmeta.json, "
    "files/), replayed through the real runner and sandbox in the official single-shot mode (run-official/) and "
    "the executed mode (run-executed/: Calculator and DrawBoundingBox in the sandbox, SceneDescriber from recorded "
    "vision answers), scored with the deterministic metrics and reported."
)
SCENE = "A shop shelf with six red boxes and a price sign."
VIDEO_SCENE = "A coloured square moving from left to right."


def build_tasks(folder: Path) -> Path:
    """Draw the media, write ``data.json`` and ``toolmeta.json``; returns the folder."""
    import cv2
    import numpy as np
    from PIL import Image, ImageDraw

    from pixelbox.harness.suites.agent_x.tools import SCHEMAS

    files = folder / "files"
    files.mkdir(parents=True, exist_ok=True)
    shelf = Image.new("RGB", (320, 240), (235, 235, 235))
    draw = ImageDraw.Draw(shelf)
    for k in range(6):
        draw.rectangle((15 + 50 * k, 120, 50 + 50 * k, 170), fill=(200, 30, 30))
    draw.text((20, 30), "7 EUR each", fill=(0, 0, 0))
    shelf.save(files / "AgentX_0.png")
    writer = cv2.VideoWriter(str(files / "AgentX_1.mp4"), cv2.VideoWriter.fourcc(*"mp4v"), 4, (96, 64))
    for k in range(12):
        frame = np.full((64, 96, 3), 240, np.uint8)
        frame[20:44, 4 + 7 * k : 28 + 7 * k] = (40, 40, 200)
        writer.write(frame)
    writer.release()
    meta = {
        name: {
            "name": name,
            "description": schema["function"]["description"],
            "inputs": [{"name": p, **v} for p, v in schema["function"]["parameters"]["properties"].items()],
        }
        for name, schema in SCHEMAS.items()
    }
    (folder / "toolmeta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    steps0 = [
        {
            "step": 1,
            "task": "Describe the shelf",
            "tool": "SceneDescriber",
            "input": "image",
            "output": SCENE,
            "thought": "six boxes",
        },
        {"step": 2, "task": "Total price", "tool": "Calculator", "input": "6*7", "output": "42", "thought": "42 EUR"},
    ]
    data = {
        "0": [
            {
                "query": "What do all the red boxes on the shelf cost together?",
                "file_path": "AgentX_0.png",
                "tool_metadata": {"SceneDescriber": meta["SceneDescriber"], "Calculator": meta["Calculator"]},
                "reasoning_steps": steps0,
                "final_answer": {"value": "42 EUR", "justification": "6 boxes at 7 EUR"},
                "query_type": "objective",
            }
        ],
        "1": [
            {
                "query": "Which way does the square move?",
                "file_path": "AgentX_1.mp4",
                "tool_metadata": {"SceneDescriber": meta["SceneDescriber"]},
                "reasoning_steps": [
                    {
                        "step": 1,
                        "task": "Describe",
                        "tool": "SceneDescriber",
                        "input": "frames",
                        "output": VIDEO_SCENE,
                        "thought": "rightwards",
                    }
                ],
                "final_answer": {"value": "left to right", "justification": "the frames show it"},
                "query_type": "objective",
            }
        ],
    }
    (folder / "data.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    return folder


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _official(steps: list[dict[str, Any]], value: str) -> dict[str, Any]:
    reply = {"reasoning_steps": steps, "final_answer": {"value": value, "justification": "from the steps"}}
    return {"text": "```json\n" + json.dumps(reply) + "\n```"}


OFFICIAL: dict[str, list[dict[str, Any]]] = {
    "0": [
        _official(
            [
                {
                    "step": 1,
                    "task": "Count the boxes",
                    "tool_used": "ObjectCounter",
                    "tool_output": "6",
                    "thought": "six",
                },
                {"step": 2, "task": "Multiply", "tool_used": "Calculator", "tool_output": "42", "thought": "42 EUR"},
            ],
            "42 EUR",
        )
    ],
    "1": [
        _official(
            [
                {
                    "step": 1,
                    "task": "Describe",
                    "tool_used": "SceneDescriber",
                    "tool_output": VIDEO_SCENE,
                    "thought": "right",
                }
            ],
            "left to right",
        )
    ],
}
FINAL = '{{"final_answer": {{"value": "{v}", "justification": "from the tool results"}}}}'
EXECUTED: dict[str, list[dict[str, Any]]] = {
    "0": [
        {"text": "First, what is on the shelf.", "tool_calls": [_call("SceneDescriber", image=1)]},
        {"text": "Six boxes at 7 EUR: multiply.", "tool_calls": [_call("Calculator", expression="6 * 7")]},
        {
            "text": "Mark the boxes.",
            "tool_calls": [_call("DrawBoundingBox", image=1, bbox="(15, 120, 300, 170)", annotation="6 boxes")],
        },
        {"text": FINAL.format(v="42 EUR")},
    ],
    "1": [
        {"text": "Look at the first frame.", "tool_calls": [_call("SceneDescriber", image=1)]},
        {"text": FINAL.format(v="left to right")},
    ],
}


def record_vision(cache_root: Path, tasks: list[Any]) -> None:
    """What the vision model would have answered for SceneDescriber on each task's first image."""
    import os

    from pixelbox.harness.suites.agent_x.models import VISION_ENV
    from pixelbox.harness.suites.agent_x.tools import VISION_PROMPTS
    from pixelbox.harness.web import WebCache

    for task in tasks:
        cache = WebCache.for_task(cache_root, task.task_id, "record")
        data = task.images[0].read_bytes()
        key = {
            "tool": "SceneDescriber",
            "prompt": VISION_PROMPTS["SceneDescriber"],
            "image_sha256": hashlib.sha256(data).hexdigest(),
            "model": os.environ.get(VISION_ENV),
        }
        cache.put("agentx_vision", key, ok=True, data={"text": VIDEO_SCENE if task.video else SCENE}, error=None)


def run_demo(out: Path, suite: Suite, *, backend: str, concurrency: int, progress: bool) -> DemoResult:
    from pixelbox.harness.suites.shared import replay_run, write_recordings

    folder = build_tasks(out / "tasks")
    tasks = list(suite.load_tasks(folder))
    lines: list[str] = []
    failures: list[str] = []
    modes: tuple[tuple[str, Mode, dict[str, list[dict[str, Any]]]], ...] = (
        ("official", "gen", OFFICIAL),
        ("executed", "atm", EXECUTED),
    )
    for label, mode, turns in modes:
        rec = write_recordings(out / "recordings" / label, turns)
        run_dir = out / f"run-{label}"
        record_vision(run_dir / "vision-cache", tasks)
        summary = replay_run(
            suite, tasks, rec, "replay-demo", run_dir, mode=mode, backend=backend, concurrency=concurrency,
            progress=progress,
        )  # fmt: skip
        failures += [f"{label} {e['task_id']}: {e['error']}" for e in summary.failed]
        scores = suite.score_run(run_dir, ["match"], progress=progress)
        paths = suite.write_report(run_dir)
        suite.export_run(run_dir, out / "export")
        for record in scores["episodes"]:
            score = record["score"]
            if score["infrastructure"] or score["prediction"] != score["gold"]:
                failures.append(f"{label} {score['task_id']}: {score['prediction']!r} vs {score['gold']!r}")
        lines += [f"## {label} (--mode {mode})", *suite.score_lines(scores, run_dir), f"report: {paths['html']}"]
    lines.append(f"tasks: {folder}")
    return DemoResult(out, lines, failures)
