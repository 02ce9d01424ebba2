"""Replay verification: do the recorded events explain an artifact?

Re-runs an artifact's chain from its root image with the canonical implementations and
compares the result with the artifact. Ops with no canonical re-implementation (``draw``,
``composite``, most ``other`` ops, intensity curves...) make the verdict ``unverifiable`` rather
than guessing; transposes (``other`` with ``method: transpose``/``transverse``) are re-run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from pixelbox.kernel.atomic.canonical import apply
from pixelbox.tracer.events import Event

CONSISTENT_AT = 0.90
"""Similarity at or above which a replay is taken to explain the artifact."""

_COMPARE_SIDE = 256


@dataclass(frozen=True)
class ReplayResult:
    """``verdict`` is ``consistent``, ``inconsistent`` or ``unverifiable`` (see ``reason``)."""

    verdict: str
    score: float | None
    replayed: Image.Image | None
    reason: str = ""


def replay_chain(root: Image.Image, chain: list[Event]) -> tuple[Image.Image | None, str]:
    """Apply each event of ``chain`` to ``root``; returns the image, or ``None`` and why not."""
    image = root
    for event in chain:
        if event.op == "alias" or (event.op == "io" and event.output is None):
            continue
        result = apply(event.op, event.params, image)
        if result is None:
            return None, f"event seq {event.seq} ({event.op} via {event.api}) cannot be re-run from its parameters"
        image = result
    return image, ""


def similarity(a: Image.Image, b: Image.Image) -> float:
    """Agreement of two images as grayscale at a common size, 0..1 (1 = identical).

    The lower of two scores: 1 - mean absolute difference (catches intensity changes) and the
    correlation of the pixels (catches different content of similar brightness, such as two
    edge maps); correlation is skipped when either image is nearly flat.
    """
    size = (_COMPARE_SIDE, _COMPARE_SIDE)
    x = np.asarray(a.convert("L").resize(size, Image.Resampling.BILINEAR), dtype=np.float64)
    y = np.asarray(b.convert("L").resize(size, Image.Resampling.BILINEAR), dtype=np.float64)
    closeness = 1.0 - float(np.abs(x - y).mean()) / 255.0
    if x.std() < 1.0 or y.std() < 1.0:
        return closeness
    correlation = float(np.corrcoef(x.ravel(), y.ravel())[0, 1])
    return max(0.0, min(closeness, correlation))


def verify(
    artifact: Image.Image, root: Image.Image, chain: list[Event], threshold: float = CONSISTENT_AT
) -> ReplayResult:
    """Replay ``chain`` from ``root`` and judge whether it reproduces ``artifact``."""
    replayed, reason = replay_chain(root, chain)
    if replayed is None:
        return ReplayResult("unverifiable", None, None, reason)
    if abs(replayed.width / replayed.height - artifact.width / artifact.height) > 0.05:
        why = f"replayed aspect {replayed.size} differs from the artifact's {artifact.size}"
        return ReplayResult("inconsistent", 0.0, replayed, why)
    score = similarity(replayed, artifact)
    verdict = "consistent" if score >= threshold else "inconsistent"
    return ReplayResult(verdict, round(score, 4), replayed, "" if verdict == "consistent" else "pixels differ")


__all__ = ["CONSISTENT_AT", "ReplayResult", "replay_chain", "similarity", "verify"]
