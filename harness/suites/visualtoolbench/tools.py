"""VisualToolBench's six tools as function-calling schemas: the official names and parameters, our wording.

``python_image_processing`` and ``python_interpreter`` run in the episode's sandbox; the first lists
the images it may read (the turn's image and every image produced so far) and the directory to
save ``transformed_image_{i}.png`` into, numbered from 0, so its description changes as images
appear (the official harness rebuilds the tool list every round too). ``google_search``,
``browser_get_page_text`` and ``historical_weather`` go through :mod:`.web`; ``calculator`` is
:mod:`.calculator`. The descriptions are our own wording of what each tool does here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

IMAGE_TOOL, PYTHON_TOOL, CALCULATOR = "python_image_processing", "python_interpreter", "calculator"
TOOL_NAMES = (IMAGE_TOOL, PYTHON_TOOL, "google_search", "browser_get_page_text", "historical_weather", CALCULATOR)
"""In the official schema order."""
CODE_TOOLS = (IMAGE_TOOL, PYTHON_TOOL)
MAX_CODE = 5000


def _code_parameter() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "The Python source to run.",
                "minLength": 1,
                "maxLength": MAX_CODE,
            }
        },
        "required": ["code"],
    }


def image_tool_description(images: Sequence[str], save_dir: str, stateful: bool = False) -> str:
    """What ``python_image_processing`` tells the model: the readable images and where outputs go."""
    memory = (
        "Variables persist from one call to the next."
        if stateful
        else "Every call starts in a fresh interpreter: nothing defined in an earlier call is kept, only saved files."
    )
    return (
        "Run Python code that transforms an image and saves the result as a PNG file.\n"
        f"- Source images you can open (choose one): {list(images)}.\n"
        "- Use PIL, NumPy or OpenCV; matplotlib cannot display anything here.\n"
        f"- Save each result in {save_dir} as transformed_image_i.png, where i is 0 for the first image you save "
        "and goes up by one every time, so no file is replaced; for example "
        f'img.save(f"{save_dir}/transformed_image_{{i}}.png", "PNG").\n'
        f"- {memory} The saved images are shown to you after the call."
    )


PYTHON_DESCRIPTION = (
    "Run general Python code and get back what it prints (stdout) and any error (stderr). NumPy, SciPy, "
    "Pillow, OpenCV, scikit-image and matplotlib are installed; there is no network access."
)


def tool_schemas(images: Sequence[str], save_dir: str, *, stateful: bool = False) -> list[dict[str, Any]]:
    """The six tools, in the official order, for a round whose readable images are ``images``."""
    text = {"type": "string"}
    specs: list[tuple[str, str, dict[str, Any]]] = [
        (IMAGE_TOOL, image_tool_description(images, save_dir, stateful), _code_parameter()),
        (PYTHON_TOOL, PYTHON_DESCRIPTION, _code_parameter()),
        (
            "google_search",
            "Search the web with Google and get the top results (title, snippet, URL). Good for facts, news "
            "and anything current.",
            {
                "type": "object",
                "properties": {
                    "query": {**text, "description": "What to search for"},
                    "num_results": {"type": "integer", "description": "How many results, 1 to 10", "default": 5},
                },
                "required": ["query"],
            },
        ),
        (
            "browser_get_page_text",
            "Download a web page and return its readable text (for articles, documentation and other pages).",
            {
                "type": "object",
                "properties": {"url": {**text, "description": "Address of the page"}},
                "required": ["url"],
            },
        ),
        (
            "historical_weather",
            "Weather for a place on a given day.",
            {
                "type": "object",
                "properties": {
                    "location": {**text, "description": "A city ('Paris, FR') or coordinates ('48.85,2.35')"},
                    "date": {**text, "description": "The day, as YYYY-MM-DD"},
                },
                "required": ["location", "date"],
            },
        ),
        (
            CALCULATOR,
            "Evaluate an arithmetic expression: numbers, + - * / % **, parentheses, and sqrt, sin, cos, tan, "
            "log, exp of one argument.",
            {
                "type": "object",
                "properties": {"expression": {**text, "description": 'The expression, e.g. "2 * 3.14 * 5"'}},
                "required": ["expression"],
            },
        ),
    ]
    return [{"type": "function", "function": {"name": n, "description": d, "parameters": p}} for n, d, p in specs]
