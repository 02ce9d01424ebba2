"""``pixelbox mcp``: one sandbox served over the Model Context Protocol (stdio, or streamable HTTP on loopback).

The server holds one :class:`~pixelbox.runtime.sandbox.Sandbox` for its whole life (every client of
an HTTP server shares it: state persists across calls, as in a notebook). Its tools:

- ``run_code``: run Python in the kernel; the result as text (status, output, error, the image
  operations that executed, the artifacts captured) followed by each captured image as MCP image
  content;
- ``upload_image``: put a base64 image into the workspace (checked to be an image first);
- ``list_artifacts`` / ``get_artifact``: every image captured so far, and one of them as image content;
- ``get_operations``: the executed operations (tracer events) recorded so far, from a sequence number.

Needs the ``mcp`` extra (``pip install 'pixelbox[mcp]'``). Nothing but the protocol is written to
standard output in stdio mode.
"""

from __future__ import annotations

import base64
import binascii
import io
import ipaddress
import socket
import sys
import threading
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent

from pixelbox import __version__
from pixelbox.plugins.render import Image, artifact_images, field, result_text
from pixelbox.runtime.errors import OptionsError, WorkspacePathError
from pixelbox.runtime.sandbox import Sandbox

MAX_UPLOAD_BYTES = 64 * 1024**2
"""Largest image ``upload_image`` accepts (decoded)."""
MAX_OPERATIONS = 1000
"""Most operations one ``get_operations`` call returns (page with ``since``)."""
INSTRUCTIONS = (
    "A sandboxed, stateful Python kernel (PIL, OpenCV, NumPy, SciPy, scikit-image, matplotlib; no network). "
    "run_code runs a cell and returns its output and the images it saved or showed; variables persist. "
    "upload_image puts an image into the working directory; get_operations lists the image operations that ran."
)


def check_loopback(host: str) -> None:
    """Refuse to serve HTTP anywhere but on loopback: the server runs code for whoever reaches it."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise OptionsError(
            f"pixelbox mcp serves HTTP on loopback only (127.0.0.1, ::1 or localhost), not {host!r}: "
            "anyone who reaches it can run code in the sandbox"
        )


class SandboxTools:
    """The MCP tools over one sandbox, and the record of the artifacts and operations it produced."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._lock = threading.Lock()
        self._artifacts: dict[int, Any] = {}
        self._events: list[dict[str, Any]] = []

    def run_code(self, code: str, timeout: float | None = None) -> list[TextContent | ImageContent]:
        """Run Python code as the next cell of a persistent Jupyter kernel (variables and files persist).

        Returns the status, output, error, the image operations that executed and the artifacts
        captured, then each image the cell saved or showed.
        """
        result = self.sandbox.execute(code, timeout=timeout)
        with self._lock:
            self._events.extend(dict(e) for e in result.events)
            self._artifacts.update((int(field(a, "index")), a) for a in result.artifacts)
        images = artifact_images(self.sandbox, list(result.artifacts))
        return [TextContent(type="text", text=result_text(result)), *map(_image_content, images)]

    def upload_image(self, name: str, data: str) -> str:
        """Put an image (base64 bytes of a PNG, JPEG, GIF, WebP...) into the working directory as ``name``.

        Returns the path the code can open it from.
        """
        if not name or "/" in name or name.startswith(".") or "\0" in name:
            raise ToolError(f"name must be a plain file name such as 'photo.png', got {name!r}")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ToolError(f"data is not valid base64: {exc}") from None
        if len(raw) > MAX_UPLOAD_BYTES:
            raise ToolError(f"the image is {len(raw)} bytes, over the {MAX_UPLOAD_BYTES} byte limit")
        size = _image_size(raw)
        try:
            path = self.sandbox.upload(raw, name)
        except WorkspacePathError as exc:
            raise ToolError(str(exc)) from None
        return f"uploaded {name} ({size[0]}x{size[1]}) to {path}"

    def list_artifacts(self) -> dict[str, Any]:
        """Every image the code has saved or shown so far: index, name, size, how it was captured, which cell."""
        with self._lock:
            rows = [_artifact_row(a) for _, a in sorted(self._artifacts.items())]
        return {"artifacts": rows}

    def get_artifact(self, index: int) -> list[TextContent | ImageContent]:
        """One captured image, by its artifact index (see list_artifacts), as image content."""
        with self._lock:
            artifact = self._artifacts.get(index)
            known = sorted(self._artifacts)
        if artifact is None:
            raise ToolError(f"no artifact {index}; the artifacts are {known or 'none yet'}")
        (image,) = artifact_images(self.sandbox, [artifact])
        row = _artifact_row(artifact)
        caption = f"artifact {index}: {row['name']} {row['width']}x{row['height']} ({row['capture']})"
        return [TextContent(type="text", text=caption), _image_content(image)]

    def get_operations(self, since: int = 0) -> dict[str, Any]:
        """The operations that executed (tracer events: op, API, parameters, image lineage), from sequence ``since``.

        Pass the returned ``next`` as ``since`` to read on.
        """
        with self._lock:
            chosen = [e for e in self._events if int(e["seq"]) >= since][:MAX_OPERATIONS]
        following = int(chosen[-1]["seq"]) + 1 if chosen else since
        return {"operations": chosen, "next": following}


def _image_size(raw: bytes) -> tuple[int, int]:
    """The width and height of an uploaded image; a :class:`ToolError` if it is not one."""
    from PIL import Image as PILImage

    try:
        with PILImage.open(io.BytesIO(raw)) as image:
            image.verify()
            return image.size
    except Exception as exc:  # Pillow raises many types for bad input
        raise ToolError(f"data is not an image Pillow can read: {exc}") from None


def _artifact_row(artifact: Any) -> dict[str, Any]:
    """What ``list_artifacts`` shows of one artifact."""
    names = ("index", "name", "width", "height", "format", "capture", "api", "exec_index", "line", "sha256")
    return {name: field(artifact, name) for name in names}


def _image_content(image: Image) -> ImageContent:
    return ImageContent(type="image", data=base64.b64encode(image.data).decode(), mime_type=image.mime)


def build_server(sandbox: Sandbox) -> MCPServer:
    """An MCP server whose tools act on ``sandbox``."""
    tools = SandboxTools(sandbox)
    server: MCPServer = MCPServer(name="pixelbox", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    for tool in (tools.run_code, tools.upload_image, tools.list_artifacts, tools.get_artifact, tools.get_operations):
        server.add_tool(tool)
    return server


def serve(sandbox: Sandbox, transport: str, host: str = "127.0.0.1", port: int = 0) -> None:
    """Serve ``sandbox`` until the client hangs up (stdio) or the process is stopped (HTTP)."""
    server = build_server(sandbox)
    if transport == "stdio":
        anyio.run(server.run_stdio_async)
        return
    check_loopback(host)
    anyio.run(_serve_http, server, host, port)


async def _serve_http(server: MCPServer, host: str, port: int) -> None:
    """Streamable HTTP at ``http://HOST:PORT/mcp``; the bound address is printed to stderr once listening."""
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)  # connections wait in the backlog from now on, so the printed address is usable at once
    bound = listener.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"pixelbox mcp: serving http://{shown}:{bound}/mcp", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[listener])
