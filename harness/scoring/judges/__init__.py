"""V_true judges (VLM, OCR, geometric), their disk cache, and the ``--judge`` spec parser.

:data:`JUDGES` is the one list of judge kinds: ``--judge`` values are read against it and its
help text is made from it. A new judge is its module (a class with ``judge_id``, ``applies`` and
``judge``, see :mod:`.base`) plus one ``JUDGES.add`` line here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pixelbox.registry import Registry

from .base import Judge, JudgeVerdict, VisualQuestion
from .cache import JudgeCache, NoCache
from .chat import ChatEndpoint, JudgeEndpointError
from .geometric import GeometricJudge
from .ocr import OcrJudge, OcrUnavailable
from .vlm import VlmJudge

Cache = JudgeCache | NoCache


class JudgeSpecError(ValueError):
    """A ``--judge`` value could not be read; the message lists the accepted forms."""


@dataclass(frozen=True)
class JudgeKind:
    """One kind of judge: its ``--judge`` form, what it checks, and how to build it from a spec.

    ``form`` is the spec as users write it: the bare name (``ocr``), or ``name:ARGUMENTS`` for
    kinds that take arguments (``openai:MODEL[@BASE_URL]``); ``build(spec, cache)`` makes the judge.
    """

    name: str
    form: str
    summary: str
    build: Callable[[str, Cache], Judge]

    @property
    def takes_arguments(self) -> bool:
        """Whether the spec is ``name:ARGUMENTS`` rather than the bare name."""
        return self.form != self.name


def parse_endpoint(spec: str) -> ChatEndpoint:
    """``openai:MODEL`` or ``openai:MODEL@http://host:port/v1`` (key from ``OPENAI_API_KEY``)."""
    kind, _, rest = spec.partition(":")
    if kind != "openai" or not rest:
        raise JudgeSpecError(f"judge {spec!r} is not of the form openai:MODEL[@BASE_URL]")
    model, _, base_url = rest.partition("@")
    return ChatEndpoint(model, base_url or None)


JUDGES: Registry[JudgeKind] = Registry("judge")
JUDGES.add(
    "openai",
    JudgeKind(
        "openai",
        "openai:MODEL[@BASE_URL]",
        "a vision-language model behind any OpenAI-compatible endpoint answers the checkpoint's question",
        lambda spec, cache: VlmJudge(parse_endpoint(spec), cache),
    ),
)
JUDGES.add(
    "ocr",
    JudgeKind("ocr", "ocr", "tesseract reads the expected text in the artifact", lambda spec, cache: OcrJudge(cache)),
)
JUDGES.add(
    "geometric",
    JudgeKind(
        "geometric",
        "geometric",
        "the artifact's lineage covers the annotated evidence region at a legible size",
        lambda spec, cache: GeometricJudge(),
    ),
)

JUDGE_SPECS = ", ".join(kind.form for kind in JUDGES.entries())
"""The accepted ``--judge`` forms, for help texts and errors."""


def judge_kind(spec: str) -> JudgeKind:
    """The kind a ``--judge`` value names, or :class:`JudgeSpecError` listing the accepted forms."""
    name, colon, _ = spec.partition(":")
    kind = JUDGES.get(name) if name in JUDGES else None
    if kind is None or colon != (":" if kind.takes_arguments else ""):
        raise JudgeSpecError(f"unknown judge {spec!r}; use one of: {JUDGE_SPECS}")
    return kind


def build_judges(specs: list[str], cache_dir: str | Path | None = None) -> list[Judge]:
    """Judges for ``--judge`` values, in the order given, sharing one cache directory."""
    cache: Cache = JudgeCache(cache_dir) if cache_dir is not None else NoCache()
    return [judge_kind(spec).build(spec, cache) for spec in specs]


__all__ = [
    "JUDGES",
    "JUDGE_SPECS",
    "ChatEndpoint",
    "GeometricJudge",
    "Judge",
    "JudgeCache",
    "JudgeEndpointError",
    "JudgeKind",
    "JudgeSpecError",
    "JudgeVerdict",
    "NoCache",
    "OcrJudge",
    "OcrUnavailable",
    "VisualQuestion",
    "VlmJudge",
    "build_judges",
    "judge_kind",
    "parse_endpoint",
]
