"""The demo tasks in the Agentic-MME task shape: prompt, golden answer, checkpoints, ordering, efficiency.

Each task needs one decisive visual operation (crop, rotate, flip, enhance) or two in order
(crop then rotate). Checkpoints use the official fields (``tools``, ``code_check.verifier``,
``visual_check``) plus our ``constraints`` (region) and ``visual_check.evidence`` (box for the
geometric judge), so both our scorer and the official evaluator can read them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PIL import Image

from . import scenes
from .drawing import Box


@dataclass(frozen=True)
class DemoTask:
    """One demo task: its file number, id, picture and the official JSON fields."""

    number: str
    task_id: str
    level: int
    prompt: str
    answer: str
    draw: Callable[[], Image.Image]
    checkpoints: tuple[dict[str, Any], ...]
    ordering: tuple[dict[str, Any], ...] = ()
    reference_calls: int = 1
    category: str = ""
    """What the picture shows; reports group scores by it (``meta.category``)."""

    def to_json(self) -> dict[str, Any]:
        """The task file ``json/NNNN.json`` in the Agentic-MME layout."""
        return {
            "task_id": self.task_id,
            "input": {"prompt": self.prompt},
            "meta": {"level": self.level, "category": self.category, "source": "pixelbox demo (generated)"},
            "golden_answer": {"value": self.answer, "match_type": "exact", "tolerance": 0},
            "process_evaluation": {
                "checkpoints": [dict(c) for c in self.checkpoints],
                "ordering_constraints": [dict(o) for o in self.ordering],
                "efficiency": {
                    "reference_tool_calls": self.reference_calls,
                    "penalty_per_extra_call": 0.1,
                    "max_tool_calls": 8,
                },
            },
        }


def visual_checkpoint(
    cid: str,
    description: str,
    op: str,
    verifier: str,
    evidence: Box,
    size: tuple[int, int],
    text: str | None = None,
    min_side_px: int = 32,
    region: bool = False,
) -> dict[str, Any]:
    """A V checkpoint: a tool part (op + verifier), and an OCR-able evidence check when ``text`` is given."""
    box = scenes.to_1000(evidence, size)
    checkpoint: dict[str, Any] = {
        "id": cid,
        "axis": "V",
        "description": description,
        "tools": [op],
        "code_check": {"verifier": verifier},
    }
    if region:
        checkpoint["constraints"] = {"region": {"bbox_2d": box, "min_coverage": 0.9, "min_iou": 0.3}}
    if text is not None:
        checkpoint["visual_check"] = {
            "question": "What text is written in this image? Answer with the text only.",
            "expected_answer": text,
            "evidence": {"bbox_2d": box, "input_image": 0, "min_side_px": min_side_px, "min_coverage": 0.9},
        }
    return checkpoint


DEMO_TASKS: tuple[DemoTask, ...] = (
    DemoTask(
        "0001",
        "demo-crop-sign",
        1,
        "There is a small sign near the bottom-right corner of the picture. What does it say?",
        "GATE 47",
        scenes.small_sign,
        (
            visual_checkpoint(
                "V1", "Zoom into the small sign at the bottom right", "crop", "verify_crop_ast",
                scenes.SIGN_BOX, (1600, 1200), text="GATE 47", min_side_px=150, region=True,
            ),
        ),
        category="signs",
    ),
    DemoTask(
        "0002",
        "demo-rotate-page",
        1,
        "This notice was photographed upside down. What is its title?",
        "QUIET PLEASE",
        scenes.upside_down_page,
        (
            visual_checkpoint(
                "V1", "Turn the photo the right way up (180 degrees)", "rotate", "require_op:rotate",
                scenes.PAGE_BOX, (1200, 900), text="QUIET PLEASE",
            ),
        ),
        category="documents",
    ),
    DemoTask(
        "0003",
        "demo-flip-mirror",
        1,
        "This sign was photographed in a mirror. What does it say?",
        "NORTH EXIT",
        scenes.mirrored_sign,
        (
            visual_checkpoint(
                "V1", "Mirror the photo left-right so the text reads normally", "flip", "require_op:flip",
                scenes.MIRROR_BOX, (1200, 800), text="NORTH EXIT",
            ),
        ),
        category="signs",
    ),
    DemoTask(
        "0004",
        "demo-enhance-dark",
        1,
        "The lower half of this photo is almost black. Which room number is written on the door there? "
        "Answer with the number only.",
        "308",
        scenes.dark_corridor,
        (
            visual_checkpoint(
                "V1", "Brighten the dark lower half until the door sign is legible", "enhance", "verify_enhance_ast",
                scenes.DARK_BOX, (1200, 900), text="ROOM 308",
            ),
        ),
        category="low light",
    ),
    DemoTask(
        "0005",
        "demo-crop-rotate-tag",
        2,
        "A small yellow tag on the wall at the top left is mounted upside down. What does it say?",
        "BAY 19",
        scenes.upside_down_tag,
        (
            visual_checkpoint(
                "V1", "Zoom into the yellow tag at the top left", "crop", "verify_crop_ast",
                scenes.TAG_BOX, (1600, 1200), region=True,
            ),
            visual_checkpoint(
                "V2", "Rotate the close-up by 180 degrees so the tag reads upright", "rotate", "require_op:rotate",
                scenes.TAG_BOX, (1600, 1200), text="BAY 19", min_side_px=150,
            ),
            {
                "id": "R1",
                "axis": "R",
                "description": "The final answer names the tag",
                "answer_check": {"match_type": "contains", "target": "BAY 19"},
            },
        ),
        ordering=({"id": "O1", "sequence": ["V1", "V2"], "max_gap": 1},),
        reference_calls=2,
        category="labels",
    ),
)  # fmt: skip
"""The bundled demo tasks, in file order."""
