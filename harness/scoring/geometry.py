"""Boxes in 0-1000 root coordinates: overlap measures and where an event or image sits in its root."""

from __future__ import annotations

from pixelbox.tracer.events import Event
from pixelbox.tracer.lineage import chain_for, root_of

from .view import Box

FULL: Box = (0.0, 0.0, 1000.0, 1000.0)


def area(box: Box) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def intersection(a: Box, b: Box) -> float:
    return area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))


def iou(a: Box, b: Box) -> float:
    inter = intersection(a, b)
    union = area(a) + area(b) - inter
    return inter / union if union > 0 else 0.0


def coverage(region: Box, of: Box) -> float:
    """Fraction of ``of`` (the annotated box) that ``region`` covers."""
    return intersection(region, of) / area(of) if area(of) > 0 else 0.0


def image_region(events: list[Event], image_id: str, depth: int = 0) -> tuple[str, Box, bool]:
    """Root id, region of the root (0-1000) and approximate flag for an image id.

    The region is the last crop upstream of the image (crops carry their root box); an image
    with no crop upstream shows its whole root. A root that is an earlier artifact (``artifact:N``,
    an image the code read back from a file it saved, e.g. after a kernel restart) is followed to the
    region that artifact shows, and the boxes composed.
    """
    chain = chain_for(events, image_id)
    root = root_of(chain, image_id)
    approximate = any(bool(e.params.get("approximate")) for e in chain)
    region = FULL
    for event in reversed(chain):
        box = event.params.get("bbox_2d_root")
        if event.op == "crop" and box is not None:
            root, region = str(event.params.get("root") or root), _box(box)
            break
    if root.startswith("artifact:") and depth < MAX_ARTIFACT_HOPS:
        upstream = _artifact_region(events, root, depth)
        if upstream is not None:
            return upstream[0], _within(upstream[1], region), approximate or upstream[2]
    return root, region, approximate


MAX_ARTIFACT_HOPS = 20


def _artifact_region(events: list[Event], artifact: str, depth: int) -> tuple[str, Box, bool] | None:
    index = int(artifact.split(":", 1)[1])
    save = next(
        (e for e in events if isinstance(e.artifact, dict) and e.artifact.get("index") == index and e.inputs), None
    )
    return None if save is None else image_region(events, save.inputs[0], depth + 1)


def _within(outer: Box, inner: Box) -> Box:
    """``inner`` (0-1000 of an image showing ``outer`` of its root) in 0-1000 of that root."""
    width, height = (outer[2] - outer[0]) / 1000, (outer[3] - outer[1]) / 1000
    return (
        outer[0] + inner[0] * width,
        outer[1] + inner[1] * height,
        outer[0] + inner[2] * width,
        outer[1] + inner[3] * height,
    )


def event_region(events: list[Event], event: Event) -> tuple[str, Box, bool]:
    """Where an operation acted: a crop's own root box, otherwise the region its input shows."""
    if event.op == "crop" and event.params.get("bbox_2d_root") is not None:
        root = event.params.get("root")
        if root is None and event.inputs:
            root = image_region(events, event.inputs[0])[0]
        return str(root), _box(event.params["bbox_2d_root"]), bool(event.params.get("approximate"))
    if not event.inputs:
        return "", FULL, True
    return image_region(events, event.inputs[0])


def _box(raw: list[float] | tuple[float, ...]) -> Box:
    x1, y1, x2, y2 = (float(v) for v in raw)
    return (x1, y1, x2, y2)
