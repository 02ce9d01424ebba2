"""PIL: ``Image.Image.save`` and ``Image.open`` redirected, ``Image.show`` captured instead of a viewer.

The patches land when the agent's code first imports ``PIL.Image`` (and ``PIL.ImageShow``),
not at kernel start: no image can be saved, opened or shown before that import.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pixelbox.kernel.imageio.convert import png_ready
from pixelbox.kernel.imageio.hashing import HashingFile
from pixelbox.kernel.imageio.layer import IOLayer
from pixelbox.kernel.patching import Patcher

if TYPE_CHECKING:
    from PIL import Image


def install(layer: IOLayer, patcher: Patcher) -> None:
    """Patch PIL's save, open and show entry points once PIL is imported (again after a reload)."""
    patched: list[type] = []

    def patch_image(module: ModuleType) -> None:
        if module.Image not in patched:  # a reload makes a new class and a new ``open``
            patched.append(module.Image)
            patcher.replace(module.Image, "save", lambda original: _save(layer, original))
            patcher.replace(module, "open", lambda original: _open(layer, original))
            patcher.replace(module.Image, "show", lambda original: _show(layer, original, "PIL.Image.Image.show"))

    def patch_show(module: ModuleType) -> None:
        patcher.replace(module, "show", lambda original: _show(layer, original, "PIL.ImageShow.show"))

    layer.on_import("PIL.Image", patch_image, every_load=True)
    layer.on_import("PIL.ImageShow", patch_show)


HASHED_FORMATS = frozenset({"PNG", "JPEG"})
"""Formats PIL writes front to back in one pass: their captures are hashed as they are written."""


class HashedWrite:
    """A capture's writer that lets PIL write PNG or JPEG into a :class:`HashingFile` (other formats,
    and multi-frame or appending saves, to the path as before); :meth:`digest` is what it hashed."""

    def __init__(self, save: Any, image: Image.Image, fmt: str | None, params: dict[str, Any]) -> None:
        self.save, self.image, self.fmt, self.params = save, image, fmt, params
        self.sha256: str | None = None

    def __call__(self, path: str) -> None:
        fmt = self.fmt or _format_of(path)
        if fmt is None or fmt.upper() not in HASHED_FORMATS or self.params.get("save_all") or self.params.get("append"):
            self.save(self.image, path, self.fmt, **self.params)
            return
        out = HashingFile(path)
        try:
            self.save(self.image, out, fmt, **self.params)
        finally:
            out.close()
        self.sha256 = out.sha256

    def digest(self) -> str | None:
        return self.sha256


def _format_of(path: str) -> str | None:
    """The format PIL would pick for ``path`` from its extension (None if it knows none)."""
    from PIL import Image

    return Image.registered_extensions().get(os.path.splitext(path)[1].lower())


def capture_shown(layer: IOLayer, image: Image.Image, kind: str, api: str) -> dict[str, Any]:
    """Write a PIL image that was shown or displayed as a new PNG artifact."""
    from PIL import Image

    write = HashedWrite(Image.Image.save, png_ready(image), "PNG", {})
    _, record = layer.capture(
        asked=None,
        kind=kind,
        api=api,
        ext=".png",
        write=write,
        obj=image,
        pixels=image.width * image.height,
        digest=write.digest,
    )
    return record


def _save(layer: IOLayer, original: Any) -> Any:
    def save(self: Image.Image, fp: Any, format: str | None = None, **params: Any) -> None:
        target = layer.save_target(fp, format)
        if target is None:
            return original(self, fp, format, **params)
        asked, ext = target
        write = HashedWrite(original, self, format, params)
        layer.capture(
            asked=asked,
            kind="saved",
            api="PIL.Image.Image.save",
            ext=ext,
            write=write,
            obj=self,
            pixels=self.width * self.height,
            digest=write.digest,
        )
        return None

    return save


def _open(layer: IOLayer, original: Any) -> Any:
    def open_image(fp: Any, mode: str = "r", formats: Any = None) -> Image.Image:
        asked = layer.read_target(fp)
        if asked is None:
            return original(fp, mode, formats)
        resolution = layer.resolve_read(asked, "PIL.Image.open")
        with layer.guard():
            image = original(resolution.path, mode, formats)
        return layer.loaded(image, resolution)

    return open_image


def _show(layer: IOLayer, original: Any, api: str) -> Any:
    def show(image: Image.Image, title: str | None = None, **options: Any) -> Any:
        if layer.busy:
            return original(image, title, **options)
        capture_shown(layer, image, "shown", api)
        return True if api == "PIL.ImageShow.show" else None

    return show
