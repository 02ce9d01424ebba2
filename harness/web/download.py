"""``download_image`` on the host: fetch a URL, make sure the bytes are an image, enforce size caps.

The sandbox has no network, so the harness downloads and then uploads the bytes into the sandbox.
The URL is the model's choice, so it and every redirect must lead to a public address (see ``guard``).
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass
from typing import Any

from PIL import Image, UnidentifiedImageError

from pixelbox.harness.web.base import ProviderError
from pixelbox.harness.web.guard import UrlGuard
from pixelbox.harness.web.transport import guarded_get, is_web_url


@dataclass(frozen=True)
class DownloadLimits:
    """Caps for ``download_image``: images per task, bytes per image, pixels per image, seconds per fetch."""

    max_count: int = 5
    max_bytes: int = 20 * 1024**2
    max_pixels: int = 64_000_000
    timeout: float = 30.0


@dataclass(frozen=True)
class DownloadedImage:
    """A fetched image and what is known about it."""

    data: bytes
    url: str
    final_url: str
    mime: str
    format: str
    width: int
    height: int
    sha256: str

    def metadata(self) -> dict[str, Any]:
        """Everything but the bytes (JSON-serializable)."""
        return {
            "url": self.url,
            "final_url": self.final_url,
            "mime": self.mime,
            "format": self.format,
            "width": self.width,
            "height": self.height,
            "bytes": len(self.data),
            "sha256": self.sha256,
        }


def fetch_image(url: str, limits: DownloadLimits = DownloadLimits(), guard: UrlGuard | None = None) -> DownloadedImage:
    """Download ``url`` and check it; raises :class:`ProviderError` saying what was wrong.

    Every hop (the URL and each redirect) must pass ``guard`` (default: public addresses only).
    """
    if not is_web_url(url):
        raise ProviderError(f"download_image needs an http(s) URL, got {url!r}")
    reply = guarded_get(
        url.strip(),
        guard or UrlGuard(),
        tool="download_image",
        service=f"the server of {url}",
        timeout=limits.timeout,
        max_bytes=limits.max_bytes,
    )
    return inspect_image(reply.body, url, reply.url, limits, reply.headers.get("content-type", ""))


def inspect_image(
    data: bytes, url: str, final_url: str, limits: DownloadLimits = DownloadLimits(), content_type: str = ""
) -> DownloadedImage:
    """Check that ``data`` is a readable image within the limits (also used on bytes replayed from a cache)."""
    if len(data) > limits.max_bytes:
        raise ProviderError(f"{url}: {len(data)} bytes is more than the {limits.max_bytes}-byte limit")
    served = f" (served as {content_type.split(';')[0]})" if content_type else ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            width, height = image.size
            if width * height > limits.max_pixels:
                raise ProviderError(f"{url}: {width}x{height} is more than the {limits.max_pixels}-pixel limit")
            fmt = image.format or "unknown"
            image.verify()
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError, ValueError) as exc:
        raise ProviderError(f"{url} is not an image that can be read{served}: {exc}") from exc
    mime = Image.MIME.get(fmt, f"image/{fmt.lower()}")
    digest = hashlib.sha256(data).hexdigest()
    return DownloadedImage(data, url, final_url, mime, fmt, width, height, digest)
