"""Jina Reader (r.jina.ai): a web page as clean text, via ``GET /<url>``."""

from __future__ import annotations

import os
from typing import Any

from pixelbox.harness.web.base import ProviderError
from pixelbox.harness.web.transport import check_reachable, request

JINA_URL = "https://r.jina.ai"
KEY_ENV = "JINA_API_KEY"
MAX_PAGE_BYTES = 8 * 1024**2


class JinaReader:
    """Fetches pages through Jina Reader. A key (``api_key`` or ``$JINA_API_KEY``) is optional: without one
    Jina serves fewer requests per minute."""

    def __init__(self, api_key: str | None = None, *, base_url: str = JINA_URL, timeout: float = 60.0) -> None:
        self._key = api_key or os.environ.get(KEY_ENV)
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def check(self, timeout: float) -> None:
        """Raise :class:`ProviderError` when Jina Reader cannot be reached (its key is optional)."""
        check_reachable(self.base_url, service="Jina Reader", timeout=timeout)

    def read(self, url: str) -> dict[str, Any]:
        """``{"url", "title", "content"}`` for the page at ``url``."""
        headers = {"Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        reply = request(
            "GET",
            f"{self.base_url}/{url}",
            service="Jina Reader",
            timeout=self.timeout,
            headers=headers,
            max_bytes=MAX_PAGE_BYTES,
        )
        if "json" not in reply.headers.get("content-type", ""):
            return {"url": url, "title": "", "content": reply.body.decode("utf-8", "replace")}
        return _page(reply.json("Jina Reader"), url)


def _page(raw: Any, url: str) -> dict[str, Any]:
    data = raw.get("data") if isinstance(raw, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("content"), str):
        raise ProviderError(f"Jina Reader returned no page content for {url}")
    return {"url": data.get("url") or url, "title": data.get("title") or "", "content": data["content"]}
