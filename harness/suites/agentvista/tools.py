"""AgentVista's four tools as the official runner offers them: names, parameters and result text.

``code_interpreter`` runs in the task's sandbox (a stateful Jupyter kernel, as officially); the
three web tools go through pixelbox's providers (Serper for ``web_search`` and ``image_search``,
Jina Reader for ``visit``) and the task's record/replay cache. The descriptions are ours; the
names, parameters, defaults and the shape of every result follow the official tools, so a model
tuned on AgentVista's harness sees the same interface.

Where we differ on purpose (docs/agentvista.md): reverse image search on a local image uploads it
only to the image host the user configured (imgbb with ``IMGBB_API_KEY``), never to the anonymous
public hosts the official code falls back to; ``visit`` reads pages with Jina Reader only (no
trafilatura fallback); code containing ``exit`` is not refused (the sandbox is the guard).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pixelbox.harness.suites.shared import json_object_in
from pixelbox.harness.web import ToolResult, WebTools

CODE_TOOL = "code_interpreter"
WEB_SEARCH = "web_search"
IMAGE_SEARCH = "image_search"
VISIT = "visit"
TOOL_ORDER = (CODE_TOOL, WEB_SEARCH, VISIT, IMAGE_SEARCH)
"""The official schema order."""
SEARCH_LIMITS = {IMAGE_SEARCH: 100, WEB_SEARCH: 100}
"""Calls allowed per episode (the official runner's defaults, passed by ``infer.py``)."""
IMAGE_SEARCH_RESULTS = 5
"""The official configuration's effective ``max_results`` for image search."""
WEB_SEARCH_RESULTS = 10
PAGE_CHARS = 150_000
"""Page text kept for the summary (the official ``max_content_length``)."""


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


SCHEMAS: dict[str, dict[str, Any]] = {
    CODE_TOOL: _function(
        CODE_TOOL,
        "Run Python in a persistent Jupyter kernel (variables survive between calls) and get its output.\n"
        "The input pictures are ready as PIL images: original_image for the first (also named image), "
        "original_image_1, original_image_2, ... for the others; these names are set again before every call.\n"
        "Pictures your code shows or saves (return the image, plt.show(), or image.save('name.png')) come back "
        "to you and are then available as tool_image_1, tool_image_2, ... in later calls. Do not use image.show().\n"
        "PIL, NumPy, OpenCV, Matplotlib, SciPy and scikit-image are installed.",
        {"code": {"type": "string", "description": "The Python code to run"}},
        ["code"],
    ),
    WEB_SEARCH: _function(
        WEB_SEARCH,
        "Search the web. Returns titles, links and snippets of the top results. Searches are limited, so "
        "choose queries carefully.",
        {
            "query": {"type": "string", "description": "What to search for"},
            "max_results": {"type": "integer", "description": "How many results to return (default 10)", "default": 10},
        },
        ["query"],
    ),
    VISIT: _function(
        VISIT,
        "Open a web page and get the information on it that serves your goal (a summary with supporting "
        "evidence). Use it on a URL from a search result.",
        {
            "url": {"type": "string", "description": "The page's full http:// or https:// URL"},
            "goal": {"type": "string", "description": "What you want to learn from this page"},
        },
        ["url", "goal"],
    ),
    IMAGE_SEARCH: _function(
        IMAGE_SEARCH,
        "Find images on the web. search_type='text' searches by a text query; search_type='reverse' finds pages "
        "showing an image: pass image_url as original_image, original_image_N, tool_image_N, or an http(s) image "
        "URL. Returns image URLs with their titles and pages. Searches are limited, so choose carefully.",
        {
            "search_type": {
                "type": "string",
                "enum": ["text", "reverse"],
                "description": "'text' for a text query, 'reverse' for reverse image search",
                "default": "text",
            },
            "query": {"type": "string", "description": "The text query (text search)"},
            "image_url": {
                "type": "string",
                "description": "original_image, original_image_N, tool_image_N, or an image URL (reverse search)",
            },
            "max_results": {"type": "integer", "description": "How many results to return (default 5)", "default": 5},
        },
        [],
    ),
}


def tool_schemas(*, web: bool) -> list[dict[str, Any]]:
    """The schemas offered, in the official order; the web tools only when ``web`` is on."""
    return [SCHEMAS[name] for name in TOOL_ORDER if web or name == CODE_TOOL]


Summarize = Callable[[str, str, str], str]
"""``(url, goal, page_text) -> summary text``: the agent's own model summarising a visited page."""
LocalImage = Callable[[str], "bytes | None"]
"""The bytes of a named episode image (``original_image``, ``tool_image_3``), None if there is none."""


@dataclass
class SearchCounts:
    """Successful calls per limited tool in one episode (the official counting: failures do not count)."""

    used: dict[str, int] = field(default_factory=dict)

    def exceeded(self, tool: str) -> str | None:
        limit = SEARCH_LIMITS.get(tool)
        if limit is None or self.used.get(tool, 0) < limit:
            return None
        return f"Maximum number of '{tool}' calls ({limit}) exceeded. Current count: {self.used.get(tool, 0)}"

    def count(self, tool: str) -> None:
        self.used[tool] = self.used.get(tool, 0) + 1

    def usage_line(self) -> str:
        """``[Tool Usage: image_search 1/100, web_search 0/100]`` (appended where the official runner does)."""
        parts = [f"{name} {self.used.get(name, 0)}/{limit}" for name, limit in SEARCH_LIMITS.items()]
        return f"\n\n[Tool Usage: {', '.join(parts)}]"


def run_web_tool(
    web: WebTools, name: str, arguments: dict[str, Any], local_image: LocalImage, summarize: Summarize
) -> tuple[str, ToolResult | None]:
    """The text the model gets for one web tool call, and the provider result behind it (for the trace)."""
    if name == WEB_SEARCH:
        return web_search(web, arguments)
    if name == IMAGE_SEARCH:
        return image_search(web, arguments, local_image)
    if name == VISIT:
        return visit(web, arguments, summarize)
    return f"Error: unknown tool {name!r}", None


def web_search(web: WebTools, arguments: dict[str, Any]) -> tuple[str, ToolResult | None]:
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        return "Error: No search query provided", None
    wanted = _count(arguments.get("max_results"), WEB_SEARCH_RESULTS)
    result = web.google_search(query)
    if not result.ok or result.data is None:
        return f"Error: {result.error}", result
    hits = list(result.data.get("results") or [])[:wanted]
    if not hits:
        return f"No results found for query: '{query}'", result
    lines = [
        f"{n}. [{hit.get('title') or 'No title'}]({hit.get('link') or 'No URL'})\n"
        f"   {hit.get('snippet') or 'No description'}"
        for n, hit in enumerate(hits, start=1)
    ]
    return f"Search results for '{query}':\n\n" + "\n\n".join(lines), result


def image_search(web: WebTools, arguments: dict[str, Any], local_image: LocalImage) -> tuple[str, ToolResult | None]:
    kind = arguments.get("search_type") or "text"
    wanted = _count(arguments.get("max_results"), IMAGE_SEARCH_RESULTS)
    if kind == "reverse":
        return _reverse(web, arguments.get("image_url"), wanted, local_image)
    if kind != "text":
        return f"Error: search_type must be 'text' or 'reverse', got {kind!r}", None
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        return "Error: No query provided for text search", None
    search = web.search

    def produce() -> dict[str, Any]:
        from pixelbox.harness.web import ProviderError

        images = getattr(search, "images", None)
        if images is None:
            raise ProviderError("image_search is not available: no image search provider is configured")
        return dict(images(query.strip()))

    result = web.cached(
        IMAGE_SEARCH, {"query": query.strip()}, produce, lambda data: ToolResult(IMAGE_SEARCH, {}, True, "", data=data)
    )
    if not result.ok or result.data is None:
        return f"Error: {result.error}", result
    hits = list(result.data.get("results") or [])[:wanted]
    if not hits:
        return f"No images found for query: '{query}'", result
    return _image_lines(hits), result


def _reverse(web: WebTools, ref: Any, wanted: int, local_image: LocalImage) -> tuple[str, ToolResult | None]:
    if not isinstance(ref, str) or not ref.strip():
        return "Error: No image_url provided for reverse search", None
    ref = ref.strip()
    if ref.startswith(("http://", "https://")):
        result = web.google_lens_search(ref)
    else:
        data = local_image(ref)
        if data is None:
            return (
                f"Error: {ref!r} is not an image of this task; use original_image, original_image_N, tool_image_N "
                "or an http(s) image URL",
                None,
            )
        result = web.google_lens_search(data)
    if not result.ok or result.data is None:
        return f"Error: {result.error}", result
    hits = list(result.data.get("results") or [])[:wanted]
    if not hits:
        return f"No matches found for reverse image search of: {ref}", result
    return _image_lines(hits), result


def _image_lines(hits: list[dict[str, Any]]) -> str:
    entries = [
        f"Image: {hit.get('image_url') or hit.get('link') or 'N/A'}, Text: {hit.get('title') or 'No title'}, "
        f"Webpage Url: {hit.get('link') or hit.get('source') or 'N/A'}"
        for hit in hits
    ]
    return "```\n" + "\n\n".join(entries) + "\n```"


def visit(web: WebTools, arguments: dict[str, Any], summarize: Summarize) -> tuple[str, ToolResult | None]:
    url, goal = arguments.get("url"), arguments.get("goal")
    if not isinstance(url, str) or not url.strip():
        return "Error: No URL provided", None
    page = web.fetch_webpage(url.strip(), max_chars=PAGE_CHARS)
    if not page.ok or page.data is None:
        return f"Error: {page.error}", page
    content = str(page.data.get("content") or "")
    if not content.strip():
        return f"Error: No content extracted from {url}", page
    if not isinstance(goal, str) or not goal.strip():
        return f"Content from {url}:\n\nGoal: {goal}\n\n{content}", page
    return summary_text(url, goal, summarize(url, goal, content)), page


SUMMARY_INSTRUCTIONS = (
    "You read web pages for a research assistant. Below is the text of the page {url}. The assistant's goal: "
    "{goal}\n\nFind the parts of the page that bear on the goal, quote or list the key facts, then say briefly "
    'how they serve the goal. Reply with one JSON object: {{"evidence": "...", "summary": "..."}}.\n\n'
    "Page text:\n{content}"
)


def summary_request(url: str, goal: str, content: str) -> list[dict[str, Any]]:
    """The one-message conversation that asks the agent's model to summarise a page toward ``goal``."""
    return [{"role": "user", "content": SUMMARY_INSTRUCTIONS.format(url=url, goal=goal, content=content)}]


def summary_text(url: str, goal: str, reply: str) -> str:
    """The visit result in the official shape: evidence and summary when the reply holds that JSON, else the reply."""
    parsed = json_object_in(reply)
    if parsed is None:
        return f"Summary from {url}:\n\n{reply}"
    text = f"The useful information in {url} for user goal '{goal}' as follows:\n\n"
    if parsed.get("evidence"):
        text += f"**Evidence in page:**\n{parsed['evidence']}\n\n"
    if parsed.get("summary"):
        text += f"**Summary:**\n{parsed['summary']}\n\n"
    return text


def _count(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
