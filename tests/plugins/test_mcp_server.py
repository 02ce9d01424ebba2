"""``pixelbox mcp`` against the official MCP Python client, over stdio and streamable HTTP, on docker runc.

The server is the real command (``pixelbox mcp``) in a child process with a real sandbox; the
client is the SDK's ``ClientSession`` over ``stdio_client`` and ``streamable_http_client``. Images
come back as MCP image content and are decoded here to check their pixels' size.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from conftest import require_backend
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, ImageContent, TextContent
from PIL import Image

PIXELBOX = str(Path(sys.executable).parent / "pixelbox")
START_DEADLINE_S = 240.0
"""How long a server may take to print its address on a loaded machine (a sandbox starts first)."""


def png(width: int, height: int, colour: str = "blue") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="PNG")
    return out.getvalue()


def image_size(content: ImageContent) -> tuple[int, int]:
    with Image.open(io.BytesIO(base64.b64decode(content.data))) as image:
        return image.size


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def server_args(options: dict[str, Any]) -> list[str]:
    return ["mcp", "--backend", options["backend"], "--runtime", options["runtime"], "--timeout", "60"]


async def crop_session(session: ClientSession) -> None:
    """Upload an image, crop it in the kernel, and read back artifacts and operations (the shared scenario)."""
    await session.initialize()
    tools = await session.list_tools()
    names = [t.name for t in tools.tools]
    assert names == ["run_code", "upload_image", "list_artifacts", "get_artifact", "get_operations"]

    uploaded = await session.call_tool(
        "upload_image", {"name": "card.png", "data": base64.b64encode(png(80, 60)).decode()}
    )
    assert not uploaded.is_error and "card.png (80x60)" in text_of(uploaded)

    code = (
        "from PIL import Image\nimg = Image.open('card.png')\n"
        "img.crop((10, 5, 50, 35)).save('zoom.png')\nsize = img.size\nsize"
    )
    ran = await session.call_tool("run_code", {"code": code})
    assert not ran.is_error
    assert "status: ok" in text_of(ran) and "(80, 60)" in text_of(ran)
    assert "box_px=[10, 5, 50, 35]" in text_of(ran)
    images = [c for c in ran.content if isinstance(c, ImageContent)]
    assert len(images) == 1 and images[0].mime_type == "image/png" and image_size(images[0]) == (40, 30)

    again = await session.call_tool("run_code", {"code": "size[0] * 2"})  # state persists across calls
    assert "160" in text_of(again)

    listed = await session.call_tool("list_artifacts", {})
    (row,) = listed.structured_content["artifacts"]  # type: ignore[index]
    assert (row["name"], row["width"], row["height"], row["capture"]) == ("zoom.png", 40, 30, "saved")
    fetched = await session.call_tool("get_artifact", {"index": row["index"]})
    (picture,) = [c for c in fetched.content if isinstance(c, ImageContent)]
    assert image_size(picture) == (40, 30)

    operations = await session.call_tool("get_operations", {"since": 0})
    ops = operations.structured_content["operations"]  # type: ignore[index]
    crop = next(e for e in ops if e["op"] == "crop")
    assert crop["params"]["box_px"] == [10, 5, 50, 35] and crop["api"] == "PIL.Image.Image.crop"
    later = await session.call_tool("get_operations", {"since": operations.structured_content["next"]})  # type: ignore[index]
    assert later.structured_content["operations"] == []  # type: ignore[index]

    failed = await session.call_tool("run_code", {"code": "1 / 0"})
    assert "status: error" in text_of(failed) and "ZeroDivisionError" in text_of(failed)
    missing = await session.call_tool("get_artifact", {"index": 99})
    assert missing.is_error and "no artifact 99" in text_of(missing)
    bad = await session.call_tool("upload_image", {"name": "x.png", "data": base64.b64encode(b"not an image").decode()})
    assert bad.is_error and "not an image" in text_of(bad)
    sneaky = await session.call_tool("upload_image", {"name": "../x.png", "data": base64.b64encode(png(2, 2)).decode()})
    assert sneaky.is_error and "plain file name" in text_of(sneaky)


@pytest.mark.docker
def test_stdio_server_with_the_official_client(tmp_path: Path) -> None:
    options = require_backend("runc")
    params = StdioServerParameters(command=PIXELBOX, args=server_args(options), cwd=str(tmp_path))

    async def scenario() -> None:
        with (tmp_path / "server.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await crop_session(session)

    anyio.run(scenario)


@asynccontextmanager
async def http_server(args: list[str]) -> AsyncIterator[str]:
    """``pixelbox mcp --transport http --port 0``: yield its URL (read from the line it prints), stop it after."""
    process = await anyio.open_process([PIXELBOX, *args, "--transport", "http", "--port", "0"], stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        url = await _announced_url(process.stderr.receive)
        yield url
    finally:
        process.terminate()
        with anyio.fail_after(60):
            await process.wait()


async def _announced_url(receive: Callable[[], Any]) -> str:
    seen = b""
    with anyio.fail_after(START_DEADLINE_S):
        while b"/mcp" not in seen:
            seen += await receive()
    line = next(x for x in seen.decode().splitlines() if "serving http://" in x)
    return line.split("serving ", 1)[1].strip()


@pytest.mark.docker
def test_streamable_http_server_on_loopback_with_the_official_client() -> None:
    options = require_backend("runc")

    async def scenario() -> None:
        async with http_server(server_args(options)) as url:
            assert url.startswith("http://127.0.0.1:")
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await crop_session(session)
            # a second client reaches the same sandbox: the first one's variables are there
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("run_code", {"code": "size"})
                assert "(80, 60)" in text_of(result)

    anyio.run(scenario)


def test_http_is_refused_off_loopback() -> None:
    done = subprocess.run(
        [PIXELBOX, "mcp", "--transport", "http", "--host", "0.0.0.0"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "loopback only" in done.stderr and json.dumps("0.0.0.0").strip('"') in done.stderr
