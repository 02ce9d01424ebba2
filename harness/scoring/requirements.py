"""What a checkpoint asks of the trace, read from the official checkpoint fields.

Official checkpoints score without edits: ``code_check.verifier`` names (``verify_crop_ast``,
``require_op:OP``, ``require_images:N``, ``require_metrics:KEY``) and ``tools`` lists. Our optional
``constraints`` object adds an input image and a region (see docs/scoring.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pixelbox.contract.ops import CHECKPOINT_WORDS, VISUAL_OPS
from pixelbox.harness.modes import ATOMIC

from .view import Box

PRIMITIVES = ("crop", "rotate", "resize", "enhance", "flip")
"""The official reader's five op names, in the order it looks for them inside a verifier name."""

Kind = Literal["op", "tool", "images", "metrics"]


class CheckpointError(ValueError):
    """A checkpoint cannot be read; the message names the field and what it should hold."""


@dataclass(frozen=True)
class Region:
    """An annotated box in 0-1000 root coordinates and how closely an op must cover it."""

    box: Box
    min_iou: float | None = None
    min_coverage: float | None = None


@dataclass(frozen=True)
class Requirement:
    """The tool part of one checkpoint, ready for matching."""

    checkpoint_id: str
    kind: Kind
    source: str
    ops: frozenset[str] = frozenset()
    tools: frozenset[str] = frozenset()
    input_root: str | None = None
    region: Region | None = None
    count: int = 1
    key: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    atomic_ops: frozenset[str] | None = None
    """Ops accepted in atomic mode: only the names the checkpoint spells out (see ``literal_ops``)."""

    def ops_for_mode(self, mode: str) -> frozenset[str]:
        """``ops`` in code mode; in atomic mode only the literally named ops (``atomic_ops``)."""
        if mode == ATOMIC and self.atomic_ops is not None:
            return self.atomic_ops
        return self.ops

    @property
    def consumes_step(self) -> bool:
        """Op and tool requirements claim one step each (one-to-one); counts do not."""
        return self.kind in ("op", "tool")


def ops_for(name: str) -> frozenset[str] | None:
    """Canonical ops a checkpoint word stands for, or None when it names no visual op."""
    word = name.strip().lower().replace("-", "_").replace(" ", "_")
    if word in CHECKPOINT_WORDS:
        return CHECKPOINT_WORDS[word]
    return frozenset({word}) if word in VISUAL_OPS else None


def requirement_of(checkpoint: dict[str, Any]) -> Requirement | None:
    """The tool requirement of a visual checkpoint; None when it only has a visual_check."""
    cid = str(checkpoint.get("id", ""))
    constraints = _constraints(checkpoint)
    verifier = str((checkpoint.get("code_check") or {}).get("verifier") or "").strip()
    tools = [str(t) for t in checkpoint.get("tools") or []]
    literal = {"atomic_ops": literal_ops(verifier, tools)}
    if verifier:
        parsed = _from_verifier(cid, verifier, tools)
        if parsed is not None:
            return Requirement(**{**parsed.__dict__, **constraints, **literal})
    if tools:
        return Requirement(**{**_from_tools(cid, tools).__dict__, **constraints, **literal})
    if "code_check" in checkpoint:
        raise CheckpointError(f"checkpoint {cid}: code_check has no verifier and the checkpoint no 'tools'")
    return None


def literal_ops(verifier: str, tools: list[str]) -> frozenset[str]:
    """The ops an atomic-mode tool call must be named to satisfy the checkpoint, as officially read.

    The official reader compares an atomic call's tool name with the verifier's op (``require_op:OP``,
    or the first of ``PRIMITIVES`` inside the verifier text) and then with the ``tools`` names, with no
    synonyms: an ``autocontrast`` call does not satisfy ``enhance``. Only canonical visual ops are kept.
    """
    names: set[str] = set()
    name, _, arg = verifier.partition(":")
    if name == "require_op":
        names.add(arg.strip().lower())
    primitive = next((p for p in PRIMITIVES if p in verifier.lower()), None)
    if primitive is not None:
        names.add(primitive)
    names |= {t.strip().lower() for t in tools}
    return frozenset(n for n in names if n in VISUAL_OPS)


def _from_verifier(cid: str, verifier: str, tools: list[str]) -> Requirement | None:
    name, _, arg = verifier.partition(":")
    if name == "require_op":
        ops = ops_for(arg)
        if ops is None:
            raise CheckpointError(f"checkpoint {cid}: require_op:{arg} names no visual op; use one of {VISUAL_OPS}")
        return Requirement(cid, "op", verifier, ops=ops)
    if name == "require_images":
        return Requirement(cid, "images", verifier, count=int(arg) if arg.strip().isdigit() else 1)
    if name == "require_metrics":
        return Requirement(cid, "metrics", verifier, key=arg.strip() or None)
    ops = _ops_in_verifier_name(name)
    if ops is not None:
        return Requirement(cid, "op", verifier, ops=ops)
    if tools:
        return None
    raise CheckpointError(
        f"checkpoint {cid}: unknown verifier {verifier!r}; use verify_<op>_ast, require_op:OP, "
        "require_images:N or require_metrics:KEY"
    )


def _ops_in_verifier_name(name: str) -> frozenset[str] | None:
    """``verify_crop_ast`` -> crop; the longest vocabulary word inside the name wins."""
    core = re.sub(r"^verify_|_ast$", "", name.lower())
    direct = ops_for(core)
    if direct is not None:
        return direct
    words = sorted([*VISUAL_OPS, *CHECKPOINT_WORDS], key=len, reverse=True)
    return next((ops_for(w) for w in words if w in core), None)


def _from_tools(cid: str, tools: list[str]) -> Requirement:
    ops: set[str] = set()
    others: set[str] = set()
    for tool in tools:
        mapped = ops_for(tool)
        if mapped is None:
            others.add(tool.lower())
        else:
            ops |= mapped
    if ops:
        return Requirement(cid, "op", f"tools {tools}", ops=frozenset(ops))
    return Requirement(cid, "tool", f"tools {tools}", tools=frozenset(others))


def _constraints(checkpoint: dict[str, Any]) -> dict[str, Any]:
    raw = checkpoint.get("constraints") or {}
    out: dict[str, Any] = {}
    if "input_image" in raw:
        image = raw["input_image"]
        out["input_root"] = image if isinstance(image, str) else f"input:{int(image)}"
    if "region" in raw:
        out["region"] = _region(str(checkpoint.get("id", "")), raw["region"])
    return out


def _region(cid: str, raw: dict[str, Any]) -> Region:
    box = raw.get("bbox_2d")
    if not isinstance(box, (list, tuple)) or len(box) != 4 or not (box[0] < box[2] and box[1] < box[3]):
        raise CheckpointError(f"checkpoint {cid}: constraints.region.bbox_2d must be [x1, y1, x2, y2] in 0-1000")
    iou, coverage = raw.get("min_iou"), raw.get("min_coverage")
    if iou is None and coverage is None:
        coverage = 0.5
    return Region(
        tuple(float(v) for v in box),  # type: ignore[arg-type]
        None if iou is None else float(iou),
        None if coverage is None else float(coverage),
    )
