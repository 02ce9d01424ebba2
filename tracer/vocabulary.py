"""The canonical vocabulary and which library APIs map to which operation (one copy, in-kernel)."""

from __future__ import annotations

from pixelbox.kernel.recorder.ops import OpTable
from pixelbox.kernel.recorder.schema import ALL_OPS, OTHER_KINDS, VISUAL_OPS


def api_table() -> dict[str, str]:
    """Every API the recorder knows, by public dotted name, mapped to its default canonical op.

    Some APIs refine the op from their arguments at run time (``convert("L")`` is ``grayscale``,
    ``cv2.addWeighted`` with a negative weight is ``sharpen``...).
    """
    return {path: spec.op for path, spec in sorted(OpTable().specs.items())}


__all__ = ["ALL_OPS", "OTHER_KINDS", "VISUAL_OPS", "api_table"]
