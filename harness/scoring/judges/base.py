"""What every V_true judge receives and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..view import Artifact, Box


@dataclass(frozen=True)
class VisualQuestion:
    """A checkpoint's visual check, in the form the judges read.

    ``question``/``expected`` come from the official ``visual_check``; ``evidence_box`` (0-1000 of
    ``root``) and ``min_side_px`` from our optional ``visual_check.evidence`` object; ``text`` is
    the string the OCR judge looks for (``visual_check.ocr_text``, else a short expected answer).
    """

    checkpoint_id: str
    question: str
    expected: str
    evidence_box: Box | None = None
    root: str | None = None
    min_side_px: float = 32.0
    min_coverage: float = 0.9
    text: str | None = None


@dataclass(frozen=True)
class JudgeVerdict:
    """One judge's verdict on one artifact: the raw answer it gave and whether it matched."""

    judge: str
    artifact: int
    passed: bool
    answer: str
    detail: dict[str, Any] = field(default_factory=dict)


class Judge(Protocol):
    """A V_true judge: decides whether one artifact holds the evidence a checkpoint asks about."""

    @property
    def judge_id(self) -> str: ...

    def applies(self, question: VisualQuestion) -> bool:
        """Whether this judge can decide the question at all (otherwise it is not asked)."""
        ...

    def judge(self, question: VisualQuestion, artifact: Artifact, root_image: Path | None) -> JudgeVerdict: ...
