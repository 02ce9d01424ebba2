"""What a plug-in hands a model or a client from an :class:`Execution`: text, and the images it made.

Both plug-ins (inspect_ai's tool, the MCP server) show a cell's result the same way: status,
output, error, the operations that executed and the artifacts it captured, then each captured
image's bytes, read back from the workspace with the sandbox's own link-refusing download.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pixelbox.runtime.execution import Execution
from pixelbox.runtime.sandbox import Sandbox

MIME_BY_FORMAT = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
MAX_EVENT_LINES = 40
"""Executed operations listed in a result's text; the rest are counted (all are in ``operations``)."""


@dataclass(frozen=True)
class Image:
    """One captured image: its artifact index and name, its MIME type and its bytes."""

    index: int
    name: str
    mime: str
    data: bytes


def field(item: Any, name: str) -> Any:
    """``item[name]`` or ``item.name``: artifacts and events are plain dicts or typed records."""
    return item[name] if isinstance(item, dict) else getattr(item, name)


def result_text(result: Execution) -> str:
    """The cell's result as a model reads it: status, stdout, stderr, values, error, operations, artifacts."""
    parts = [f"status: {result.status}"]
    if result.stdout:
        parts.append(f"stdout:\n{result.stdout.rstrip()}")
    if result.stderr:
        parts.append(f"stderr:\n{result.stderr.rstrip()}")
    values = [o.data["text/plain"] for o in result.outputs if "text/plain" in o.data]
    if values:
        parts.append("result:\n" + "\n".join(values))
    if result.error is not None:
        parts.append(f"error: {result.error.ename}: {result.error.evalue}\n{result.error.traceback}".rstrip())
    parts.extend(result.notices)
    lines = [_event_line(e) for e in result.events[:MAX_EVENT_LINES]]
    if len(result.events) > MAX_EVENT_LINES:
        lines.append(f"... and {len(result.events) - MAX_EVENT_LINES} more")
    if lines:
        parts.append("operations executed:\n" + "\n".join(lines))
    for artifact in result.artifacts:
        parts.append(
            f"artifact {field(artifact, 'index')}: {field(artifact, 'name')} "
            f"{field(artifact, 'width')}x{field(artifact, 'height')} ({field(artifact, 'capture')})"
        )
    return "\n".join(parts)


def _event_line(event: Any) -> str:
    """One executed operation: its op, its API and its parameters."""
    params = field(event, "params") or {}
    shown = ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"- {field(event, 'op')} ({field(event, 'api')}) {shown}".rstrip()


def artifact_images(sandbox: Sandbox, artifacts: list[Any]) -> list[Image]:
    """The bytes of each artifact, read from the workspace (no links followed, size capped)."""
    images: list[Image] = []
    for artifact in artifacts:
        mime = MIME_BY_FORMAT.get(str(field(artifact, "format")).upper(), "image/png")
        data = sandbox.download(str(field(artifact, "relpath")))
        images.append(Image(int(field(artifact, "index")), str(field(artifact, "name")), mime, data))
    return images
