"""MMSearch-Plus tools: text search and image search with summaries, and Set-of-Mark's zoom_in.

The paper's agent (unreleased) searches through SerpApi and has an MLLM summarise what it finds;
we follow its description with pixelbox's providers and our own words:

- ``text_search(queries)``: one search round of 1-5 queries; for each query the top 5 results are
  read (page text through the page reader, the snippet when the page cannot be read) and each is
  summarised for the question into ``web_info`` (what the page says that bears on the question)
  and ``related_info`` (how it connects to the question's image);
- ``image_search(image)`` (full rollout) or ``image_search(index)`` (Set-of-Mark): a reverse image
  search of a whole input image, or of one marked region; the top 10 results are summarised
  together. The search and its summary are cached per image (by its SHA-256), as the paper caches
  image-search summaries per image;
- ``zoom_in(index)`` (Set-of-Mark): the marked region, cut out in the sandbox.

Every provider answer and every summary goes through the task's web record/replay cache
(``WebTools.cached``), so a recorded run replays with no provider and no summariser call. The
summariser is the agent's own model (the paper used Gemini), shown the question's images beside each
prompt (so ``related_info`` can tie a result to the image); its replies are kept in the trace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelbox.harness.suites.shared import json_object_in
from pixelbox.harness.web import ToolResult, WebTools

TEXT_SEARCH = "text_search"
IMAGE_SEARCH = "image_search"
ZOOM_IN = "zoom_in"
SUMMARY_TOOL = "mmsearch_summary"
"""The cache's name for summaries (recorded and replayed like provider answers)."""
MAX_QUERIES = 5
TEXT_RESULTS = 5
IMAGE_RESULTS = 10
PAGE_CHARS = 6000
"""Page text given to the summariser per result."""


@dataclass(frozen=True)
class Summarise:
    """The summarising model: ``ask(prompt) -> reply`` shows it the question's images beside the prompt;
    ``context`` (their SHA-256s, :func:`images_context`) is part of each summary's cache key."""

    ask: Callable[[str], str]
    context: str = ""

    def __call__(self, prompt: str) -> str:
        return self.ask(prompt)


def images_context(paths: Sequence[Path]) -> str:
    """The SHA-256s of the images shown to the summariser, comma-separated (a cache-key part)."""
    return ",".join(hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths)


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


TEXT_SCHEMA = _function(
    TEXT_SEARCH,
    "Search the web with one to five queries (one search round). For each query the top 5 pages are read "
    "and summarised for your question: what each page says about it, and how it relates to the image.",
    {
        "queries": {
            "type": "array",
            "items": {"type": "string"},
            "description": "1-5 search queries, each refined from what you know so far",
        }
    },
    ["queries"],
)
WHOLE_IMAGE_SCHEMA = _function(
    IMAGE_SEARCH,
    "Reverse image search: find web pages that show one of the question's images. The top 10 results are "
    "summarised for your question.",
    {"image": {"type": "integer", "description": "Which image: 1 for the first, 2 for the second, ..."}},
    ["image"],
)
MARK_SEARCH_SCHEMA = _function(
    IMAGE_SEARCH,
    "Reverse image search on one numbered region of the marked image: the region is cut out and searched, "
    "and the top 10 results are summarised for your question.",
    {"index": {"type": "integer", "description": "The number of the marked region"}},
    ["index"],
)
ZOOM_SCHEMA = _function(
    ZOOM_IN,
    "Zoom in on one numbered region of the marked image: returns that region cut out and enlarged.",
    {"index": {"type": "integer", "description": "The number of the marked region"}},
    ["index"],
)


def tool_schemas(*, som: bool, web: bool) -> list[dict[str, Any]]:
    """Set-of-Mark: zoom_in, image_search(index), text_search; full rollout: text_search, image_search(image)."""
    if som:
        return [ZOOM_SCHEMA, *([MARK_SEARCH_SCHEMA, TEXT_SCHEMA] if web else [])]
    return [TEXT_SCHEMA, WHOLE_IMAGE_SCHEMA] if web else []


PAGE_PROMPT = """You help a research agent answer a question about an image by reading one search result.

Question: {question}
Search query: {query}
Result: {title} ({link})
Snippet: {snippet}
Page text (may be cut):
{content}

Reply with one JSON object and nothing else:
{{"web_info": "the facts on this page that help answer the question, or 'none'",
  "related_info": "how this result relates to the question's image (same place, object, person, event), \
or 'unclear'"}}"""

IMAGE_PROMPT = """You help a research agent answer a question about an image. A reverse image search of {what} \
returned the results below (title, page, image).

Question: {question}
Results:
{results}

In a few sentences, say what these results tell about the searched image (what or where it is, names, dates, \
sources that agree) and which results look most reliable. Say so when they do not identify it."""


def text_search(
    web: WebTools, queries: Any, question: str, summarise: Summarise
) -> tuple[str, list[dict[str, Any]], str | None]:
    """The round's text for the model, what each query returned (for the trace), and an error if the call was bad."""
    if isinstance(queries, str):
        queries = [queries]
    if not isinstance(queries, list) or not queries or not all(isinstance(q, str) and q.strip() for q in queries):
        return "Error: queries must be a list of 1-5 non-empty strings", [], "bad queries"
    if len(queries) > MAX_QUERIES:
        return f"Error: at most {MAX_QUERIES} queries per round, got {len(queries)}", [], "too many queries"
    blocks, records = [], []
    for query in (q.strip() for q in queries):
        result = web.google_search(query)
        record: dict[str, Any] = {"query": query, "search": result.to_dict(), "pages": []}
        records.append(record)
        if not result.ok or result.data is None:
            blocks.append(f'Query "{query}": Error: {result.error}')
            continue
        hits = list(result.data.get("results") or [])[:TEXT_RESULTS]
        if not hits:
            blocks.append(f'Query "{query}": no results')
            continue
        lines = [f'Query "{query}":']
        for n, hit in enumerate(hits, start=1):
            info, page = _page_summary(web, hit, query, question, summarise)
            record["pages"].append(page)
            lines.append(
                f"[{n}] {hit.get('title') or 'No title'} ({hit.get('link') or 'no link'})\n"
                f"    web_info: {info.get('web_info') or 'none'}\n"
                f"    related_info: {info.get('related_info') or 'unclear'}"
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks), records, None


def _page_summary(
    web: WebTools, hit: dict[str, Any], query: str, question: str, summarise: Summarise
) -> tuple[dict[str, str], dict[str, Any]]:
    link = str(hit.get("link") or "")
    content, fetched = str(hit.get("snippet") or ""), None
    if link:
        page = web.fetch_webpage(link, max_chars=PAGE_CHARS)
        fetched = page.ok
        if page.ok and page.data is not None and str(page.data.get("content") or "").strip():
            content = str(page.data["content"])[:PAGE_CHARS]
    prompt = page_prompt(question, query, hit, content)
    reply = cached_summary(web, prompt, summarise)
    parsed = json_object_in(reply.data.get("text", "") if reply.ok and reply.data else "")
    info = {k: str(parsed.get(k) or "") for k in ("web_info", "related_info")} if parsed else {}
    if not info and reply.ok and reply.data:
        info = {"web_info": str(reply.data.get("text") or ""), "related_info": ""}
    if not reply.ok:
        info = {"web_info": f"(not summarised: {reply.error}) {hit.get('snippet') or ''}", "related_info": ""}
    return info, {"link": link, "page_read": fetched, "summary": reply.to_dict()}


def image_search(
    web: WebTools, data: bytes, what: str, question: str, summarise: Summarise
) -> tuple[str, dict[str, Any]]:
    """The summarised reverse search of ``data`` (``what`` names it: 'image 1', 'region 3 of image 1')."""
    result = web.google_lens_search(data)
    record: dict[str, Any] = {"image_sha256": hashlib.sha256(data).hexdigest(), "search": result.to_dict()}
    if not result.ok or result.data is None:
        return f"Error: {result.error}", record
    hits = list(result.data.get("results") or [])[:IMAGE_RESULTS]
    if not hits:
        return f"The reverse image search of {what} found nothing.", record
    listing = image_listing(hits)
    reply = cached_summary(web, IMAGE_PROMPT.format(what=what, question=question, results=listing), summarise)
    record["summary"] = reply.to_dict()
    summary = str(reply.data.get("text") or "") if reply.ok and reply.data else f"(not summarised: {reply.error})"
    return f"Reverse image search of {what}: top {len(hits)} results\n{listing}\n\nSummary: {summary}", record


def page_prompt(question: str, query: str, hit: dict[str, Any], content: str) -> str:
    """The summariser's prompt for one text-search result (``content``: the page text, else the snippet)."""
    return PAGE_PROMPT.format(
        question=question,
        query=query,
        title=hit.get("title") or "",
        link=hit.get("link") or "",
        snippet=hit.get("snippet") or "",
        content=content,
    )


def image_listing(hits: list[dict[str, Any]]) -> str:
    """The numbered lines of reverse-image-search results (shown to the model and to the summariser)."""
    return "\n".join(
        f"{n}. {h.get('title') or 'No title'} | page: {h.get('link') or h.get('source') or 'n/a'} | "
        f"image: {h.get('image_url') or h.get('thumbnail') or 'n/a'}"
        for n, h in enumerate(hits[:IMAGE_RESULTS], start=1)
    )


def summary_key(prompt: str, context: str = "") -> dict[str, str]:
    """The cache key of one summary: its prompt and the images shown with it."""
    key = {"prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest()}
    return {**key, "images_sha256": context} if context else key


def cached_summary(web: WebTools, prompt: str, summarise: Summarise) -> ToolResult:
    """One summary through the record/replay cache, keyed by the prompt's SHA-256."""
    key = summary_key(prompt, summarise.context)

    def produce() -> dict[str, Any]:
        return {"text": summarise(prompt)}

    return web.cached(SUMMARY_TOOL, key, produce, lambda data: ToolResult(SUMMARY_TOOL, key, True, "", data=data))
