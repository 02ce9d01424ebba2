"""Helpers for episode tests: tasks with generated images, and reading a run's traces back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from pixelbox.harness.tasks import Task
from pixelbox.harness.traces import Trace, read_trace


def task_image(path: Path, size: tuple[int, int] = (400, 300)) -> Path:
    """A gradient picture with a red box at (240, 60)-(360, 140): the 'evidence' a crop should find."""
    w, h = size
    xs = np.linspace(0, 200, w)[None, :].repeat(h, 0)
    ys = np.linspace(0, 200, h)[:, None].repeat(w, 1)
    image = Image.fromarray(np.stack([xs, ys, (xs + ys) / 2], axis=-1).astype(np.uint8))
    ImageDraw.Draw(image).rectangle((240, 60, 360, 140), fill=(230, 20, 20))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


def make_task(root: Path, task_id: str = "t1", prompt: str = "What colour is the box?", images: int = 1) -> Task:
    """A task with ``images`` generated input images under ``root``."""
    paths = tuple(task_image(root / f"image_{task_id}" / f"image_{task_id}_{k}.png") for k in range(images))
    return Task(task_id=task_id, prompt=prompt, images=paths, answer={"value": "red", "match_type": "exact"})


def trace_of(run_dir: Path, task_id: str) -> Trace:
    return read_trace(run_dir / "episodes" / f"{task_id}.jsonl")


def executions(trace: Trace) -> list[dict[str, Any]]:
    return [o["execution"] for o in trace.of_kind("observation") if o.get("execution")]


def kinds(trace: Trace) -> list[str]:
    return [str(r["kind"]) for r in trace.records]
