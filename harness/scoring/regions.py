"""The regions a task's checkpoints expect the model to look at, for reports to draw beside its crops.

A checkpoint's region comes from ``constraints.region`` (what V_tool's matching checks) or, failing
that, ``visual_check.evidence`` (where V_true's judges look), both read by the scorer's own parsers;
boxes are in 0-1000 coordinates of one input image (``root``).
"""

from __future__ import annotations

from typing import Any

from .requirements import CheckpointError, requirement_of
from .vtrue import question_of


def expected_regions(checkpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``[{checkpoint_id, root, bbox_2d, source, min_iou, min_coverage}]``, one per checkpoint that has a region."""
    found = []
    for checkpoint in checkpoints:
        region = _from_constraints(checkpoint) or _from_evidence(checkpoint)
        if region is not None:
            found.append({"checkpoint_id": str(checkpoint.get("id", "")), **region})
    return found


def _from_constraints(checkpoint: dict[str, Any]) -> dict[str, Any] | None:
    try:
        requirement = requirement_of(checkpoint)
    except (CheckpointError, ValueError, TypeError):
        return None
    if requirement is None or requirement.region is None:
        return None
    region = requirement.region
    return {
        "root": requirement.input_root or "input:0",
        "bbox_2d": list(region.box),
        "source": "constraints.region",
        "min_iou": region.min_iou,
        "min_coverage": region.min_coverage,
    }


def _from_evidence(checkpoint: dict[str, Any]) -> dict[str, Any] | None:
    try:
        question = question_of(checkpoint)
    except (ValueError, TypeError, IndexError):
        return None
    if question is None or question.evidence_box is None:
        return None
    return {
        "root": question.root,
        "bbox_2d": list(question.evidence_box),
        "source": "visual_check.evidence",
        "min_iou": None,
        "min_coverage": question.min_coverage,
    }
