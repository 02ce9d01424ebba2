"""The OCR judge: tesseract reads the artifact; passes when the expected text is in what it read.

Offline and deterministic. It applies to checkpoints whose evidence is text: those that give
``visual_check.ocr_text``, or whose expected answer is a short string that is not yes/no.
Small images are upscaled before reading because tesseract misses text under ~20 px high.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from PIL import Image

from ..view import Artifact
from .base import JudgeVerdict, VisualQuestion
from .cache import JudgeCache, NoCache

TESSERACT_ARGS = ("--psm", "6")
MIN_SIDE_FOR_OCR = 600
MAX_TEXT_LENGTH = 40


class OcrUnavailable(RuntimeError):
    """tesseract is not installed; install Debian's tesseract-ocr (scripts/setup.sh does)."""


def squash(text: str) -> str:
    """Lower case letters and digits only, so OCR spacing and punctuation slips do not matter."""
    return re.sub(r"[^0-9a-z]+", "", text.lower())


class OcrJudge:
    """Reads artifacts with the tesseract CLI."""

    judge_id = "ocr:tesseract"

    def __init__(self, cache: JudgeCache | None = None, binary: str = "tesseract") -> None:
        found = shutil.which(binary)
        if found is None:
            raise OcrUnavailable(f"{binary!r} is not on PATH; install the tesseract-ocr package")
        self.binary = found
        self.cache = cache or NoCache()

    def applies(self, question: VisualQuestion) -> bool:
        return bool(self.target(question))

    @staticmethod
    def target(question: VisualQuestion) -> str:
        if question.text:
            return question.text
        expected = question.expected.strip()
        if expected.lower() in ("yes", "no") or len(expected) > MAX_TEXT_LENGTH or not squash(expected):
            return ""
        return expected

    def judge(self, question: VisualQuestion, artifact: Artifact, root_image: Path | None) -> JudgeVerdict:
        prompt = " ".join(TESSERACT_ARGS)
        cached = self.cache.get(self.judge_id, prompt, artifact.sha256)
        text = cached["answer"] if cached else self.read(artifact.path)
        if cached is None:
            self.cache.put(self.judge_id, prompt, artifact.sha256, {"answer": text})
        wanted = self.target(question)
        passed = squash(wanted) in squash(text)
        detail = {"looked_for": wanted, "cached": cached is not None}
        return JudgeVerdict(self.judge_id, artifact.index, passed, text.strip(), detail)

    def read(self, image: Path) -> str:
        """The text tesseract reads in ``image`` (upscaled first when small)."""
        with tempfile.TemporaryDirectory(prefix="pbx-ocr-") as tmp:
            prepared = _prepared(image, Path(tmp) / "in.png")
            done = subprocess.run(
                [self.binary, str(prepared), "stdout", *TESSERACT_ARGS],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        if done.returncode != 0:
            raise OcrUnavailable(f"tesseract failed on {image}: {done.stderr.strip()[:300]}")
        return done.stdout


def _prepared(image: Path, out: Path) -> Path:
    with Image.open(image) as img:
        rgb = img.convert("L")
        side = min(rgb.size)
        if side < MIN_SIDE_FOR_OCR:
            factor = min(4, -(-MIN_SIDE_FOR_OCR // max(side, 1)))
            rgb = rgb.resize((rgb.width * factor, rgb.height * factor), Image.Resampling.LANCZOS)
        rgb.save(out)
    return out
