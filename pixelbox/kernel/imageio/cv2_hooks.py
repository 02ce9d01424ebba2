"""OpenCV: ``imwrite``/``imwritemulti``/``imread`` redirected, ``imshow`` captured, GUI calls made harmless.

The kernel runs headless OpenCV, where ``imshow`` and ``waitKey`` raise "not implemented";
model code written for a desktop calls them anyway, so they become captures and no-ops.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from pixelbox.kernel.imageio.convert import imshow_array
from pixelbox.kernel.imageio.errors import ImageNotFoundError
from pixelbox.kernel.imageio.facts import pixel_count
from pixelbox.kernel.imageio.layer import IOLayer
from pixelbox.kernel.patching import Patcher

_NO_KEY = -1
_WINDOW_CALLS = ("namedWindow", "destroyWindow", "destroyAllWindows", "resizeWindow", "moveWindow", "setWindowTitle")
_KEY_CALLS = ("waitKey", "waitKeyEx", "pollKey")


class _WriteFailed(Exception):
    """cv2.imwrite returned False: nothing was written, so nothing is captured."""


def install(layer: IOLayer, patcher: Patcher) -> None:
    """Patch the cv2 module's image I/O and HighGUI functions once the model's code imports cv2.

    The pip wheels' ``cv2`` package imports its native extension under the same name from
    inside its own ``__init__`` (with ``sys.OpenCV_LOADER`` set), then copies the functions
    into the package. Only the module that finishes the import is patched, once: patching
    the native one would leave the copies patched after :meth:`Patcher.restore`.
    """
    patched: list[ModuleType] = []

    def patch(module: ModuleType) -> None:
        if not getattr(sys, "OpenCV_LOADER", False) and module not in patched:
            patched.append(module)
            _patch(layer, patcher, module)

    layer.on_import("cv2", patch, every_load=True)


def _patch(layer: IOLayer, patcher: Patcher, cv2: ModuleType) -> None:
    patcher.replace(cv2, "imwrite", lambda original: _imwrite(layer, original, "cv2.imwrite"))
    if hasattr(cv2, "imwritemulti"):  # a multi-page file is one artifact (its pages counted for the pixel cap)
        patcher.replace(cv2, "imwritemulti", lambda original: _imwrite(layer, original, "cv2.imwritemulti"))
    patcher.replace(cv2, "imread", lambda original: _imread(layer, original))
    patcher.replace(cv2, "imshow", lambda original: _imshow(layer, cv2, original))
    for name in _WINDOW_CALLS:
        patcher.replace(cv2, name, lambda original: _ignore())
    for name in _KEY_CALLS:
        patcher.replace(cv2, name, lambda original: _no_key())


def _ignore() -> Any:
    def ignore(*args: Any, **kwargs: Any) -> None:
        """Window management has no meaning without a display."""

    return ignore


def _no_key() -> Any:
    def no_key(*args: Any, **kwargs: Any) -> int:
        """No keyboard: every wait returns at once with "no key pressed"."""
        return _NO_KEY

    return no_key


def _pixels(image: Any) -> int | None:
    """Pixels of one image, or of every page of a sequence (``imwritemulti``)."""
    if isinstance(image, (list, tuple)):
        counts = [pixel_count(page) for page in image]
        return sum(c for c in counts if c is not None) if counts and None not in counts else None
    return pixel_count(image)


def _imwrite(layer: IOLayer, original: Any, api: str) -> Any:
    def imwrite(*args: Any, **kwargs: Any) -> Any:
        filename = args[0] if args else kwargs.get("filename")
        target = layer.save_target(filename)
        if target is None:
            return original(*args, **kwargs)
        asked, ext = target
        rest = {key: value for key, value in kwargs.items() if key != "filename"}
        image = args[1] if len(args) > 1 else rest.get("img")

        def write(path: str) -> bool:
            if not original(path, *args[1:], **rest):
                raise _WriteFailed
            return True

        try:
            result, _ = layer.capture(
                asked=asked, kind="saved", api=api, ext=ext, write=write, obj=image, pixels=_pixels(image)
            )
        except _WriteFailed:
            return False
        return result

    return imwrite


def _imread(layer: IOLayer, original: Any) -> Any:
    def imread(*args: Any, **kwargs: Any) -> Any:
        filename = args[0] if args else kwargs.get("filename")
        asked = layer.read_target(filename)
        if asked is None:
            return original(*args, **kwargs)
        try:
            resolution = layer.resolve_read(asked, "cv2.imread")
        except ImageNotFoundError as exc:
            print(f"cv2.imread returned None: {exc}", file=sys.stderr)
            return None
        rest = {key: value for key, value in kwargs.items() if key != "filename"}
        with layer.guard():
            array = original(resolution.path, *args[1:], **rest)
        return layer.loaded(array, resolution)

    return imread


def _imshow(layer: IOLayer, cv2: Any, original: Any) -> Any:
    def imshow(winname: str, mat: Any) -> None:
        if layer.busy:
            return original(winname, mat)
        shown = imshow_array(mat)

        def write(path: str) -> None:
            if not cv2.imwrite(path, shown):
                raise OSError(f"cv2.imshow: could not encode the image of shape {shown.shape}")

        layer.capture(
            asked=None, kind="shown", api="cv2.imshow", ext=".png", write=write, obj=mat, pixels=pixel_count(shown)
        )

    return imshow
