"""The four web tools as the model calls them (function-calling schemas), and running such a call.

``google_lens_search`` takes an ``image_index`` (the host reads that image from the episode's
:class:`ImageBook` and the web layer uploads it to the image host) or a public ``image_url``;
without either it searches the latest image. ``download_image`` fetches on the host; the bytes are
uploaded into the sandbox's workspace and the kernel captures them as the next image (capture kind
``download``), so downloaded images share the index sequence of every other image.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pixelbox.harness.tools.atomic import add_image
from pixelbox.harness.web import WEB_TOOLS, ToolResult, WebTools
from pixelbox.runtime.execution import Execution

if TYPE_CHECKING:
    from pixelbox.harness.episode.imagebook import ImageBook

DOWNLOAD_DIR = ".pixelbox-downloads"
"""Workspace directory where downloaded bytes wait for the kernel to capture them (emptied at once)."""
_FORMAT_EXT = {"PNG": ".png", "JPEG": ".jpg", "GIF": ".gif", "WEBP": ".webp", "BMP": ".bmp", "TIFF": ".tif"}


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


_LOCALE = {
    "gl": {"type": "string", "description": "Country code, e.g. us.", "default": "us"},
    "hl": {"type": "string", "description": "Language code, e.g. en.", "default": "en"},
}

WEB_SCHEMAS: dict[str, dict[str, Any]] = {
    "google_search": _fn(
        "google_search",
        "Search the web; returns titles, links and snippets.",
        {"query": {"type": "string", "description": "What to search for."}, **_LOCALE},
        ["query"],
    ),
    "google_lens_search": _fn(
        "google_lens_search",
        "Reverse image search: find web pages showing one of the images (default: the latest image).",
        {
            "image_index": {"type": "integer", "minimum": 0, "description": "Which image to search for."},
            "image_url": {"type": "string", "description": "A public http(s) image URL instead of an index."},
            **_LOCALE,
        },
        [],
    ),
    "fetch_webpage": _fn(
        "fetch_webpage",
        "Read a web page as plain text.",
        {
            "url": {"type": "string", "description": "The page's http(s) URL."},
            "max_chars": {"type": "integer", "minimum": 1, "description": "Characters to return.", "default": 12000},
        },
        ["url"],
    ),
    "download_image": _fn(
        "download_image",
        "Download an image from the web; it becomes the next image index and is shown to you.",
        {"url": {"type": "string", "description": "The image's http(s) URL."}},
        ["url"],
    ),
}


def web_schemas(names: tuple[str, ...] = WEB_TOOLS) -> list[dict[str, Any]]:
    """Schemas of the given web tools, in order."""
    return [WEB_SCHEMAS[name] for name in names]


@dataclass
class WebOutcome:
    """A web call's result, the kernel execution that added a downloaded image, and the text for the model."""

    result: ToolResult
    text: str
    execution: Execution | None = None
    added: list[Any] = field(default_factory=list)


def run_web_tool(
    web: WebTools, name: str, arguments: dict[str, Any], *, book: ImageBook, sandbox: Any, timeout: float
) -> WebOutcome:
    """Run one web tool call; failures are ``ok=False`` results, never exceptions."""
    result = _lens(web, arguments, book) if name == "google_lens_search" else web.call(name, arguments)
    if name != "download_image" or not result.ok or result.blob is None:
        return WebOutcome(result, result.text)
    return _add_download(result, sandbox, book, timeout)


def _lens(web: WebTools, arguments: dict[str, Any], book: ImageBook) -> ToolResult:
    known = {"image_index", "image_url", "gl", "hl"}
    unknown = sorted(set(arguments) - known)
    if unknown:
        return ToolResult.failure("google_lens_search", arguments, f"unknown argument(s) {', '.join(unknown)}")
    gl, hl = str(arguments.get("gl") or "us"), str(arguments.get("hl") or "en")
    url = arguments.get("image_url")
    if url:
        return web.google_lens_search(str(url), gl, hl)
    index = arguments.get("image_index")
    latest = book.latest
    if index is None and latest is not None:
        index = latest.index
    if isinstance(index, bool) or not isinstance(index, int) or book.get(index) is None:
        have = ", ".join(str(i) for i in sorted(book.entries))
        message = f"image_index must be the index of an existing image ({have}), got {json.dumps(index)}"
        return ToolResult.failure("google_lens_search", arguments, message)
    data = book.read(index)
    assert data is not None
    result = web.google_lens_search(data, gl, hl)
    return replace(result, args={**result.args, "image_index": index})


def _add_download(result: ToolResult, sandbox: Any, book: ImageBook, timeout: float) -> WebOutcome:
    assert result.blob is not None
    meta = result.data or {}
    ext = _FORMAT_EXT.get(str(meta.get("format", "")).upper(), ".img")
    name = f"{DOWNLOAD_DIR}/{(meta.get('sha256') or 'download')[:16]}-{len(book.entries)}{ext}"
    kernel_path = sandbox.upload(result.blob, name)
    execution = add_image(sandbox, kernel_path, str(result.args.get("url")), timeout=timeout)
    added = book.ingest(sandbox, execution.artifacts, "download", execution=execution)
    if execution.status != "ok":
        detail = execution.error.evalue if execution.error is not None else execution.status
        return WebOutcome(result, f"{result.text}\nError: the image could not be added: {detail}", execution)
    text = result.text + "\n" + (execution.stdout.strip() or f"added as {os.path.basename(kernel_path)}")
    return WebOutcome(result, text, execution, added)
