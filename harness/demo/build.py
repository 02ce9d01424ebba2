"""Write the demo tasks to disk in the Agentic-MME dataset layout, with their recordings.

Layout under the output directory::

    tasks/json/NNNN.json           the task files
    tasks/images/image_NNNN.png    their generated pictures
    recordings/gen/TASK_ID.json    code-mode solutions (replay agent format)
    recordings/atm/TASK_ID.json    atomic-mode solutions
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .catalog import DEMO_TASKS, DemoTask
from .recordings import write_recordings


@dataclass(frozen=True)
class DemoFiles:
    """Where :func:`write_demo` put things."""

    tasks: Path
    recordings: dict[str, Path]


def write_demo(out: str | Path, tasks: tuple[DemoTask, ...] = DEMO_TASKS) -> DemoFiles:
    """Generate every demo picture and task file, and the recordings of both modes, under ``out``.

    Files are rewritten on every call; the pictures are deterministic, so rewriting changes nothing.
    """
    root = Path(out)
    json_dir, image_dir = root / "tasks" / "json", root / "tasks" / "images"
    json_dir.mkdir(parents=True, exist_ok=True)
    image_dir.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        (json_dir / f"{task.number}.json").write_text(json.dumps(task.to_json(), indent=1) + "\n", encoding="utf-8")
        task.draw().save(image_dir / f"image_{task.number}.png", optimize=False)
    return DemoFiles(root / "tasks", write_recordings(root / "recordings"))
