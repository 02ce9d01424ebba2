"""Building chat messages with images, and summarizing what was sent (for traces)."""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pixelbox.harness.agents.base import Message

_SIGNATURES = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif", b"RIFF": "image/webp"}


def text_part(text: str) -> dict[str, Any]:
    """A text content part."""
    return {"type": "text", "text": text}


def image_part(image: bytes | str | Path, *, mime: str | None = None, detail: str | None = None) -> dict[str, Any]:
    """An ``image_url`` content part carrying the image inline as a ``data:`` URL.

    ``image`` is the encoded bytes or a path to read. The MIME type is taken from the bytes'
    signature, else from the file name, else PNG.
    """
    if isinstance(image, bytes):
        data, by_name = image, None
    else:
        data, by_name = Path(image).read_bytes(), mimetypes.guess_type(str(image))[0]
    kind = mime or sniff_mime(data) or by_name
    url = f"data:{kind or 'image/png'};base64,{base64.b64encode(data).decode('ascii')}"
    part: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
    if detail:
        part["image_url"]["detail"] = detail
    return part


def sniff_mime(data: bytes) -> str | None:
    """The image MIME type from the first bytes, or None if unknown."""
    return next((mime for sig, mime in _SIGNATURES.items() if data.startswith(sig)), None)


def content_text(content: Any) -> str:
    """The text of a message ``content`` that is a string, None, or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_part_text(p) for p in content)
    return str(content)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return str(part["text"])
    return ""


def summarize_messages(messages: Sequence[Message], preview_chars: int = 400) -> dict[str, Any]:
    """A compact record of a request's messages: count, roles, images, a hash and the last message's text.

    Traces store this instead of the whole conversation on every turn; the full content is
    recoverable from earlier records and the hash checks it.
    """
    images = sum(_count_images(m.get("content")) for m in messages)
    digest = hashlib.sha256(json.dumps(list(messages), sort_keys=True, default=str).encode()).hexdigest()
    last = messages[-1] if messages else {}
    return {
        "count": len(messages),
        "roles": [m.get("role") for m in messages],
        "images": images,
        "sha256": digest,
        "last_role": last.get("role"),
        "last_text": content_text(last.get("content"))[:preview_chars],
    }


def _count_images(content: Any) -> int:
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
