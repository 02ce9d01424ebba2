"""The four web tools the agent sees, on top of the providers and the per-task cache.

Every method returns a :class:`ToolResult` and never raises for a failed call: bad arguments,
provider failures, cache misses in replay mode, exhausted download quotas and URLs refused by the
:class:`~pixelbox.harness.web.guard.UrlGuard` (loopback, private, link-local... addresses) all
become ``ok=False`` results with a message the model can act on.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pixelbox.harness.web import render
from pixelbox.harness.web.base import ImageHost, PageReader, ProviderError, SearchProvider, ToolResult
from pixelbox.harness.web.cache import CacheEntry, WebCache
from pixelbox.harness.web.download import DownloadLimits, fetch_image, inspect_image
from pixelbox.harness.web.guard import UrlGuard
from pixelbox.harness.web.imagehost import IMGBB_URL, ImgbbHost
from pixelbox.harness.web.jina import JINA_URL, JinaReader
from pixelbox.harness.web.serper import SERPER_URL, SerperProvider
from pixelbox.harness.web.transport import is_web_url

WEB_TOOLS = ("google_search", "google_lens_search", "fetch_webpage", "download_image")
DEFAULT_MAX_CHARS = 12000

Produce = Callable[[], dict[str, Any]]
Finish = Callable[[dict[str, Any]], ToolResult]


class WebTools:
    """Web tools for one task (the download quota and the cache are per task)."""

    def __init__(
        self,
        *,
        search: SearchProvider | None = None,
        reader: PageReader | None = None,
        host: ImageHost | None = None,
        cache: WebCache | None = None,
        limits: DownloadLimits | None = None,
        guard: UrlGuard | None = None,
        allow_private_urls: bool = False,
    ) -> None:
        self.search = search
        self.reader = reader
        self.host = host
        self.cache = cache or WebCache(None, "off")
        self.limits = limits or DownloadLimits()
        self.guard = guard or UrlGuard(allow_private=allow_private_urls)
        """Checks the URLs the model chooses; ``allow_private_urls=True`` (tests, local setups) turns it off."""
        self.downloads = 0

    @classmethod
    def from_env(
        cls,
        cache: WebCache | None = None,
        *,
        serper_url: str = SERPER_URL,
        jina_url: str = JINA_URL,
        imgbb_url: str = IMGBB_URL,
        limits: DownloadLimits | None = None,
        allow_private_urls: bool = False,
        timeout: float | None = None,
    ) -> WebTools:
        """The real providers, keys read from ``SERPER_API_KEY``, ``JINA_API_KEY`` and ``IMGBB_API_KEY`` when used;
        ``timeout`` (seconds per provider call) replaces each provider's default."""
        search, reader, host = (
            SerperProvider(base_url=serper_url),
            JinaReader(base_url=jina_url),
            ImgbbHost(base_url=imgbb_url),
        )
        if timeout is not None:
            search.timeout = reader.timeout = host.timeout = timeout
        return cls(
            search=search,
            reader=reader,
            host=host,
            cache=cache,
            limits=limits,
            allow_private_urls=allow_private_urls,
        )

    # -- the tools -------------------------------------------------------------------------------

    def google_search(self, query: Any, gl: Any = "us", hl: Any = "en") -> ToolResult:
        """Text search."""
        args = {"query": query, "gl": gl, "hl": hl}
        problem = _need_text(args, "query") or _need_text(args, "gl") or _need_text(args, "hl")
        if problem:
            return ToolResult.failure("google_search", args, problem)
        search = self.search

        def produce() -> dict[str, Any]:
            return _provider(search, "google_search").search(query.strip(), gl, hl)

        return self._run("google_search", args, produce, _finisher("google_search", args, render.search_text))

    def google_lens_search(self, image: bytes | str, gl: str = "us", hl: str = "en") -> ToolResult:
        """Reverse image search on image bytes (uploaded to the image host first) or a public image URL."""
        if isinstance(image, bytes):
            args: dict[str, Any] = {"image_sha256": hashlib.sha256(image).hexdigest(), "gl": gl, "hl": hl}
            produce = self._lens_upload(image, gl, hl)
        elif is_web_url(image):
            args = {"image_url": image, "gl": gl, "hl": hl}
            produce = self._lens_url(image, gl, hl)
        else:
            args = {"image": str(image)[:200]}
            return ToolResult.failure("google_lens_search", args, "image must be image bytes or an http(s) URL")
        return self._run("google_lens_search", args, produce, _finisher("google_lens_search", args, render.lens_text))

    def fetch_webpage(self, url: Any, max_chars: Any = DEFAULT_MAX_CHARS) -> ToolResult:
        """A page as clean text, cut to ``max_chars`` (the cache keeps the whole page)."""
        args = {"url": url, "max_chars": max_chars}
        if not is_web_url(url):
            return ToolResult.failure("fetch_webpage", args, f"url must be an http(s) URL, got {url!r}")
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars <= 0:
            return ToolResult.failure("fetch_webpage", args, f"max_chars must be a positive integer, got {max_chars!r}")
        reader = self.reader

        def produce() -> dict[str, Any]:
            self.guard.vet(url.strip(), tool="fetch_webpage", connect=False)
            return _provider(reader, "fetch_webpage").read(url.strip())

        def finish(data: dict[str, Any]) -> ToolResult:
            page = render.cut_page(data, max_chars)
            return ToolResult("fetch_webpage", args, True, render.page_text(page), data=page)

        return self._run("fetch_webpage", {"url": url}, produce, finish, shown_args=args)

    def download_image(self, url: Any) -> ToolResult:
        """Fetch an image on the host; ``blob`` holds the bytes for the caller to put into the sandbox."""
        args = {"url": url}
        if self.downloads >= self.limits.max_count:
            message = f"download limit reached: at most {self.limits.max_count} images can be downloaded per task"
            return ToolResult.failure("download_image", args, message)
        if not is_web_url(url):
            return ToolResult.failure("download_image", args, f"url must be an http(s) URL, got {url!r}")
        result = self._run("download_image", args, self._download(url), self._download_finisher(url, args))
        self.downloads += result.ok
        return result

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Dispatch a tool call by name (``google_lens_search`` here takes ``image_url``; image indices are the
        caller's to resolve into bytes)."""
        methods: dict[str, Callable[..., ToolResult]] = {
            "google_search": self.google_search,
            "fetch_webpage": self.fetch_webpage,
            "download_image": self.download_image,
            "google_lens_search": lambda image_url, gl="us", hl="en": self.google_lens_search(image_url, gl, hl),
        }
        if name not in methods:
            return ToolResult.failure(name, arguments, f"unknown web tool {name!r}; known: {', '.join(WEB_TOOLS)}")
        try:
            inspect.signature(methods[name]).bind(**arguments)
        except TypeError as exc:
            return ToolResult.failure(name, arguments, f"bad arguments for {name}: {exc}")
        return methods[name](**arguments)

    def cached(self, tool: str, key: dict[str, Any], produce: Produce, finish: Finish) -> ToolResult:
        """A suite's own web tool through this task's record/replay cache: ``produce`` asks the provider
        (raising :class:`ProviderError`), ``finish`` turns the data (fresh or recorded) into the result."""
        return self._run(tool, key, produce, finish)

    # -- plumbing ----------------------------------------------------------------------------------

    def _lens_upload(self, image: bytes, gl: str, hl: str) -> Produce:
        def produce() -> dict[str, Any]:
            url = _provider(self.host, "google_lens_search").upload(image, "pixelbox-lens.png")
            return _provider(self.search, "google_lens_search").lens(url, gl, hl)

        return produce

    def _lens_url(self, url: str, gl: str, hl: str) -> Produce:
        def produce() -> dict[str, Any]:
            self.guard.vet(url.strip(), tool="google_lens_search", connect=False)
            return _provider(self.search, "google_lens_search").lens(url, gl, hl)

        return produce

    def _download(self, url: str) -> Produce:
        def produce() -> dict[str, Any]:
            image = fetch_image(url, self.limits, self.guard)
            return {**image.metadata(), "base64": base64.b64encode(image.data).decode("ascii")}

        return produce

    def _download_finisher(self, url: str, args: dict[str, Any]) -> Finish:
        def finish(data: dict[str, Any]) -> ToolResult:
            blob = base64.b64decode(data.get("base64", ""))
            try:
                image = inspect_image(blob, url, data.get("final_url", url), self.limits)
            except ProviderError as exc:
                return ToolResult.failure("download_image", args, str(exc))
            meta = image.metadata()
            return ToolResult("download_image", args, True, render.download_text(meta), data=meta, blob=blob)

        return finish

    def _run(
        self, tool: str, key: dict[str, Any], produce: Produce, finish: Finish, shown_args: dict[str, Any] | None = None
    ) -> ToolResult:
        started = time.monotonic()
        shown = shown_args or key
        entry = self._cached(tool, key)
        if entry is not None:
            result = _from_entry(entry, shown, finish)
        elif self.cache.mode == "replay":
            result = ToolResult.failure(tool, shown, self._miss_message(tool, key))
        else:
            result = self._call_provider(tool, key, shown, produce, finish)
        return _timed(result, time.monotonic() - started)

    def _cached(self, tool: str, key: dict[str, Any]) -> CacheEntry | None:
        if self.cache.mode not in ("replay", "auto"):
            return None
        entry = self.cache.get(tool, key)
        return entry if entry is not None and (entry.ok or self.cache.mode == "replay") else None

    def _call_provider(
        self, tool: str, key: dict[str, Any], shown: dict[str, Any], produce: Produce, finish: Finish
    ) -> ToolResult:
        try:
            data = produce()
        except ProviderError as exc:
            self.cache.put(tool, key, ok=False, data=None, error=str(exc))
            return ToolResult.failure(tool, shown, str(exc), source="provider")
        self.cache.put(tool, key, ok=True, data=data, error=None)
        return finish(data)

    def _miss_message(self, tool: str, key: dict[str, Any]) -> str:
        return (
            f"no recorded result for {tool} with {key} in the web cache ({self.cache.directory}); this run replays "
            "recorded web results only. Record them first (web cache mode 'record' or 'auto')."
        )


def _provider(provider: Any, tool: str) -> Any:
    if provider is None:
        raise ProviderError(f"{tool} is not available: no provider is configured for it")
    return provider


def _need_text(args: dict[str, Any], name: str) -> str | None:
    value = args[name]
    return None if isinstance(value, str) and value.strip() else f"{name} must be a non-empty string, got {value!r}"


def _finisher(tool: str, args: dict[str, Any], text: Callable[[dict[str, Any]], str]) -> Finish:
    return lambda data: ToolResult(tool, args, True, text(data), data=data)


def _from_entry(entry: CacheEntry, shown: dict[str, Any], finish: Finish) -> ToolResult:
    if not entry.ok or entry.data is None:
        return ToolResult.failure(entry.tool, shown, entry.error or "recorded as failed", source="cache")
    result = finish(entry.data)
    return _with(result, source="cache")


def _timed(result: ToolResult, seconds: float) -> ToolResult:
    return _with(result, duration=seconds)


def _with(result: ToolResult, **changes: Any) -> ToolResult:
    return replace(result, **changes)
