"""Bridge to the in-kernel recorder, so traces link inputs and artifacts to image objects.

The recorder is optional: when its package is absent or not installed in this kernel, the
I/O layer works exactly the same and lineage is simply not recorded.
"""

from __future__ import annotations

from typing import Any


def _recorder() -> Any:
    try:
        from pixelbox.kernel import recorder
    except ImportError:
        return None
    current = getattr(recorder, "current", None)
    return current() if callable(current) else None


def register_root(obj: Any, key: str) -> None:
    """Tell the recorder that ``obj`` is the image known as ``key`` (``input:0``, ``artifact:3``)."""
    active = _recorder()
    if active is not None:
        active.register_root(obj, key)


def link_artifact(obj_or_path: Any, record: dict[str, Any]) -> None:
    """Tell the recorder that ``obj_or_path`` became the artifact described by ``record``."""
    active = _recorder()
    if active is not None:
        active.link_artifact(obj_or_path, record)
