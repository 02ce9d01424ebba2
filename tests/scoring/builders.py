"""Fixture episodes for scoring tests: real PNG files and schema-valid events, in both modes.

The scene: a 1000x800 root image with a red square at pixels (600, 100)-(900, 300), i.e.
``EVIDENCE`` = [600, 125, 900, 375] in 0-1000 coordinates, and the word "PIXEL" printed on a
sign in the lower left.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from pixelbox.harness.scoring.view import (
    Artifact,
    EpisodeView,
    Interaction,
    Mode,
    SearchCall,
    TaskSpec,
    TracedEvent,
)
from pixelbox.tracer.events import Event

ROOT_SIZE = (1000, 800)
EVIDENCE = [600.0, 125.0, 900.0, 375.0]
EVIDENCE_PX = (600, 100, 900, 300)
SIGN_PX = (60, 560, 460, 760)
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(FONT, size)


def make_root(path: Path) -> Path:
    """The scene described in the module docstring."""
    image = Image.new("RGB", ROOT_SIZE, (200, 200, 200))
    draw = ImageDraw.Draw(image)
    draw.rectangle((EVIDENCE_PX[0], EVIDENCE_PX[1], EVIDENCE_PX[2] - 1, EVIDENCE_PX[3] - 1), fill=(230, 20, 20))
    draw.rectangle((SIGN_PX[0], SIGN_PX[1], SIGN_PX[2] - 1, SIGN_PX[3] - 1), fill=(255, 255, 255))
    draw.text((SIGN_PX[0] + 30, SIGN_PX[1] + 50), "PIXEL", fill=(0, 0, 0), font=font(90))
    image.save(path)
    return path


def save_artifact(
    root: Path,
    box_px: tuple[int, int, int, int],
    path: Path,
    index: int,
    interaction: int,
    box_root: Sequence[float] | None,
    event_seq: int | None,
    scale: float = 1.0,
) -> Artifact:
    """Crop the root, optionally resize, save it as a PNG and describe it."""
    with Image.open(root) as img:
        crop = img.crop(box_px)
    if scale != 1.0:
        crop = crop.resize((round(crop.width * scale), round(crop.height * scale)))
    crop.save(path)
    return Artifact(
        index=index,
        path=path,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        width=crop.width,
        height=crop.height,
        interaction=interaction,
        root="input:0",
        box_root=None if box_root is None else (box_root[0], box_root[1], box_root[2], box_root[3]),
        event_seq=event_seq,
    )


def event(
    seq: int,
    exec_: int,
    op: str,
    inputs: list[str],
    output: str | None,
    params: dict[str, Any],
    *,
    status: str = "ok",
    artifact: Any = None,
    atomic: bool = False,
    error: dict | None = None,
) -> Event:
    """One event through the schema validator (code mode unless ``atomic``)."""
    return Event.from_dict(
        {
            "v": 1,
            "seq": seq,
            "exec": exec_,
            "op": op,
            "status": status,
            "api": f"pixelbox.tools.{op}" if atomic else _API.get(op, "PIL.Image.Image." + op),
            "src": None if atomic else {"line": seq + 1, "col": 4},
            "inputs": inputs,
            "output": output,
            "params": params,
            "artifact": artifact,
            "error": error,
            "t_ms": 0.2,
        }
    )


_API = {"io": "PIL.Image.Image.save", "autocontrast": "PIL.ImageOps.autocontrast", "convert": "PIL.Image.Image.convert"}

CROP_PARAMS = {"box_px": list(EVIDENCE_PX), "bbox_2d": EVIDENCE, "bbox_2d_root": EVIDENCE, "root": "input:0"}
ENHANCE_PARAMS = {"kind": "contrast", "factor": 1.5}
SEARCH_PAYLOAD = "Pixel Tower - Wikipedia. The tower is 330 metres tall and opened in 1931."


def task(**process: Any) -> TaskSpec:
    """The fixture task; ``process`` overrides parts of ``process_evaluation``."""
    checkpoints = [
        {
            "id": "S1",
            "axis": "S",
            "tools": ["google_search"],
            "description": "Search the tower's height (expected to find: 330 metres)",
        },
        {
            "id": "V1",
            "axis": "V",
            "tools": ["crop"],
            "description": "Zoom into the red square",
            "code_check": {"verifier": "verify_crop_ast"},
            "constraints": {"region": {"bbox_2d": EVIDENCE, "min_iou": 0.5}},
            "visual_check": {
                "question": "What color is the square?",
                "expected_answer": "red",
                "evidence": {"bbox_2d": EVIDENCE, "min_side_px": 100},
            },
        },
        {
            "id": "V2",
            "axis": "V",
            "tools": ["enhance"],
            "description": "Raise the contrast of the crop",
            "code_check": {"verifier": "require_op:enhance"},
        },
        {
            "id": "R1",
            "axis": "R",
            "description": "final answer",
            "answer_check": {"match_type": "contains", "target": "330"},
        },
    ]
    evaluation = {
        "checkpoints": checkpoints,
        "ordering_constraints": [{"id": "O1", "sequence": ["V1", "V2"], "max_gap": 1}],
        "efficiency": {"reference_tool_calls": 2},
    }
    evaluation.update(process)
    return TaskSpec(
        "0001",
        2,
        "How tall is the tower behind the red square?",
        {"value": "330", "match_type": "contains"},
        evaluation,
    )


def code_episode(tmp: Path, answer: str = "The tower is 330 metres tall.", **changes: Any) -> EpisodeView:
    """Code mode: block 0 crops the square and saves it; a search; block 2 autocontrasts the crop."""
    root = make_root(tmp / "orig.png")
    a1 = save_artifact(root, EVIDENCE_PX, tmp / "transformed_image_1.png", 1, 0, tuple(EVIDENCE), 2)
    a2 = save_artifact(root, EVIDENCE_PX, tmp / "transformed_image_2.png", 2, 2, tuple(EVIDENCE), 5)
    events = [
        TracedEvent(0, event(0, 0, "io", [], "input:0", {"action": "open", "path": str(root)})),
        TracedEvent(0, event(1, 0, "crop", ["input:0"], "img:1", CROP_PARAMS)),
        TracedEvent(0, event(2, 0, "io", ["img:1"], None, {"action": "save"}, artifact={"index": 1})),
        TracedEvent(2, event(3, 1, "convert", ["img:1"], "img:2", {"mode": "RGB"})),
        TracedEvent(2, event(4, 1, "autocontrast", ["img:2"], "img:3", {"cutoff": 0})),
        TracedEvent(2, event(5, 1, "io", ["img:3"], None, {"action": "save"}, artifact={"index": 2})),
    ]
    view = EpisodeView(
        task=task(),
        mode="gen",
        answer=answer,
        interactions=(
            Interaction(0, "code", "python", {"code": "img.crop((600, 100, 900, 300)).save(...)"}, "ok", (1,)),
            Interaction(1, "tool", "google_search", {"query": "Pixel Tower height"}, "ok"),
            Interaction(2, "code", "python", {"code": "ImageOps.autocontrast(crop).save(...)"}, "ok", (2,)),
        ),
        events=tuple(events),
        artifacts=(a1, a2),
        searches=(SearchCall(1, "google_search", {"query": "Pixel Tower height"}, SEARCH_PAYLOAD),),
        root_images=(root,),
        model="fixture-model",
    )
    return replace(view, **changes)


def atomic_episode(tmp: Path, answer: str = "330", mode: Mode = "atm", **changes: Any) -> EpisodeView:
    """Atomic mode: search, then crop and a contrast enhancement as tool calls (each saves its result).

    The second call is the ``enhance`` tool: in atomic mode an ``enhance`` checkpoint accepts only a
    call of that name, as the official evaluator reads atomic tool names.
    """
    root = make_root(tmp / "orig.png")
    a1 = save_artifact(root, EVIDENCE_PX, tmp / "tool_1.png", 1, 1, tuple(EVIDENCE), 1)
    a2 = save_artifact(root, EVIDENCE_PX, tmp / "tool_2.png", 2, 2, tuple(EVIDENCE), 3)
    events = [
        TracedEvent(1, event(0, 0, "crop", ["input:0"], "img:1", CROP_PARAMS, atomic=True)),
        TracedEvent(1, event(1, 0, "io", ["img:1"], None, {"action": "capture"}, artifact={"index": 1}, atomic=True)),
        TracedEvent(2, event(2, 1, "enhance", ["img:1"], "img:2", ENHANCE_PARAMS, atomic=True)),
        TracedEvent(2, event(3, 1, "io", ["img:2"], None, {"action": "capture"}, artifact={"index": 2}, atomic=True)),
    ]
    view = EpisodeView(
        task=task(),
        mode=mode,
        answer=answer,
        interactions=(
            Interaction(0, "tool", "google_search", {"query": "pixel tower"}, "ok"),
            Interaction(1, "tool", "crop", {"image_index": 0, "bbox_2d": EVIDENCE}, "ok", (1,)),
            Interaction(2, "tool", "enhance", {"image_index": 1, "contrast": 1.5}, "ok", (2,)),
        ),
        events=tuple(events),
        artifacts=(a1, a2),
        searches=(SearchCall(0, "google_search", {"query": "pixel tower"}, SEARCH_PAYLOAD),),
        root_images=(root,),
        model="fixture-model",
    )
    return replace(view, **changes)
