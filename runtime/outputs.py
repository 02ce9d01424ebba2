"""Turning raw Jupyter output messages into capped text and file-backed rich outputs."""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any, Literal

from pixelbox.runtime.execution import Output

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")

BINARY_MIME_SUFFIX = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "application/pdf": ".pdf",
}


MAX_BINARY_OUTPUT_BYTES = 32 * 1024**2
"""Largest decoded binary output (one PNG, JPEG...) written to the host; bigger ones are dropped
with a marker, so one cell cannot fill the host disk with a few giant images."""

MAX_TEXT_OUTPUT_CHARS = 32_000
"""Cap on each inline text payload of a rich output (``text/plain``, ``text/html``...), kept
head and tail like stdout: the repr of a huge object must not bloat the result."""


def capped(name: str, text: str, cap: int) -> str:
    """``text`` cut to ``cap`` characters, keeping head and tail around an explicit marker."""
    if len(text) <= cap:
        return text
    sink = CappedText(name, cap)
    sink.write(text)
    return sink.value()


def strip_ansi(text: str) -> str:
    """Remove terminal colour and cursor escapes, which mean nothing to a model or a log."""
    return _ANSI.sub("", text)


def truncation_marker(name: str, dropped: int) -> str:
    """The explicit line inserted where capped text was cut."""
    return f"\n[... pixelbox: {dropped} characters of {name} truncated here ...]\n"


class CappedText:
    """Accumulates a stream, keeping its head and its tail within ``cap`` characters.

    The tail matters as much as the head: the last lines of output usually hold the result or
    the final error, so a flood keeps 3/4 of the budget from the start and 1/4 from the end.
    Memory stays bounded however much the cell prints.
    """

    def __init__(self, name: str, cap: int) -> None:
        self.name = name
        self._head_cap = cap - cap // 4
        self._tail_cap = cap // 4
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.dropped = 0

    def write(self, text: str) -> None:
        """Append ``text`` to the stream."""
        room = self._head_cap - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if not text:
            return
        combined = self._tail + text
        overflow = len(combined) - self._tail_cap
        if overflow > 0:
            self.dropped += overflow
            combined = combined[overflow:]
        self._tail = combined

    def value(self) -> str:
        """The kept text, with a marker where anything was dropped."""
        head = "".join(self._head)
        if self.dropped:
            return head + truncation_marker(self.name, self.dropped) + self._tail
        return head + self._tail


def save_bundle(msg_type: str, content: dict[str, Any], out_dir: Path, stem: str) -> Output:
    """Build an :class:`Output`, writing binary MIME payloads to ``out_dir`` as files."""
    data: dict[str, Any] = {}
    files: dict[str, str] = {}
    for mime, payload in content.get("data", {}).items():
        suffix = BINARY_MIME_SUFFIX.get(mime)
        if suffix is None:
            is_text = isinstance(payload, str)
            data[mime] = capped(mime, strip_ansi(payload), MAX_TEXT_OUTPUT_CHARS) if is_text else payload
            continue
        if isinstance(payload, str) and len(payload) // 4 * 3 > MAX_BINARY_OUTPUT_BYTES:
            data[mime] = (
                f"[pixelbox: {mime} output of about {len(payload) // 4 * 3:,} bytes dropped: over the "
                f"{MAX_BINARY_OUTPUT_BYTES:,} byte cap; save a smaller image]"
            )
            continue
        try:
            raw = base64.b64decode(payload, validate=False)
        except (binascii.Error, TypeError, ValueError):
            data[mime] = "[pixelbox: undecodable base64 payload dropped]"
            continue
        path = out_dir / f"{stem}{suffix}"
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            path.write_bytes(raw)
        except OSError as exc:  # the sandbox's disk cap (shared with the kernel) may be full
            path.unlink(missing_ok=True)
            data[mime] = f"[pixelbox: {mime} output of {len(raw):,} bytes dropped: not saved ({exc.strerror})]"
            continue
        files[mime] = str(path)
    kind: Literal["display_data", "execute_result"] = (
        "execute_result" if msg_type == "execute_result" else "display_data"
    )
    return Output(type=kind, data=data, files=files, metadata=dict(content.get("metadata") or {}))
