"""V_true judges (VLM, OCR, geometric), their disk cache, and the ``--judge`` spec parser."""

from __future__ import annotations

from pathlib import Path

from .base import Judge, JudgeVerdict, VisualQuestion
from .cache import JudgeCache, NoCache
from .chat import ChatEndpoint, JudgeEndpointError
from .geometric import GeometricJudge
from .ocr import OcrJudge, OcrUnavailable
from .vlm import VlmJudge

JUDGE_SPECS = "openai:MODEL[@BASE_URL], ocr, geometric"


class JudgeSpecError(ValueError):
    """A ``--judge`` value could not be read; the message lists the accepted forms."""


def parse_endpoint(spec: str) -> ChatEndpoint:
    """``openai:MODEL`` or ``openai:MODEL@http://host:port/v1`` (key from ``OPENAI_API_KEY``)."""
    kind, _, rest = spec.partition(":")
    if kind != "openai" or not rest:
        raise JudgeSpecError(f"judge {spec!r} is not of the form openai:MODEL[@BASE_URL]")
    model, _, base_url = rest.partition("@")
    return ChatEndpoint(model, base_url or None)


def build_judges(specs: list[str], cache_dir: str | Path | None = None) -> list[Judge]:
    """Judges for ``--judge`` values, in the order given, sharing one cache directory."""
    cache = JudgeCache(cache_dir) if cache_dir is not None else NoCache()
    judges: list[Judge] = []
    for spec in specs:
        if spec == "ocr":
            judges.append(OcrJudge(cache))
        elif spec == "geometric":
            judges.append(GeometricJudge())
        elif spec.startswith("openai:"):
            judges.append(VlmJudge(parse_endpoint(spec), cache))
        else:
            raise JudgeSpecError(f"unknown judge {spec!r}; use one of: {JUDGE_SPECS}")
    return judges


__all__ = [
    "ChatEndpoint",
    "GeometricJudge",
    "Judge",
    "JudgeCache",
    "JudgeEndpointError",
    "JudgeSpecError",
    "JudgeVerdict",
    "NoCache",
    "OcrJudge",
    "OcrUnavailable",
    "VisualQuestion",
    "VlmJudge",
    "build_judges",
    "parse_endpoint",
]
