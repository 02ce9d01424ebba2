"""matplotlib: savefig/imsave redirected, imread resolved, show captured, figures closed.

The kernel uses the non-interactive Agg backend, so nothing is ever rendered to the notebook
as base64: a shown figure is written to a PNG artifact by the kernel and then closed. At the
end of each cell, figures still open are captured too when the profile follows notebook
semantics (``capture_open_figures``), unless the cell already saved or showed them, and
every figure is then closed so none leaks into the next cell.
"""

from __future__ import annotations

import os
import sys
import weakref
from types import ModuleType
from typing import Any

from pixelbox.kernel.imageio.facts import pixel_count
from pixelbox.kernel.imageio.layer import IOLayer
from pixelbox.kernel.imageio.source import CellSite
from pixelbox.kernel.patching import Patcher

_BACKEND = "Agg"


class FigureCapture:
    """Captures figures for one layer and remembers which ones this cell already produced."""

    def __init__(self, layer: IOLayer) -> None:
        self.layer = layer
        self.done: weakref.WeakSet[Any] = weakref.WeakSet()

    def capture(self, figure: Any, kind: str, api: str, site: CellSite | None = None) -> dict[str, Any]:
        """Render ``figure`` to a new PNG artifact and close it."""

        def write(path: str) -> None:
            figure.savefig(path, format="png")

        try:
            _, record = self.layer.capture(
                asked=None,
                kind=kind,
                api=api,
                ext=".png",
                write=write,
                obj=figure,
                pixels=pixel_count(figure),
                site=site,
            )
        finally:
            self.close(figure)
        return record

    def close(self, figure: Any) -> None:
        """Close through pyplot when it manages the figure (an OO-API figure needs nothing)."""
        self.done.add(figure)
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is not None:
            pyplot.close(figure)

    def end_of_cell(self, site: CellSite) -> None:
        """Capture still-open figures the cell never saved or showed (if enabled), then close all."""
        pyplot = sys.modules.get("matplotlib.pyplot")
        try:
            if pyplot is None:
                return
            for number in pyplot.get_fignums():
                figure = pyplot.figure(number)
                if self.layer.capture_open_figures and figure not in self.done:
                    self.capture(figure, "shown", "matplotlib (figure open at end of cell)", site)
            pyplot.close("all")
        finally:
            self.done = weakref.WeakSet()


def install(layer: IOLayer, patcher: Patcher) -> FigureCapture:
    """Select the Agg backend and patch matplotlib modules when (or if already) imported."""
    figures = FigureCapture(layer)
    layer.cell_end_callbacks.append(figures.end_of_cell)
    _select_backend(layer)
    layer.on_import("matplotlib.figure", lambda module: _patch_figure(layer, patcher, figures, module))
    layer.on_import("matplotlib.image", lambda module: _patch_image(layer, patcher, module))
    layer.on_import("matplotlib.pyplot", lambda module: _patch_pyplot(patcher, figures, module))
    return figures


def _select_backend(layer: IOLayer) -> None:
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is not None:
        matplotlib.use(_BACKEND, force=True)
        return
    layer.remember_env("MPLBACKEND")
    os.environ["MPLBACKEND"] = _BACKEND


def _patch_figure(layer: IOLayer, patcher: Patcher, figures: FigureCapture, module: ModuleType) -> None:
    figure_class = module.Figure

    def make_savefig(original: Any) -> Any:
        def savefig(self: Any, fname: Any, *args: Any, **kwargs: Any) -> Any:
            target = layer.save_target(fname, kwargs.get("format"))
            if target is None:
                return original(self, fname, *args, **kwargs)
            asked, ext = target

            def write(path: str) -> Any:
                return original(self, path, *args, **kwargs)

            result, _ = layer.capture(
                asked=asked, kind="saved", api="matplotlib.figure.Figure.savefig", ext=ext, write=write, obj=self
            )
            figures.done.add(self)
            return result

        return savefig

    def make_show(original: Any) -> Any:
        def show(self: Any, warn: bool = True) -> None:
            if layer.busy:
                return original(self, warn)
            figures.capture(self, "shown", "matplotlib.figure.Figure.show")
            return None

        return show

    patcher.replace(figure_class, "savefig", make_savefig)
    patcher.replace(figure_class, "show", make_show)


def _patch_image(layer: IOLayer, patcher: Patcher, module: ModuleType) -> None:
    def make_imsave(original: Any) -> Any:
        def imsave(fname: Any, arr: Any, **kwargs: Any) -> None:
            target = layer.save_target(fname, kwargs.get("format"))
            if target is None:
                return original(fname, arr, **kwargs)
            asked, ext = target
            layer.capture(
                asked=asked,
                kind="saved",
                api="matplotlib.image.imsave",
                ext=ext,
                write=lambda path: original(path, arr, **kwargs),
                obj=arr,
                pixels=pixel_count(arr),
            )
            return None

        return imsave

    def make_imread(original: Any) -> Any:
        def imread(fname: Any, format: str | None = None) -> Any:
            asked = layer.read_target(fname)
            if asked is None:
                return original(fname, format)
            resolution = layer.resolve_read(asked, "matplotlib.image.imread")
            with layer.guard():
                array = original(resolution.path, format)
            return layer.loaded(array, resolution)

        return imread

    patcher.replace(module, "imsave", make_imsave)
    patcher.replace(module, "imread", make_imread)


def _patch_pyplot(patcher: Patcher, figures: FigureCapture, module: ModuleType) -> None:
    def make_show(original: Any) -> Any:
        def show(*args: Any, **kwargs: Any) -> None:
            if figures.layer.busy:
                return original(*args, **kwargs)
            numbers = list(module.get_fignums())
            try:
                for number in numbers:
                    figures.capture(module.figure(number), "shown", "matplotlib.pyplot.show")
            finally:
                for number in numbers:
                    module.close(number)
            return None

        return show

    patcher.replace(module, "show", make_show)
