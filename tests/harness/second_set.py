# ruff: noqa: E501  (the task files are data, one checkpoint per line)
"""A second Agentic-MME task set for the official-semantics checks: search, multi-image, ordering, efficiency.

Built from the demo's images and recorded solutions, in shapes the official loader accepts and ours
normalizes: images under ``image/``, a task file ``9.json`` (image ``image_0009.png``) without a
``task_id``, a level and a tolerance as text, an unknown match type, and a task with two images
``_1``/``_2`` beside a single ``image_0102.png`` that the official lookup does not load.

- ``0101`` (the yellow tag): a google_search S checkpoint whose expected text is in the cached results,
  crop then rotate, ordering S1 -> V1 (the official entry order puts searches first in code mode),
  reference 2 calls (the search makes 3: one over), level ``"2"`` as text (in no official level);
- ``0102`` (the gate sign, two inputs): a lens S checkpoint never met, a crop with a visual check, and
  ``require_images:2`` with one transformed image;
- ``9`` (the rotated page): a rotate with a visual check, max_tool_calls 1 exceeded (penalty 1).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pixelbox.harness.demo import RECORDINGS, write_demo
from pixelbox.harness.tasks import Task, load_tasks
from tests.harness.demo_runs import with_search

SOURCES = {"0101": "demo-crop-rotate-tag", "0102": "demo-crop-sign", "9": "demo-rotate-page"}
SEARCHES = {"0101", "9"}


def _tasks() -> dict[str, dict[str, Any]]:
    tag = {
        "task_id": "second-tag",
        "input": {"prompt": "A small yellow tag on the wall at the top left is mounted upside down. What does it say?"},
        "meta": {"level": "2"},
        "golden_answer": {"value": "BAY 19", "match_type": "contains"},
        "process_evaluation": {
            "checkpoints": [
                {
                    "id": "S1",
                    "axis": "S",
                    "tools": ["google_search"],
                    "description": "Look up what the tags mark (expected to find: storage bays)",
                },
                {"id": "V1", "axis": "V", "tools": ["crop"], "code_check": {"verifier": "verify_crop_ast"}},
                {
                    "id": "V2",
                    "axis": "V",
                    "tools": ["rotate"],
                    "code_check": {"verifier": "require_op:rotate"},
                    "visual_check": {"question": "What text is written in this image?", "expected_answer": "BAY 19"},
                },
                {"id": "R1", "axis": "R", "answer_check": {"match_type": "contains", "target": "BAY 19"}},
            ],
            "ordering_constraints": [{"id": "O1", "sequence": ["S1", "V1"], "max_gap": 0}],
            "efficiency": {"reference_tool_calls": 2, "penalty_per_extra_call": 0.25, "max_tool_calls": 8},
        },
    }
    sign = {
        "task_id": "second-sign",
        "input": {"prompt": "What does the small sign at the bottom right of the first image say?"},
        "meta": {"level": 1},
        "golden_answer": {"value": "GATE 47", "match_type": "exact"},
        "process_evaluation": {
            "checkpoints": [
                {"id": "S1", "axis": "S", "tools": ["google_lens_search"], "description": "Find the place by image"},
                {
                    "id": "V1",
                    "axis": "V",
                    "tools": ["crop"],
                    "code_check": {"verifier": "verify_crop_ast"},
                    "visual_check": {"question": "What text is written in this image?", "expected_answer": "GATE 47"},
                },
                {"id": "V2", "axis": "V", "tools": ["crop"], "code_check": {"verifier": "require_images:2"}},
            ],
            "ordering_constraints": [{"id": "O1", "sequence": ["V1", "V2"], "max_gap": 1}],
            "efficiency": {"reference_tool_calls": 1, "penalty_per_extra_call": 0.1},
        },
    }
    page = {
        "input": {"prompt": "This photo of a printed notice is upside down. What does the notice say?"},
        "meta": {"level": 3},
        "golden_answer": {"value": "QUIET PLEASE", "match_type": "fuzzy", "tolerance": "0"},
        "process_evaluation": {
            "checkpoints": [
                {"id": "V1", "axis": "V", "tools": ["rotate"], "code_check": {"verifier": "require_op:rotate"},
                 "visual_check": {"question": "What text is written in this image?", "expected_answer": "QUIET PLEASE"}},
                {"id": "V2", "axis": "V", "answer_check": {"match_type": "contains", "target": "QUIET"}},
            ],
            "efficiency": {"reference_tool_calls": 0, "penalty_per_extra_call": 0.5, "max_tool_calls": 1},
        },
    }  # fmt: skip
    return {"0101": tag, "0102": sign, "9": page}


def write_second_set(root: Path) -> Path:
    """The task set under ``root/set`` (json/ and image/), its images taken from the demo's."""
    demo = write_demo(root / "demo").tasks
    by_id = {t.task_id: t for t in load_tasks(demo)}
    dataset = root / "set"
    (dataset / "json").mkdir(parents=True)
    (dataset / "image").mkdir()
    for stem, raw in _tasks().items():
        (dataset / "json" / f"{stem}.json").write_text(json.dumps(raw, indent=1), encoding="utf-8")
        source = by_id[SOURCES[stem]].images[0]
        key = stem.zfill(4)
        if stem == "0102":
            shutil.copyfile(source, dataset / "image" / f"image_{key}_1.png")
            shutil.copyfile(by_id["demo-flip-mirror"].images[0], dataset / "image" / f"image_{key}_2.png")
            shutil.copyfile(source, dataset / "image" / f"image_{key}.png")
        else:
            shutil.copyfile(source, dataset / "image" / f"image_{key}.png")
    return dataset


def second_recordings(folder: Path, mode: str, tasks: Sequence[Task]) -> Path:
    """The demo's recorded solutions for the source tasks, with a search where the set wants one."""
    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        stem = task.source.stem if task.source is not None else task.task_id
        turns = RECORDINGS[mode][SOURCES[stem]]
        (folder / f"{task.task_id}.json").write_text(json.dumps(with_search(turns) if stem in SEARCHES else turns))
    return folder
