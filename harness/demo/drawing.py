"""Deterministic pictures for the demo tasks, drawn with Pillow only.

Every picture is a pure function of its arguments: clutter comes from a seeded
``random.Random`` and text uses Pillow's bundled font, so the same Pillow version gives the
same bytes on every machine (no system fonts, no network). Text is large and high-contrast
once the right operation is applied, so tesseract can read it in the produced artifacts.
"""

from __future__ import annotations

import random

from PIL import Image, ImageDraw, ImageFont

Box = tuple[int, int, int, int]
RGB = tuple[int, int, int]

SHADE = 28
"""How far clutter blocks stray from the backdrop colour: visible, yet far below text contrast, so
tesseract's binarization keeps the text and drops the clutter."""


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's bundled scalable font at ``size`` px (identical everywhere Pillow is)."""
    return ImageFont.load_default(size=size)


def backdrop(size: tuple[int, int], seed: int, top: RGB, bottom: RGB) -> Image.Image:
    """A vertical gradient with seeded blocks on it: a busy scene that hides small details."""
    width, height = size
    image = Image.new("RGB", size)
    draw = ImageDraw.Draw(image)
    for y in range(height):
        mix = y / max(height - 1, 1)
        draw.line([(0, y), (width, y)], fill=tuple(round(a + (b - a) * mix) for a, b in zip(top, bottom, strict=True)))
    rng = random.Random(seed)
    for _ in range(40):
        x, y = rng.randrange(width), rng.randrange(height)
        w, h = rng.randrange(40, 220), rng.randrange(30, 180)
        base = image.getpixel((x, y))
        assert isinstance(base, tuple)
        shade = tuple(max(0, min(255, c + rng.randrange(-SHADE, SHADE + 1))) for c in base)
        draw.rectangle((x, y, x + w, y + h), fill=shade)
    return image


def label(
    size: tuple[int, int], text: str, text_px: int, ink: RGB, paper: RGB, border: RGB | None = None
) -> Image.Image:
    """A plate of ``size`` with ``text`` centred on it."""
    plate = Image.new("RGB", size, paper)
    draw = ImageDraw.Draw(plate)
    face = font(text_px)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=face)
    origin = ((size[0] - (right - left)) // 2 - left, (size[1] - (bottom - top)) // 2 - top)
    draw.text(origin, text, font=face, fill=ink)
    if border is not None:
        draw.rectangle((0, 0, size[0] - 1, size[1] - 1), outline=border, width=3)
    return plate


def paste_label(image: Image.Image, box: Box, plate: Image.Image) -> Image.Image:
    """``image`` with ``plate`` placed exactly over ``box``."""
    out = image.copy()
    out.paste(plate.resize((box[2] - box[0], box[3] - box[1])), box[:2])
    return out


def ruled_page(size: tuple[int, int], title: str, seed: int) -> Image.Image:
    """A white page: a bold title on top, then grey bars standing in for body text."""
    page = label((size[0], 120), title, 56, (15, 15, 15), (250, 250, 246))
    sheet = Image.new("RGB", size, (250, 250, 246))
    sheet.paste(page, (0, 20))
    draw = ImageDraw.Draw(sheet)
    rng = random.Random(seed)
    for row in range(170, size[1] - 40, 44):
        draw.rectangle((50, row, 50 + rng.randrange(250, size[0] - 100), row + 14), fill=(150, 150, 150))
    return sheet
