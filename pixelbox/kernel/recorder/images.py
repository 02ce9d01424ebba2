"""Which values are images, how big they are, and the weak registry that gives them ids.

An id names image *content*: ``img:N`` for values produced or first seen by the agent's code,
``input:K`` for the task's inputs. A value changed in place (``thumbnail``, drawing, ``paste``)
gets a fresh id so that events before and after the change stay distinguishable.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pixelbox.contract.geometry import Lineage
from pixelbox.kernel.recorder import libs

if TYPE_CHECKING:
    import numpy as np


def is_image(obj: Any) -> bool:
    """PIL images, and arrays shaped like one (H x W or H x W x C with C <= 4)."""
    if isinstance(obj, libs.pil_image):
        return True
    if isinstance(obj, libs.ndarray):
        shape = obj.shape
        if obj.dtype.kind not in "biufc":
            return False
        return (len(shape) == 2 or (len(shape) == 3 and 1 <= shape[2] <= 4)) and shape[0] > 0 and shape[1] > 0
    return False


def size_of(obj: Any) -> tuple[int, int]:
    """(width, height) of an image value."""
    if isinstance(obj, libs.pil_image):
        return obj.size
    shape = obj.shape
    return int(shape[1]), int(shape[0])


class Registry:
    """Maps live image objects to ids (weakly) and ids to lineage."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[weakref.ref[Any], str]] = {}
        self._counter = 0
        self.lineage: dict[str, Lineage] = {}
        self.sizes: dict[str, tuple[int, int]] = {}

    def label(self, obj: Any) -> str | None:
        """The id of ``obj`` if it has one."""
        entry = self._by_id.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return None

    def ensure(self, obj: Any) -> str:
        """The id of ``obj``, giving it a fresh one (as its own root) if it has none."""
        label = self.label(obj)
        if label is None:
            label = self.fresh(obj)
            self.lineage[label] = Lineage(label, size_of(obj))
        return label

    def fresh(self, obj: Any) -> str:
        """Give ``obj`` a new ``img:N`` id (its lineage is for the caller to set).

        ``obj`` may be a stand-in with only a ``size`` (an intermediate that never existed).
        """
        label = f"img:{self._counter}"
        self._counter += 1
        if is_image(obj):
            self.bind(obj, label)
        else:
            self.sizes[label] = tuple(obj.size)
        return label

    def labelled_arrays(self) -> Iterator[tuple[np.ndarray, str]]:
        """The live NumPy arrays that have an id, with it."""
        for ref, label in list(self._by_id.values()):
            obj: Any = ref()
            if type(obj) is libs.ndarray:
                yield obj, label

    def bind(self, obj: Any, label: str) -> None:
        key = id(obj)

        def forget(_ref: weakref.ref[Any], key: int = key, label: str = label) -> None:
            entry = self._by_id.get(key)
            if entry is not None and entry[1] == label:
                del self._by_id[key]

        try:
            ref = weakref.ref(obj, forget)
        except TypeError:
            return
        self._by_id[key] = (ref, label)
        self.sizes[label] = size_of(obj)

    def root(self, obj: Any, label: str) -> None:
        """Make ``obj`` a root image named ``label`` (e.g. ``input:0``)."""
        self.bind(obj, label)
        self.lineage[label] = Lineage(label, size_of(obj))
