"""imageio (v2 and v3 APIs) and scikit-image: writes captured, reads resolved.

scikit-image writes and reads through imageio; the layer's re-entrancy guard makes those
inner calls run unpatched, so each image is captured or resolved exactly once.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from pixelbox.kernel.imageio.facts import pixel_count
from pixelbox.kernel.imageio.layer import IOLayer
from pixelbox.kernel.patching import Patcher

_PATH_KEYS = ("uri", "fname", "filename")
_IMAGE_KEYS = ("im", "image", "arr", "ims")


def install(layer: IOLayer, patcher: Patcher) -> None:
    """Patch imageio and skimage.io when they are (or once they get) imported."""

    def patch_imageio(module: ModuleType) -> None:
        from imageio import v2, v3

        for owner, prefix in ((module, "imageio"), (v2, "imageio.v2")):
            for name in ("imwrite", "imsave", "mimwrite", "mimsave"):
                _patch_write(layer, patcher, owner, name, f"{prefix}.{name}")
            for name in ("imread", "mimread"):
                _patch_read(layer, patcher, owner, name, f"{prefix}.{name}")
        _patch_write(layer, patcher, v3, "imwrite", "imageio.v3.imwrite")
        _patch_read(layer, patcher, v3, "imread", "imageio.v3.imread")

    def patch_skimage(module: ModuleType) -> None:
        _patch_write(layer, patcher, module, "imsave", "skimage.io.imsave")
        _patch_read(layer, patcher, module, "imread", "skimage.io.imread")

    layer.on_import("imageio", patch_imageio)
    layer.on_import("skimage.io", patch_skimage)


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], position: int, keys: tuple[str, ...]) -> Any:
    if len(args) > position:
        return args[position]
    return next((kwargs[key] for key in keys if key in kwargs), None)


def _with_path(args: tuple[Any, ...], kwargs: dict[str, Any], path: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The same call arguments with the file argument (first positional or keyword) replaced."""
    if args:
        return (path, *args[1:]), kwargs
    key = next(key for key in _PATH_KEYS if key in kwargs)
    return args, {**kwargs, key: path}


def _patch_write(layer: IOLayer, patcher: Patcher, owner: Any, name: str, api: str) -> None:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def write_call(*args: Any, **kwargs: Any) -> Any:
            fmt = kwargs.get("format") or kwargs.get("extension")
            target = layer.save_target(_argument(args, kwargs, 0, _PATH_KEYS), fmt)
            if target is None:
                return original(*args, **kwargs)
            asked, ext = target
            image = _argument(args, kwargs, 1, _IMAGE_KEYS)

            def write(path: str) -> Any:
                new_args, new_kwargs = _with_path(args, kwargs, path)
                return original(*new_args, **new_kwargs)

            result, _ = layer.capture(
                asked=asked, kind="saved", api=api, ext=ext, write=write, obj=image, pixels=pixel_count(image)
            )
            return result

        return write_call

    patcher.replace(owner, name, make)


def _patch_read(layer: IOLayer, patcher: Patcher, owner: Any, name: str, api: str) -> None:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def read_call(*args: Any, **kwargs: Any) -> Any:
            asked = layer.read_target(_argument(args, kwargs, 0, _PATH_KEYS))
            if asked is None:
                return original(*args, **kwargs)
            resolution = layer.resolve_read(asked, api)
            new_args, new_kwargs = _with_path(args, kwargs, resolution.path)
            with layer.guard():
                result = original(*new_args, **new_kwargs)
            return layer.loaded(result, resolution)

        return read_call

    patcher.replace(owner, name, make)
