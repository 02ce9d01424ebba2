"""The web-tool provider interface and the result every web tool returns."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Source = Literal["provider", "cache", "none"]


class ProviderError(Exception):
    """A provider call failed (HTTP error, timeout, bad JSON, missing key); the message says what to do."""


@dataclass(frozen=True)
class ToolResult:
    """What one web-tool call gave back, success or failure; never raised.

    ``data`` is the structured result (or None on failure), ``text`` what the model is shown,
    ``source`` whether it came from the provider or the per-task cache. ``blob`` carries bytes
    (a downloaded image) and is left out of :meth:`to_dict`.
    """

    tool: str
    args: dict[str, Any]
    ok: bool
    text: str
    data: dict[str, Any] | None = None
    error: str | None = None
    source: Source = "provider"
    duration: float = 0.0
    blob: bytes | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable view for traces (without ``blob``)."""
        return {
            "tool": self.tool,
            "args": self.args,
            "ok": self.ok,
            "text": self.text,
            "data": self.data,
            "error": self.error,
            "source": self.source,
            "duration": self.duration,
        }

    @classmethod
    def failure(cls, tool: str, args: dict[str, Any], error: str, source: Source = "none") -> ToolResult:
        """A failed call; the model is shown ``Error: ...``."""
        return cls(tool=tool, args=args, ok=False, text=f"Error: {error}", error=error, source=source)


class SearchProvider(Protocol):
    """Text search and reverse image search (Serper in production)."""

    def search(self, query: str, gl: str, hl: str) -> dict[str, Any]:
        """``{"query", "results": [{title, link, snippet}], ...}``; raises :class:`ProviderError`."""
        ...

    def lens(self, image_url: str, gl: str, hl: str) -> dict[str, Any]:
        """``{"image_url", "results": [{title, link, source, image_url}]}``; raises :class:`ProviderError`."""
        ...


class PageReader(Protocol):
    """Web page to clean text (Jina Reader in production)."""

    def read(self, url: str) -> dict[str, Any]:
        """``{"url", "title", "content"}``; raises :class:`ProviderError`."""
        ...


class ImageHost(Protocol):
    """Puts image bytes at a public URL so reverse image search can see them (imgbb in production)."""

    def upload(self, data: bytes, name: str) -> str:
        """The public URL of the uploaded image; raises :class:`ProviderError`."""
        ...


def compact_json(value: Any) -> str:
    """JSON without extra spaces, for text shown to the model."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
