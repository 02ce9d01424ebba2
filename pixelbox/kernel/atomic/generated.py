"""Images made outside the kernel by an image-generation model, taken in as the next image with lineage.

Agent-X's ImageGenerator and ImageStylization run on the host (an OpenAI-compatible images endpoint);
the host uploads the result to the workspace and asks for it here through the trusted tool cell
(``__pbx__.tool("add_generated", {...})``, :data:`pixelbox.contract.wire.ADD_GENERATED`). One call
records a canonical ``generate`` event (the source image as its input when the model restyled one,
no geometry: the pixels are the model's), captures the image as the next artifact linked to that
event's output, deletes the uploaded file, and prints one summary line.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pixelbox.contract.tools import ToolError

USAGE = (
    'add_generated takes {"path": FILE_IN_WORKSPACE, "tool": NAME, "model": MODEL, "prompt": TEXT} '
    'and optionally "source_index": N (the image the model restyled)'
)


def add_generated(arguments_json: str) -> None:
    """Take the generated image file in as the next image, recorded as a ``generate`` event."""
    from pixelbox.contract.wire import TOOL_API_PREFIX
    from pixelbox.kernel.atomic.images import capture, find_image, io_layer, load

    arguments = _arguments(arguments_json)
    layer = io_layer()
    sources = []
    if arguments.get("source_index") is not None:
        sources.append(load(layer, find_image(layer, arguments["source_index"])))
    t0 = time.perf_counter()
    image = _read_upload(layer, str(arguments["path"]))
    api = TOOL_API_PREFIX + str(arguments["tool"])
    params: dict[str, Any] = {key: arguments[key] for key in ("tool", "model", "prompt") if key in arguments}
    _record(sources, image, params, api, t0)
    record = capture(layer, image, "tool", api)
    source = f" from image {arguments['source_index']}" if sources else ""
    print(
        f"{arguments['tool']}{source} -> image {record['index']} "
        f"({record['name']}, {record['width']}x{record['height']})"
    )


def _arguments(arguments_json: str) -> dict[str, Any]:
    try:
        arguments = json.loads(arguments_json)
    except (TypeError, ValueError):
        arguments = None
    if not isinstance(arguments, dict) or not {"path", "tool"} <= set(arguments):
        raise ToolError(USAGE)
    unknown = set(arguments) - {"path", "tool", "model", "prompt", "source_index"}
    index = arguments.get("source_index")
    if unknown or (index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0)):
        raise ToolError(USAGE)
    return arguments


def _read_upload(layer: Any, path: str) -> Any:
    """The uploaded image in a mode every tool handles (its file deleted)."""
    from pixelbox.kernel.atomic.images import take_upload

    image = take_upload(layer, path, "add_generated")
    return image if image.mode in ("RGB", "RGBA", "L") else image.convert("RGBA" if "A" in image.getbands() else "RGB")


def _record(sources: list[Any], image: Any, params: dict[str, Any], api: str, t0: float) -> None:
    from pixelbox.kernel.recorder import current
    from pixelbox.kernel.recorder.ops.base import Observed

    observed = Observed("generate", sources, image, params, geometry=None)
    current()._observe(lambda: observed, api, None, None, t0)
