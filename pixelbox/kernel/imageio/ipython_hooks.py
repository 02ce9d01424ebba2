"""IPython display: images passed to ``display()`` or left as a cell's last expression.

IPython renders both through ``shell.display_formatter.format``; the layer wraps that one
call. A PIL image, a matplotlib figure, an ``IPython.display.Image`` or (for ``display()``
only) an image-shaped array is written to a PNG artifact instead of being base64-encoded
into the output stream; the formatter then returns nothing, so no image bytes ever travel
through the kernel channel. The displayhook wrapper only tells the two cases apart: a bare
array as last expression keeps its text repr, as in any notebook.
"""

from __future__ import annotations

import sys
from typing import Any

from pixelbox.kernel.imageio.convert import array_to_image, is_pil_image, looks_like_image
from pixelbox.kernel.imageio.layer import IOLayer
from pixelbox.kernel.imageio.mpl_hooks import FigureCapture
from pixelbox.kernel.imageio.pil_hooks import capture_shown
from pixelbox.kernel.patching import Patcher

_DISPLAY = "IPython.display.display"
_LAST = "IPython displayhook (last expression)"


class DisplayCapture:
    """Decides whether an object shown through IPython is an image and captures it."""

    def __init__(self, layer: IOLayer, figures: FigureCapture) -> None:
        self.layer = layer
        self.figures = figures
        self.in_displayhook = False

    def capture(self, obj: Any) -> bool:
        """Capture ``obj`` if it is an image; False leaves it to IPython's usual formatting."""
        kind, api = ("last_expression", _LAST) if self.in_displayhook else ("displayed", _DISPLAY)
        if is_pil_image(obj):
            capture_shown(self.layer, obj, kind, api)
            return True
        if _is_figure(obj):
            self.figures.capture(obj, kind, api)
            return True
        if kind == "displayed" and looks_like_image(obj):
            capture_shown(self.layer, array_to_image(obj), kind, api)
            return True
        return self._capture_ipython_image(obj, kind, api)

    def _capture_ipython_image(self, obj: Any, kind: str, api: str) -> bool:
        from IPython.display import Image as IPythonImage

        if not isinstance(obj, IPythonImage) or not isinstance(obj.data, bytes) or obj.embed is False:
            return False
        ext = ".jpg" if obj.format == "jpeg" else ".png"
        data = obj.data

        def write(path: str) -> None:
            with open(path, "wb") as handle:
                handle.write(data)

        self.layer.capture(asked=None, kind=kind, api=api, ext=ext, write=write, obj=obj)
        return True


def install(layer: IOLayer, patcher: Patcher, figures: FigureCapture) -> DisplayCapture:
    """Wrap the shell's display formatter and displayhook (instance attributes, removable)."""
    displays = DisplayCapture(layer, figures)
    shell = layer.shell
    patcher.replace(shell.display_formatter, "format", lambda original: _format(layer, displays, original))
    patcher.replace(shell.displayhook, "compute_format_data", lambda original: _hook(displays, original))
    return displays


def _format(layer: IOLayer, displays: DisplayCapture, original: Any) -> Any:
    def format(obj: Any, include: Any = None, exclude: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        if layer.busy:
            return original(obj, include=include, exclude=exclude)
        try:
            captured = displays.capture(obj)
        except Exception as exc:
            if not displays.in_displayhook:
                raise
            layer.notice(f"the last expression was not captured as an image: {exc}")
            return {"text/plain": f"<image not captured: {exc}>"}, {}
        if captured:
            return {}, {}
        return original(obj, include=include, exclude=exclude)

    return format


def _hook(displays: DisplayCapture, original: Any) -> Any:
    def compute_format_data(result: Any) -> Any:
        displays.in_displayhook = True
        try:
            return original(result)
        finally:
            displays.in_displayhook = False

    return compute_format_data


def _is_figure(obj: Any) -> bool:
    module = sys.modules.get("matplotlib.figure")
    return module is not None and isinstance(obj, module.Figure)
