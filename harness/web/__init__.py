"""Web tools (search, reverse image search, page reading, image download) behind providers and a per-task cache."""

from pixelbox.harness.web.base import ImageHost, PageReader, ProviderError, SearchProvider, ToolResult
from pixelbox.harness.web.cache import CACHE_MODES, CacheMode, WebCache, cache_key
from pixelbox.harness.web.download import DownloadedImage, DownloadLimits, fetch_image, inspect_image
from pixelbox.harness.web.guard import BlockedURL, UrlGuard, blocked_reason
from pixelbox.harness.web.imagehost import ImgbbHost
from pixelbox.harness.web.jina import JinaReader
from pixelbox.harness.web.serper import SerperProvider
from pixelbox.harness.web.tools import WEB_TOOLS, WebTools

__all__ = [
    "CACHE_MODES",
    "WEB_TOOLS",
    "BlockedURL",
    "CacheMode",
    "DownloadLimits",
    "DownloadedImage",
    "ImageHost",
    "ImgbbHost",
    "JinaReader",
    "PageReader",
    "ProviderError",
    "SearchProvider",
    "SerperProvider",
    "ToolResult",
    "UrlGuard",
    "WebCache",
    "WebTools",
    "blocked_reason",
    "cache_key",
    "fetch_image",
    "inspect_image",
]
