"""imgbb-style image hosting (``POST /1/upload``): gives a local image a public URL for reverse image search."""

from __future__ import annotations

import base64
import urllib.parse

from pixelbox.harness.web.base import ProviderError
from pixelbox.harness.web.keys import require_key
from pixelbox.harness.web.transport import check_reachable, post_form

IMGBB_URL = "https://api.imgbb.com"
KEY_ENV = "IMGBB_API_KEY"


class ImgbbHost:
    """Uploads to imgbb (or a compatible server). Uploads expire after ``expiration`` seconds (0 = never)."""

    def __init__(
        self, api_key: str | None = None, *, base_url: str = IMGBB_URL, timeout: float = 60.0, expiration: int = 600
    ) -> None:
        self._key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.expiration = expiration

    def check(self, timeout: float) -> None:
        """Raise :class:`ProviderError` when the key is missing or the host cannot be reached."""
        require_key(self._key, KEY_ENV, "imgbb", "google_lens_search on a local image")
        check_reachable(self.base_url, service="imgbb", timeout=timeout)

    def upload(self, data: bytes, name: str) -> str:
        """The public URL of the uploaded image."""
        key = require_key(self._key, KEY_ENV, "imgbb", "google_lens_search on a local image")
        query = {"key": key, **({"expiration": str(self.expiration)} if self.expiration else {})}
        url = f"{self.base_url}/1/upload?{urllib.parse.urlencode(query)}"
        fields = {"image": base64.b64encode(data).decode("ascii"), "name": name}
        raw = post_form(url, fields, service="imgbb", timeout=self.timeout)
        link = raw.get("data", {}).get("url") if isinstance(raw, dict) and isinstance(raw.get("data"), dict) else None
        if not isinstance(link, str) or not link:
            raise ProviderError(f"imgbb upload gave no image URL: {str(raw)[:200]}")
        return link
