"""Serper (google.serper.dev): Google text search (``POST /search``), image search (``POST /images``) and
Google Lens (``POST /lens``)."""

from __future__ import annotations

from typing import Any

from pixelbox.harness.web.base import ProviderError
from pixelbox.harness.web.keys import require_key
from pixelbox.harness.web.transport import check_reachable, post_json

SERPER_URL = "https://google.serper.dev"
KEY_ENV = "SERPER_API_KEY"


class SerperProvider:
    """Search and reverse image search through Serper. The key comes from ``api_key`` or ``$SERPER_API_KEY``."""

    def __init__(
        self, api_key: str | None = None, *, base_url: str = SERPER_URL, timeout: float = 30.0, num: int = 10
    ) -> None:
        self._key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.num = num

    def check(self, timeout: float) -> None:
        """Raise :class:`ProviderError` when the key is missing or Serper cannot be reached (no search is spent)."""
        require_key(self._key, KEY_ENV, "Serper", "google_search and google_lens_search")
        check_reachable(self.base_url, service="Serper", timeout=timeout)

    def search(self, query: str, gl: str, hl: str) -> dict[str, Any]:
        """Organic results plus the answer box and knowledge graph when Google shows them."""
        raw = self._post("/search", {"q": query, "gl": gl, "hl": hl, "num": self.num}, "google_search")
        result: dict[str, Any] = {"query": query, "results": [_organic(r) for r in _list(raw, "organic")]}
        for source, target in (("answerBox", "answer_box"), ("knowledgeGraph", "knowledge_graph")):
            if isinstance(raw.get(source), dict):
                result[target] = raw[source]
        return result

    def lens(self, image_url: str, gl: str, hl: str) -> dict[str, Any]:
        """Pages showing visually matching images."""
        raw = self._post("/lens", {"url": image_url, "gl": gl, "hl": hl}, "google_lens_search")
        matches = _list(raw, "organic") or _list(raw, "visualMatches")
        return {"image_url": image_url, "results": [_match(r) for r in matches]}

    def images(self, query: str, gl: str = "us", hl: str = "en") -> dict[str, Any]:
        """Google Images results for a text query (``POST /images``)."""
        raw = self._post("/images", {"q": query, "gl": gl, "hl": hl, "num": self.num}, "image_search")
        return {"query": query, "results": [_image(r) for r in _list(raw, "images")]}

    def _post(self, path: str, payload: dict[str, Any], tool: str) -> dict[str, Any]:
        key = require_key(self._key, KEY_ENV, "Serper", tool)
        raw = post_json(
            self.base_url + path, payload, service="Serper", timeout=self.timeout, headers={"X-API-KEY": key}
        )
        if not isinstance(raw, dict):
            raise ProviderError(f"Serper returned {type(raw).__name__} where an object was expected")
        return raw


def _list(raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = raw.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _organic(item: dict[str, Any]) -> dict[str, Any]:
    out = {k: item.get(k, "") for k in ("title", "link", "snippet")}
    if item.get("date"):
        out["date"] = item["date"]
    return out


def _image(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": item.get("title", ""),
        "image_url": item.get("imageUrl", ""),
        "link": item.get("link", ""),
        "source": item.get("source", ""),
    }


def _match(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": item.get("title", ""),
        "link": item.get("link", ""),
        "source": item.get("source", ""),
        "image_url": item.get("imageUrl", ""),
    }
