"""The five demo pictures and where their evidence sits.

Each scene returns the image and the evidence box in pixels; the task catalog converts boxes
to the 0-1000 coordinates the task format uses.
"""

from __future__ import annotations

from PIL import Image, ImageOps

from .drawing import Box, backdrop, label, paste_label, ruled_page

SIGN_BOX: Box = (1280, 960, 1488, 1044)
PAGE_BOX: Box = (300, 150, 900, 750)
MIRROR_BOX: Box = (250, 300, 950, 500)
DARK_BOX: Box = (300, 600, 900, 760)
TAG_BOX: Box = (200, 180, 440, 260)


def small_sign() -> Image.Image:
    """1600x1200 street scene; a small plate reading GATE 47 near the bottom-right corner."""
    scene = backdrop((1600, 1200), 11, (215, 225, 235), (190, 190, 185))
    plate = label((208, 84), "GATE 47", 17, (20, 20, 20), (245, 245, 235), border=(40, 40, 40))
    return paste_label(scene, SIGN_BOX, plate)


def upside_down_page() -> Image.Image:
    """1200x900 desk with a notice titled QUIET PLEASE, photographed upside down."""
    desk = backdrop((1200, 900), 22, (205, 180, 150), (190, 165, 135))
    page = ruled_page((PAGE_BOX[2] - PAGE_BOX[0], PAGE_BOX[3] - PAGE_BOX[1]), "QUIET PLEASE", 23)
    return paste_label(desk, PAGE_BOX, page).rotate(180)


def mirrored_sign() -> Image.Image:
    """1200x800 hall with a pale green NORTH EXIT sign, seen in a mirror (flipped left-right)."""
    hall = backdrop((1200, 800), 33, (225, 225, 220), (200, 200, 195))
    sign = label((700, 200), "NORTH EXIT", 80, (15, 40, 20), (200, 235, 205))
    return ImageOps.mirror(paste_label(hall, MIRROR_BOX, sign))


def dark_corridor() -> Image.Image:
    """1200x900: bright sky on top, an almost black lower half with ROOM 308 barely above black."""
    scene = backdrop((1200, 900), 44, (200, 215, 235), (230, 235, 240))
    scene.paste((10, 10, 14), (0, 450, 1200, 900))
    door = label((DARK_BOX[2] - DARK_BOX[0], DARK_BOX[3] - DARK_BOX[1]), "ROOM 308", 90, (30, 30, 36), (10, 10, 14))
    return paste_label(scene, DARK_BOX, door)


def upside_down_tag() -> Image.Image:
    """1600x1200 warehouse wall; a small tag reading BAY 19, mounted upside down, top left."""
    wall = backdrop((1600, 1200), 55, (215, 210, 200), (190, 185, 180))
    tag = label((240, 80), "BAY 19", 34, (10, 10, 10), (250, 220, 60)).rotate(180)
    return paste_label(wall, TAG_BOX, tag)


def to_1000(box: Box, size: tuple[int, int]) -> list[float]:
    """A pixel box in 0-1000 coordinates of an image of ``size`` (rounded to 0.1)."""
    width, height = size
    return [round(box[0] * 1000 / width, 1), round(box[1] * 1000 / height, 1),
            round(box[2] * 1000 / width, 1), round(box[3] * 1000 / height, 1)]  # fmt: skip
