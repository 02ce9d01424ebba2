"""Atomic tool calls inside the kernel: validate, fetch the image by index, run the canonical tool, capture.

The host sends the uninstrumented cell ``__pbx__.tool(NAME, ARGUMENTS_JSON)``
(``Sandbox.call_tool``); :meth:`Recorder.tool` delegates here once :func:`install` (a layer
installed with the recorder, see :mod:`pixelbox.kernel.plugins`) has registered :func:`run_tool`.
One call:

1. checks the arguments against the published schema (:mod:`pixelbox.contract.tools`);
2. fetches image ``image_index``: the task inputs first (0, 1, ...), then every artifact captured
   so far, by the index the I/O layer gave it;
3. runs the canonical implementation (:mod:`pixelbox.kernel.atomic.canonical`), which records
   the same canonical event code mode would, with api ``pixelbox.tools.<name>`` and no source;
4. captures the result through the I/O layer as a new artifact (capture kind ``tool``), so it gets
   the next index and the profile's name, and the recorder links it to the event's output;
5. prints one summary line (the tool's answer to the model).

A bad call raises :class:`ToolError` saying what was wrong and what is valid; the kernel's state
is untouched, so the episode simply goes on. Only stdlib, numpy, PIL and cv2 are used.
"""

from __future__ import annotations

from typing import Any

from pixelbox.contract.tools import TOOL_SPECS, ToolError, parse_call
from pixelbox.contract.wire import ADD_GENERATED, ADD_IMAGE, RAW_ARGUMENTS_KEY, READ_TEXT
from pixelbox.contract.wire import TOOL_API_PREFIX as API_PREFIX
from pixelbox.kernel.atomic.images import (
    ImageRef,
    available_images,
    capture,
    find_image,
    io_layer,
    load,
    take_upload,
)

__all__ = [
    "ADD_GENERATED",
    "ADD_IMAGE",
    "RAW_ARGUMENTS_KEY",
    "READ_TEXT",
    "TOOL_SPECS",
    "ImageRef",
    "ToolError",
    "available_images",
    "find_image",
    "install",
    "run_tool",
]

INTERNAL_OPS = {READ_TEXT: "ocr", ADD_GENERATED: "generate"}
"""The ops the kernel's internal tools record (no library API records them)."""


def install(shell: Any, section: dict[str, Any] | None = None) -> None:
    """Serve atomic tools through the kernel's recorder (``__pbx__.tool``)."""
    from pixelbox.kernel.recorder import current

    current().serve_tools(run_tool)


def run_tool(name: str, arguments_json: str) -> None:
    """Run one atomic tool call; prints the summary line, raises :class:`ToolError` for a bad call."""
    if name == ADD_IMAGE:
        _add_image(arguments_json)
        return
    if name == ADD_GENERATED:
        from pixelbox.kernel.atomic.generated import add_generated

        add_generated(_unwrap(arguments_json))
        return
    if name == READ_TEXT:
        from pixelbox.kernel.atomic.ocr import read_text

        read_text(_unwrap(arguments_json))
        return
    call = parse_call(name, _unwrap(arguments_json))
    layer = io_layer()
    source = find_image(layer, call.image_index)
    image = load(layer, source)
    result = _apply(call.name, image, call.kwargs)
    record = capture(layer, result, "tool", API_PREFIX + call.name)
    note = f" [{call.label}]" if call.label else ""
    print(
        f"{call.name}{note}: image {source.index} -> image {record['index']} "
        f"({record['name']}, {record['width']}x{record['height']})"
    )


# -- steps ---------------------------------------------------------------------------------------


def _unwrap(arguments_json: str) -> str:
    """The model's own text when the host wrapped unparseable arguments (see :data:`RAW_ARGUMENTS_KEY`)."""
    if isinstance(arguments_json, str) and RAW_ARGUMENTS_KEY in arguments_json:
        import json

        try:
            value = json.loads(arguments_json)
        except ValueError:
            return arguments_json
        if isinstance(value, dict) and set(value) == {RAW_ARGUMENTS_KEY} and isinstance(value[RAW_ARGUMENTS_KEY], str):
            return str(value[RAW_ARGUMENTS_KEY])
    return arguments_json


def _apply(name: str, image: Any, kwargs: dict[str, Any]) -> Any:
    from pixelbox.kernel.atomic import canonical

    try:
        return canonical.TOOLS[name](image, **kwargs)
    except canonical.ToolError as exc:
        raise ToolError(f"{name}: {exc}") from None


def _add_image(arguments_json: str) -> None:
    """Capture an image file the host put in the workspace (a download) as the next image; delete the file."""
    import json

    try:
        arguments = json.loads(arguments_json)
        path, url = arguments["path"], arguments.get("url")
    except (TypeError, ValueError, KeyError):
        raise ToolError('add_image takes {"path": FILE_IN_WORKSPACE, "url": SOURCE}') from None
    layer = io_layer()
    image = take_upload(layer, str(path), ADD_IMAGE)
    record = capture(layer, image, "download", API_PREFIX + "download_image")
    source = f" from {url}" if url else ""
    print(
        f"downloaded image{source} -> image {record['index']} ({record['name']}, {record['width']}x{record['height']})"
    )
