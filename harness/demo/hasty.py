"""A second, hastier "model" for the demo's comparison: the same tasks, recorded with its mistakes.

It crops the wrong corner for the sign and misreads it, answers the mirrored sign without flipping
it, and zooms into the tag without turning it upright; the page and the dark door it solves like the
reference. ``pixelbox compare`` then shows where the two differ, task by task.
"""

from __future__ import annotations

from .recordings import CROP_TAG, ENHANCE_DARK, GEN, Turn, _answer, _call, _code, _gen_turn

MODEL = "replay-hasty"

WRONG_CORNER = """\
# a sign near the corner: the bottom-left one, probably
w, h = img.size
corner = img.crop((int(w * 0.04), int(h * 0.78), int(w * 0.2), int(h * 0.89)))
zoomed = corner.resize((corner.width * 3, corner.height * 3), Image.LANCZOS)"""

HASTY_GEN: dict[str, list[Turn]] = {
    "demo-crop-sign": [
        _gen_turn("Small sign in a corner; I'll zoom in.", _code(WRONG_CORNER, "zoomed", 1)),
        _answer("It is hard to make out, but it looks like GATE 41.", "GATE 41"),
    ],
    "demo-rotate-page": GEN["demo-rotate-page"],
    "demo-flip-mirror": [_answer("Reading the letters as they appear: TIXE HTRON.", "TIXE HTRON")],
    "demo-enhance-dark": [
        _gen_turn("Too dark; brightening.", _code(ENHANCE_DARK, "brighter", 1, extra=", ImageEnhance")),
        _answer("The door says ROOM 308.", "308"),
    ],
    "demo-crop-rotate-tag": [
        _gen_turn("Zooming into the tag.", _code(CROP_TAG, "zoomed", 1)),
        _answer("The close-up reads 61 YAB.", "61 YAB"),
    ],
}  # fmt: skip

HASTY_ATM: dict[str, list[Turn]] = {
    "demo-crop-sign": [
        _call("Zooming into the bottom-left corner.", "crop",
              image_index=0, bbox_2d=[40, 780, 200, 890], zoom_scale=3.0, label="corner"),
        _answer("It looks like GATE 41.", "GATE 41"),
    ],
    "demo-rotate-page": [
        _call("Upside down; rotating.", "rotate", image_index=0, angle=180, expand=True, label="page upright"),
        _answer("The title is QUIET PLEASE.", "QUIET PLEASE"),
    ],
    "demo-flip-mirror": [_answer("The sign reads TIXE HTRON.", "TIXE HTRON")],
    "demo-enhance-dark": [
        _call("Brightening the dark half.", "enhance", image_index=0, brightness=7.0, label="brightened"),
        _answer("The door says ROOM 308.", "308"),
    ],
    "demo-crop-rotate-tag": [
        _call("Zooming into the tag.", "crop",
              image_index=0, bbox_2d=[110, 130, 290, 235], zoom_scale=3.0, label="tag close-up"),
        _answer("The close-up reads 61 YAB.", "61 YAB"),
    ],
}  # fmt: skip

HASTY: dict[str, dict[str, list[Turn]]] = {"gen": HASTY_GEN, "atm": HASTY_ATM}
