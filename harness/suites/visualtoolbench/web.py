"""VisualToolBench's web-facing tools: ``google_search`` (SerpAPI), ``browser_get_page_text`` and
``historical_weather`` (OpenWeatherMap), with the official result shapes and our per-task record/replay.

The official tools call SerpAPI (``GET /search?engine=google&q=..&num=..``; key ``SERP_API_KEY``),
fetch the page and keep its text (scripts, styles, navigation, headers, footers and asides dropped,
whitespace collapsed, the first 8000 characters), and ask OpenWeatherMap for the location's
coordinates (``/geo/1.0/direct``) then its *current* weather (``/data/2.5/weather``, metric; key
``OPENWEATHER_API_KEY``) whatever the date asked. We do the same through our HTTP helpers: provider
hosts are trusted configuration (``PIXELBOX_SERPAPI_URL`` and ``PIXELBOX_OPENWEATHER_URL`` point
them elsewhere, e.g. a local server), the page URL is the model's and goes through the
:class:`~pixelbox.harness.web.guard.UrlGuard`. Each call goes through ``WebTools.cached``: its provider
data is stored in the task's web cache (``record``/``auto``) and read back in ``replay``.
Failures are results with ``status: "error"``, as officially; nothing here raises.
"""

from __future__ import annotations

import os
import urllib.parse
from html.parser import HTMLParser
from typing import Any

from pixelbox.harness.web import WebTools
from pixelbox.harness.web.base import ProviderError, ToolResult
from pixelbox.harness.web.guard import UrlGuard
from pixelbox.harness.web.keys import require_key
from pixelbox.harness.web.transport import check_reachable, guarded_get, is_web_url, request

SERPAPI_URL = "https://serpapi.com"
OPENWEATHER_URL = "https://api.openweathermap.org"
SERPAPI_ENV, OPENWEATHER_ENV = "PIXELBOX_SERPAPI_URL", "PIXELBOX_OPENWEATHER_URL"
SERP_KEY_ENV, WEATHER_KEY_ENV = "SERP_API_KEY", "OPENWEATHER_API_KEY"
PAGE_CHARS = 8000
MAX_PAGE_BYTES = 8 * 1024**2
TIMEOUT = 15.0
WEB_TOOL_NAMES = ("google_search", "browser_get_page_text", "historical_weather")


class VtbWeb:
    """The three web tools of one task over the run's :class:`~pixelbox.harness.web.WebTools` (its per-task
    record/replay cache and URL guard); ``web`` None (the run has ``--web off``) answers every call with an
    error result saying so."""

    def __init__(self, web: WebTools | None) -> None:
        self.web = web
        self.guard = web.guard if web is not None else UrlGuard()
        self.serpapi_url = os.environ.get(SERPAPI_ENV, SERPAPI_URL).rstrip("/")
        self.weather_url = os.environ.get(OPENWEATHER_ENV, OPENWEATHER_URL).rstrip("/")

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """``(result, source)``: the official result dict and where it came from (provider, cache, none)."""
        if name == "google_search":
            query, num = arguments.get("query"), arguments.get("num_results", 5)
            fail: dict[str, Any] = {"results": [], "query": query, "status": "error"}
            if not isinstance(query, str) or not query.strip():
                return {**fail, "error": "query must be a non-empty string"}, "none"
            if isinstance(num, bool) or not isinstance(num, int):
                return {**fail, "error": f"num_results must be an integer, got {num!r}"}, "none"
            count = min(max(num, 1), 10)
            key = {"query": query, "num_results": count}
            return self._run(name, key, fail, lambda: self._search(query, count))
        if name == "browser_get_page_text":
            url = arguments.get("url")
            fail = {"url": url, "title": "", "text": "", "status": "error"}
            if not is_web_url(url):
                return {**fail, "error": f"url must be an http(s) URL, got {url!r}"}, "none"
            return self._run(name, {"url": url}, fail, lambda: self._page(str(url).strip()))
        if name == "historical_weather":
            location, date = arguments.get("location"), arguments.get("date")
            fail = {"location": location, "date": date, "status": "error"}
            if not isinstance(location, str) or not location.strip() or not isinstance(date, str):
                return {**fail, "error": "location and date must be strings"}, "none"
            return self._run(name, {"location": location, "date": date}, fail, lambda: self._weather(location, date))
        return {"status": "error", "error": f"unknown web tool {name!r}"}, "none"

    # -- record / replay ------------------------------------------------------------------------------------

    def _run(self, tool: str, key: dict[str, Any], fail: dict[str, Any], produce: Any) -> tuple[dict[str, Any], str]:
        if self.web is None:
            return {**fail, "error": "web tools are off in this run (pixelbox run --web record|replay|auto)"}, "none"

        def finish(data: dict[str, Any]) -> ToolResult:
            return ToolResult(tool, key, True, str(data), data=data)

        result = self.web.cached(tool, key, produce, finish)
        if result.ok and result.data is not None:
            return result.data, result.source
        return {**fail, "error": result.error or "the call failed"}, result.source

    # -- providers ----------------------------------------------------------------------------------------------

    def _search(self, query: str, num: int) -> dict[str, Any]:
        api_key = require_key(None, SERP_KEY_ENV, "SerpAPI", "google_search")
        params = urllib.parse.urlencode({"api_key": api_key, "q": query, "num": num, "engine": "google"})
        reply = request("GET", f"{self.serpapi_url}/search?{params}", service="SerpAPI", timeout=TIMEOUT)
        raw = reply.json("SerpAPI")
        if not isinstance(raw, dict):
            raise ProviderError(f"SerpAPI returned {type(raw).__name__} where an object was expected")
        found = raw.get("organic_results")
        organic: list[Any] = found if isinstance(found, list) else []
        results = [
            {
                "title": item.get("title", ""),
                "snippet": item.get("snippet", ""),
                "url": item.get("link", ""),
                "display_link": item.get("displayed_link", ""),
            }
            for item in organic
            if isinstance(item, dict)
        ]
        given = raw.get("search_information")
        info: dict[str, Any] = given if isinstance(given, dict) else {}
        total = info.get("total_results", 0)
        return {"results": results, "query": query, "status": "success", "total_results": total}

    def _page(self, url: str) -> dict[str, Any]:
        reply = guarded_get(
            url, self.guard, tool="browser_get_page_text", service="the page", timeout=TIMEOUT, max_bytes=MAX_PAGE_BYTES
        )
        title, text = page_text(reply.body.decode(_charset(reply.headers), "replace"))
        return {"url": url, "title": title, "text": text[:PAGE_CHARS], "status": "success", "content_length": len(text)}

    def _weather(self, location: str, date: str) -> dict[str, Any]:
        api_key = require_key(None, WEATHER_KEY_ENV, "OpenWeatherMap", "historical_weather")
        geo = urllib.parse.urlencode({"q": location, "limit": 1, "appid": api_key})
        places = request("GET", f"{self.weather_url}/geo/1.0/direct?{geo}", service="OpenWeatherMap", timeout=10)
        found = places.json("OpenWeatherMap")
        if not isinstance(found, list) or not found or not isinstance(found[0], dict):
            return {"location": location, "date": date, "status": "error", "error": "Location not found"}
        lat, lon = found[0].get("lat"), found[0].get("lon")
        query = urllib.parse.urlencode({"lat": lat, "lon": lon, "appid": api_key, "units": "metric"})
        reply = request("GET", f"{self.weather_url}/data/2.5/weather?{query}", service="OpenWeatherMap", timeout=10)
        return _weather_result(location, date, lat, lon, reply.json("OpenWeatherMap"))


def _weather_result(location: str, date: str, lat: Any, lon: Any, data: Any) -> dict[str, Any]:
    try:
        main, wind = data["main"], data["wind"]
        return {
            "location": location,
            "date": date,
            "coordinates": f"{lat}, {lon}",
            "temperature": {
                "current": f"{float(main['temp']):.1f}°C",
                "feels_like": f"{float(main['feels_like']):.1f}°C",
                "min": f"{float(main['temp_min']):.1f}°C",
                "max": f"{float(main['temp_max']):.1f}°C",
            },
            "conditions": data["weather"][0]["description"],
            "humidity": f"{main['humidity']}%",
            "wind_speed": f"{wind['speed']} m/s",
            "pressure": f"{main['pressure']} hPa",
            "status": "success",
            "note": "current conditions; the provider's free tier has no historical data",
        }
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ProviderError(f"OpenWeatherMap returned weather without {exc}") from None


def _charset(headers: dict[str, str]) -> str:
    kind = headers.get("content-type", "")
    for part in kind.split(";"):
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            return value.strip().strip('"')
    return "utf-8"


SKIPPED = frozenset({"script", "style", "nav", "header", "footer", "aside"})


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.parts: list[str] = []
        self.title: str | None = None
        self.h1: str | None = None
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in SKIPPED:
            self.depth += 1
        self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED and self.depth:
            self.depth -= 1
        if tag in self._in:
            while self._in and self._in.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "title" and self.title is None:
            self.title = data.strip()
        if "h1" in self._in and self.h1 is None and data.strip():
            self.h1 = data.strip()
        if not self.depth:
            self.parts.append(data)


def page_text(html: str) -> tuple[str, str]:
    """``(title, text)`` of an HTML page: text outside script/style/nav/header/footer/aside, each line stripped,
    split at double spaces, the non-empty pieces joined by one space (the official extraction's result)."""
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    pieces = (piece.strip() for line in text.splitlines() for piece in line.strip().split("  "))
    return parser.title or parser.h1 or "", " ".join(p for p in pieces if p)


def check_providers(timeout: float = 10.0) -> list[str]:
    """What stops a run that records web answers: a missing key, a provider host that does not answer."""
    problems = []
    for env, service, base, default in (
        (SERP_KEY_ENV, "SerpAPI", SERPAPI_ENV, SERPAPI_URL),
        (WEATHER_KEY_ENV, "OpenWeatherMap", OPENWEATHER_ENV, OPENWEATHER_URL),
    ):
        try:
            require_key(None, env, service, "google_search" if service == "SerpAPI" else "historical_weather")
            check_reachable(os.environ.get(base, default), service=service, timeout=timeout)
        except ProviderError as exc:
            problems.append(str(exc))
    return problems
