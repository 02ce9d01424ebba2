"""How web-tool results read to the model: short, numbered, plain text."""

from __future__ import annotations

from typing import Any


def search_text(data: dict[str, Any]) -> str:
    """Numbered organic results, preceded by Google's direct answer when there is one."""
    lines = [f"Search results for {data.get('query', '')!r}:"]
    answer = data.get("answer_box") or {}
    if answer.get("answer") or answer.get("snippet"):
        lines.append(f"Answer: {answer.get('answer') or answer.get('snippet')}")
    graph = data.get("knowledge_graph") or {}
    if graph.get("title"):
        lines.append(f"Knowledge panel: {graph['title']} - {graph.get('description', '')}".rstrip(" -"))
    results = data.get("results") or []
    lines += [
        f"{i}. {r.get('title', '')}\n   {r.get('link', '')}\n   {r.get('snippet', '')}"
        for i, r in enumerate(results, 1)
    ]
    return "\n".join(lines) if results or len(lines) > 1 else f"No results for {data.get('query', '')!r}."


def lens_text(data: dict[str, Any]) -> str:
    """Numbered visual matches with their source sites."""
    results = data.get("results") or []
    if not results:
        return "Reverse image search found no matches."
    lines = ["Reverse image search matches:"]
    lines += [
        f"{i}. {r.get('title', '')} ({r.get('source', '')})\n   {r.get('link', '')}" for i, r in enumerate(results, 1)
    ]
    return "\n".join(lines)


def cut_page(data: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """The page with its content cut to ``max_chars``; ``total_chars`` and ``truncated`` say what was cut."""
    content = str(data.get("content", ""))
    return {**data, "content": content[:max_chars], "total_chars": len(content), "truncated": len(content) > max_chars}


def page_text(page: dict[str, Any]) -> str:
    """Title, URL and content, with a notice when the content was cut."""
    text = f"Title: {page.get('title', '')}\nURL: {page.get('url', '')}\n\n{page.get('content', '')}"
    if page.get("truncated"):
        text += f"\n\n[page truncated: showing {len(page['content'])} of {page['total_chars']} characters]"
    return text


def download_text(meta: dict[str, Any]) -> str:
    """One line describing a downloaded image."""
    size = f"{meta['width']}x{meta['height']}, {meta['bytes']} bytes"
    return f"Downloaded image ({meta['format']}, {size}) from {meta['url']}"
