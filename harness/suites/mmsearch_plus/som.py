"""Set-of-Mark for MMSearch-Plus: numbered regions of each image, and the overlay the model sees.

The official boxes (human-verified, App. F of the paper) are unreleased, so a task's own
``som_boxes`` are used when it has them, and otherwise we propose regions ourselves with a
classical, deterministic OpenCV method (the same image always gives the same boxes):

1. grayscale, 5x5 Gaussian blur, Canny edges (thresholds from the median intensity: 0.66x and
   1.33x), dilated once by a 3x3 rectangle so an outline's pieces join;
2. the bounding rectangles of all contours (nested ones too: a sign on a wall is its own region),
   kept when their area is 0.4%-60% of the image and neither side is under 12 pixels;
3. greedy non-maximum suppression (larger first, a box overlapping a kept one with IoU > 0.5 is
   dropped), at most :data:`MAX_MARKS` per image;
4. numbered in reading order (top to bottom in bands of a tenth of the height, then left to
   right), from 1, continuing over the task's images.

The overlay draws every box's outline in one of eight high-contrast colours and its number in a
filled tag at a corner chosen to avoid covering other tags and boxes' corners ("avoiding
occlusion"), text size scaled to the image.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_MARKS = 8
MIN_AREA, MAX_AREA = 0.004, 0.60
MIN_SIDE = 12
COLOURS = (
    (230, 25, 75),
    (60, 180, 75),
    (0, 130, 200),
    (245, 130, 48),
    (145, 30, 180),
    (70, 240, 240),
    (240, 50, 230),
    (210, 245, 60),
)


@dataclass(frozen=True)
class Mark:
    """One numbered region: its index (from 1), the image it is on (0-based), its pixel box, and where it came from."""

    index: int
    image: int
    box: tuple[int, int, int, int]
    source: str
    """``task`` (boxes the task gave) or ``proposed`` (ours)."""

    def bbox_2d(self, size: tuple[int, int]) -> list[float]:
        """The box in the 0-1000 coordinates the canonical ``crop`` takes, exact for this image size."""
        w, h = size
        x1, y1, x2, y2 = self.box
        return [x1 * 1000 / w, y1 * 1000 / h, x2 * 1000 / w, y2 * 1000 / h]

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "image": self.image, "box": list(self.box), "source": self.source}


def propose(path: Path, limit: int = MAX_MARKS) -> list[tuple[int, int, int, int]]:
    """Our region proposals for one image, deterministic, in reading order."""
    import cv2
    import numpy as np

    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"{path}: OpenCV cannot read this image for Set-of-Mark proposals")
    h, w = image.shape[:2]
    gray = cv2.GaussianBlur(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), (5, 5), 0)
    median = float(np.median(gray))
    low, high = int(max(0, 0.66 * median)), int(min(255, 1.33 * median))
    edges = cv2.Canny(gray, low, max(high, low + 1))
    edges = cv2.dilate(edges, cv2.getStructuringElement(cv2.MORPH_RECT, (3, 3)), iterations=1)
    contours, _ = cv2.findContours(edges, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    boxes = []
    for contour in contours:
        x, y, bw, bh = cv2.boundingRect(contour)
        area = bw * bh / float(w * h)
        if MIN_AREA <= area <= MAX_AREA and bw >= MIN_SIDE and bh >= MIN_SIDE:
            boxes.append((x, y, x + bw, y + bh))
    kept = _suppress(sorted(set(boxes), key=lambda b: (-(b[2] - b[0]) * (b[3] - b[1]), b)), limit)
    return reading_order(kept, h)


def reading_order(boxes: list[tuple[int, int, int, int]], height: int) -> list[tuple[int, int, int, int]]:
    """Top to bottom in bands of a tenth of the height, then left to right."""
    band = max(1, height // 10)
    return sorted(boxes, key=lambda b: (b[1] // band, b[0], b[1], b[2], b[3]))


def _suppress(boxes: list[tuple[int, int, int, int]], limit: int) -> list[tuple[int, int, int, int]]:
    kept: list[tuple[int, int, int, int]] = []
    for box in boxes:
        if all(_iou(box, k) <= 0.5 for k in kept):
            kept.append(box)
        if len(kept) == limit:
            break
    return kept


def _area(b: tuple[int, int, int, int]) -> int:
    return max(0, b[2] - b[0]) * max(0, b[3] - b[1])


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> int:
    return _area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))


def _iou(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    inter = _overlap(a, b)
    return inter / float(_area(a) + _area(b) - inter or 1)


def marks_for(images: tuple[Path, ...], task_boxes: Any = None) -> list[Mark]:
    """The task's marks over all its images: its own boxes when given, else our proposals; numbered from 1."""
    from PIL import Image

    marks: list[Mark] = []
    for image_number, path in enumerate(images):
        with Image.open(path) as im:
            w, h = im.size
        if task_boxes is not None:
            boxes = [_clamp(b, w, h) for b in task_boxes[image_number]]
            source = "task"
        else:
            boxes, source = propose(path), "proposed"
        for box in boxes:
            marks.append(Mark(len(marks) + 1, image_number, box, source))
    return marks


def _clamp(box: Any, w: int, h: int) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = (round(float(v)) for v in box)
    x1, y1 = min(max(x1, 0), w - 1), min(max(y1, 0), h - 1)
    return x1, y1, max(min(x2, w), x1 + 1), max(min(y2, h), y1 + 1)


def draw_overlay(path: Path, marks: list[Mark], target: Path) -> Path:
    """The image with each mark's outline and its number in a filled tag; written to ``target`` (PNG)."""
    from PIL import Image, ImageDraw, ImageFont

    with Image.open(path) as im:
        canvas = im.convert("RGB")
    w, h = canvas.size
    draw = ImageDraw.Draw(canvas)
    size = max(12, round(min(w, h) / 28))
    font = ImageFont.load_default(size=size)
    line = max(2, round(min(w, h) / 250))
    taken: list[tuple[int, int, int, int]] = []
    for mark in marks:
        colour = COLOURS[(mark.index - 1) % len(COLOURS)]
        draw.rectangle(mark.box, outline=colour, width=line)
    for mark in marks:
        colour = COLOURS[(mark.index - 1) % len(COLOURS)]
        text = str(mark.index)
        left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
        tw, th = right - left + 2 * line + 4, bottom - top + 2 * line + 4
        tag = _place_tag(mark.box, tw, th, w, h, taken)
        taken.append(tag)
        draw.rectangle(tag, fill=colour)
        ink = (0, 0, 0) if sum(colour) > 450 else (255, 255, 255)
        draw.text((tag[0] + line + 2 - left, tag[1] + line + 2 - top), text, fill=ink, font=font)
    target.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(target, format="PNG")
    return target


def _place_tag(
    box: tuple[int, int, int, int], tw: int, th: int, w: int, h: int, taken: list[tuple[int, int, int, int]]
) -> tuple[int, int, int, int]:
    """The first corner (inside top-left, outside above, inside bottom-right, outside below) free of other tags."""
    x1, y1, x2, y2 = box
    spots = [(x1, y1), (x1, y1 - th), (x2 - tw, y2 - th), (x1, y2), (x2 - tw, y1)]
    candidates = []
    for x, y in spots:
        x, y = min(max(x, 0), max(0, w - tw)), min(max(y, 0), max(0, h - th))
        candidates.append((x, y, x + tw, y + th))
    for tag in candidates:
        if all(_overlap(tag, other) == 0 for other in taken):
            return tag
    return candidates[0]
