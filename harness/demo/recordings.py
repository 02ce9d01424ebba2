"""Recorded solutions of the demo tasks, in both modes, as the replay agent reads them.

Code mode ("gen"): turns written the way models write them (PIL, the Agentic-MME environment
variables, ``transformed_image_N.png`` under ``PROCESSED_IMAGE_SAVE_PATH``), then a turn with
the final ``<answer>``. Atomic mode ("atm"): function calls to the atomic tools, then the answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Turn = dict[str, Any]

SAVE = """\
out_dir = os.environ["PROCESSED_IMAGE_SAVE_PATH"]
{var}.save(os.path.join(out_dir, "transformed_image_{n}.png"))
print("saved transformed_image_{n}.png", {var}.size)"""

OPEN = """\
import os
from PIL import Image{extra}

img = Image.open(os.environ["ORIGINAL_IMAGE_PATH"])
print("original size:", img.size)
"""


def _code(body: str, var: str, n: int, extra: str = "") -> str:
    return OPEN.format(extra=extra) + body + "\n" + SAVE.format(var=var, n=n)


def _gen_turn(thought: str, code: str) -> Turn:
    return {"text": f"{thought}\n<code>\n{code}\n</code>"}


def _answer(thought: str, answer: str) -> Turn:
    return {"text": f"{thought}\n<answer>{answer}</answer>"}


def _call(thought: str, name: str, **arguments: Any) -> Turn:
    return {"text": thought, "tool_calls": [{"name": name, "arguments": arguments}]}


CROP_SIGN = """\
# the sign sits near the bottom-right corner: crop it with a margin, then enlarge 3x
w, h = img.size
box = (int(w * 0.7875), int(h * 0.7833), int(w * 0.94375), int(h * 0.8867))
sign = img.crop(box)
zoomed = sign.resize((sign.width * 3, sign.height * 3), Image.LANCZOS)"""

ROTATE_PAGE = """\
# the page is upside down: turn the whole photo half a turn
upright = img.rotate(180)"""

FLIP_MIRROR = """\
# text seen in a mirror reads right-to-left: mirror it back
restored = ImageOps.mirror(img)"""

ENHANCE_DARK = """\
# the lower half is nearly black; raise the brightness strongly
brighter = ImageEnhance.Brightness(img).enhance(7.0)"""

CROP_TAG = """\
# the tag is in the top-left area; cut it out with a margin and enlarge it
w, h = img.size
tag = img.crop((int(w * 0.1125), int(h * 0.1333), int(w * 0.2875), int(h * 0.2333)))
zoomed = tag.resize((tag.width * 3, tag.height * 3), Image.LANCZOS)"""

ROTATE_TAG = """\
import os

# the close-up from the previous step is still in `zoomed`; turn it the right way up
upright = zoomed.rotate(180)
""" + SAVE.format(var="upright", n=2)

GEN: dict[str, list[Turn]] = {
    "demo-crop-sign": [
        _gen_turn("The sign is far too small to read at this size. I'll crop around it and enlarge it.",
                  _code(CROP_SIGN, "zoomed", 1)),
        _answer("The enlarged crop shows the sign clearly: it reads GATE 47.", "GATE 47"),
    ],
    "demo-rotate-page": [
        _gen_turn("The notice is upside down, so I'll rotate the image by 180 degrees first.",
                  _code(ROTATE_PAGE, "upright", 1)),
        _answer("Now the page is upright and the title reads QUIET PLEASE.", "QUIET PLEASE"),
    ],
    "demo-flip-mirror": [
        _gen_turn("The lettering is mirrored. Flipping the image horizontally should make it readable.",
                  _code(FLIP_MIRROR, "restored", 1, extra=", ImageOps")),
        _answer("After the flip the sign reads NORTH EXIT.", "NORTH EXIT"),
    ],
    "demo-enhance-dark": [
        _gen_turn("The bottom of the picture is too dark to see anything. Let me brighten it.",
                  _code(ENHANCE_DARK, "brighter", 1, extra=", ImageEnhance")),
        _answer("With the brightness raised, the door sign says ROOM 308.", "308"),
    ],
    "demo-crop-rotate-tag": [
        _gen_turn("The tag is small and upside down. First I'll zoom into it.", _code(CROP_TAG, "zoomed", 1)),
        _gen_turn("The close-up is upside down. I'll rotate it by 180 degrees.", ROTATE_TAG),
        _answer("The rotated close-up reads BAY 19.", "BAY 19"),
    ],
}  # fmt: skip

ATM: dict[str, list[Turn]] = {
    "demo-crop-sign": [
        _call("The sign is tiny; I'll zoom into the bottom-right corner.", "crop",
              image_index=0, bbox_2d=[785, 780, 945, 890], zoom_scale=3.0, label="close-up of the sign"),
        _answer("The close-up reads GATE 47.", "GATE 47"),
    ],
    "demo-rotate-page": [
        _call("The page is upside down; rotating it by 180 degrees.", "rotate",
              image_index=0, angle=180, expand=True, label="page upright"),
        _answer("The title of the upright page is QUIET PLEASE.", "QUIET PLEASE"),
    ],
    "demo-flip-mirror": [
        _call("The text is mirrored; flipping left-right.", "flip",
              image_index=0, direction="horizontal", label="un-mirrored sign"),
        _answer("The flipped sign reads NORTH EXIT.", "NORTH EXIT"),
    ],
    "demo-enhance-dark": [
        _call("The lower half is nearly black; raising the brightness.", "enhance",
              image_index=0, brightness=7.0, label="brightened"),
        _answer("The brightened door sign says ROOM 308.", "308"),
    ],
    "demo-crop-rotate-tag": [
        _call("Zooming into the small tag at the top left first.", "crop",
              image_index=0, bbox_2d=[110, 130, 290, 235], zoom_scale=3.0, label="tag close-up"),
        _call("The close-up is upside down; rotating it.", "rotate",
              image_index=1, angle=180, expand=True, label="tag upright"),
        _answer("The upright tag reads BAY 19.", "BAY 19"),
    ],
}  # fmt: skip

RECORDINGS: dict[str, dict[str, list[Turn]]] = {"gen": GEN, "atm": ATM}


def write_recordings(directory: Path, recordings: dict[str, dict[str, list[Turn]]] | None = None) -> dict[str, Path]:
    """Write ``DIR/gen/TASK_ID.json`` and ``DIR/atm/TASK_ID.json`` (of :data:`RECORDINGS` unless other
    ``recordings`` are given); returns the directory per mode."""
    folders = {}
    for mode, by_task in (recordings or RECORDINGS).items():
        folder = directory / mode
        folder.mkdir(parents=True, exist_ok=True)
        for task_id, turns in by_task.items():
            (folder / f"{task_id}.json").write_text(json.dumps({"turns": turns}, indent=1), encoding="utf-8")
        folders[mode] = folder
    return folders
