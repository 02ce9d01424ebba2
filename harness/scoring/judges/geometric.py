"""The geometric judge: passes when the artifact shows the annotated evidence box, large enough.

Offline and exact: from the artifact's lineage (the root region it shows, 0-1000 of the root)
it checks that the region covers the evidence box (``min_coverage``) and that the evidence
spans at least ``min_side_px`` artifact pixels on its shorter side.
"""

from __future__ import annotations

import math
from pathlib import Path

from PIL import Image

from .. import geometry
from ..view import Artifact
from .base import JudgeVerdict, VisualQuestion


class GeometricJudge:
    """Coverage and resolution of the evidence box, from lineage only (no pixels are read)."""

    judge_id = "geometric"

    def applies(self, question: VisualQuestion) -> bool:
        return question.evidence_box is not None

    def judge(self, question: VisualQuestion, artifact: Artifact, root_image: Path | None) -> JudgeVerdict:
        assert question.evidence_box is not None
        problem, detail = _problem(question, artifact, root_image)
        return JudgeVerdict(self.judge_id, artifact.index, problem is None, problem or "evidence shown", detail)


def _problem(question: VisualQuestion, artifact: Artifact, root_image: Path | None) -> tuple[str | None, dict]:
    evidence = question.evidence_box
    assert evidence is not None
    if artifact.box_root is None:
        return "the artifact's lineage is unknown", {}
    if question.root is not None and artifact.root is not None and artifact.root != question.root:
        return f"the artifact descends from {artifact.root}, the evidence is in {question.root}", {}
    cov = geometry.coverage(artifact.box_root, evidence)
    detail: dict = {"box_root": list(artifact.box_root), "evidence": list(evidence), "coverage": round(cov, 3)}
    if cov < question.min_coverage:
        return f"the artifact shows {cov:.0%} of the evidence box, needs {question.min_coverage:.0%}", detail
    side = _evidence_side_px(artifact, evidence, root_image)
    if side is None:
        return "the root image size is unknown, so resolution cannot be checked", detail
    detail["evidence_side_px"] = round(side, 1)
    if side < question.min_side_px:
        return f"the evidence spans {side:.0f} px on its short side, needs {question.min_side_px:.0f}", detail
    return None, detail


def _evidence_side_px(artifact: Artifact, evidence: geometry.Box, root_image: Path | None) -> float | None:
    """Shorter side of the evidence box in artifact pixels (scale from the region the artifact shows)."""
    if root_image is None or not root_image.is_file():
        return None
    with Image.open(root_image) as img:
        root_w, root_h = img.size
    assert artifact.box_root is not None
    shown = artifact.box_root
    shown_px = (shown[2] - shown[0]) / 1000 * root_w * (shown[3] - shown[1]) / 1000 * root_h
    if shown_px <= 0:
        return None
    scale = math.sqrt(artifact.width * artifact.height / shown_px)
    ev_w = (evidence[2] - evidence[0]) / 1000 * root_w
    ev_h = (evidence[3] - evidence[1]) / 1000 * root_h
    return min(ev_w, ev_h) * scale
