"""NumPy's and Pillow's types, bound the moment the library is imported instead of at kernel start.

Installing the recorder must not import NumPy or Pillow: under gVisor those imports take about
half a second, paid by every sandbox whether or not its code ever touches an image. Until a
library is loaded no value of its types can exist, so the recorder checks against :class:`Absent`
(a type nothing is an instance of) and the answers stay exact. An import hook rebinds the names
right after the library loads (by the agent's code or another layer), before control returns
to the importing code, and again after every reload (a reloaded ``PIL.Image`` has a new
``Image`` class).

Read the names through the module (``libs.ndarray``), never ``from libs import ndarray``: that
would copy the stand-in.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from pixelbox.kernel.patching import Patcher


class Absent:
    """Stands for a library type whose library is not loaded; no object is ever an instance."""

    __slots__ = ()

    def __new__(cls) -> Absent:
        raise TypeError("Absent stands for a library type that is not loaded; it has no instances")


ndarray: Any = Absent
"""``numpy.ndarray``."""
integer: Any = Absent
"""``numpy.integer`` (the abstract base of NumPy's integer scalars)."""
ufunc: Any = Absent
"""``numpy.ufunc`` (``np.add``, ``np.invert``...)."""
dispatcher: Any = Absent
"""The type of NumPy's ``__array_function__`` dispatching functions (``np.rot90``...)."""
pil_image: Any = Absent
"""``PIL.Image.Image``."""


def _bind_numpy(numpy: ModuleType) -> None:
    global ndarray, integer, ufunc, dispatcher
    ndarray, integer, ufunc = numpy.ndarray, numpy.integer, numpy.ufunc
    dispatcher = type(numpy.rot90)


def _bind_pillow(image_module: ModuleType) -> None:
    global pil_image
    pil_image = image_module.Image


_WATCHER = Patcher()
_WATCHER.when_imported("numpy", _bind_numpy, every_load=True)
_WATCHER.when_imported("PIL.Image", _bind_pillow, every_load=True)
