"""The 14 Agent-X tools, offered as real function-calling tools in ``executed`` mode, and how each runs.

Names and parameters follow ``toolmeta.json``; the descriptions here are ours (the dataset's own
``toolmeta.json``, when present, is what the ``official`` single-shot prompt shows). Images are
named by number: ``image`` 1 is the first input (or video frame), later images produced by tools
take the next numbers.

How they run:

- in the task's sandbox: ``Calculator`` (the expression with only ``math`` in scope),
  ``DrawBoundingBox`` and ``OverlayText`` (PIL drawing; the result is a new image), ``CodePlotter``
  (matplotlib code; the figure is captured), ``Solver`` (sympy code defining ``solution()``; the
  suite's sandboxes let model code import sympy and mpmath), the crop of ``RegionDescriber`` (the
  canonical ``crop``) and ``OCR`` (tesseract run by the kernel's trusted OCR tool, words with their
  boxes, an ``ocr`` event);
- by a vision model (``PIXELBOX_AGENTX_VISION=openai:MODEL[@BASE_URL]``, any OpenAI-compatible
  endpoint; answers recorded per task and replayed): ``SceneDescriber``, ``ObjectCounter``,
  ``RegionDescriber`` (on the crop), ``LocateObjectByText``, ``MathOCR``;
- by an images endpoint (``PIXELBOX_AGENTX_IMAGES=openai:MODEL[@BASE_URL]``, ``/images/generations``
  and ``/images/edits``; recorded and replayed likewise): ``ImageGenerator``, ``ImageStylization``,
  whose images enter the sandbox as the next image (a ``generate`` event); without an endpoint they
  answer that they are not available, and why;
- through the web providers (record/replay): ``WebSearch``.
"""

from __future__ import annotations

from typing import Any

IMAGE = {"type": "integer", "description": "Which image: 1 is the first input image (or video frame)"}
BBOX = {"type": "string", "description": "The region in pixels as '(x1, y1, x2, y2)'"}


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


SCHEMAS: dict[str, dict[str, Any]] = {
    "Calculator": _tool(
        "Calculator",
        "Evaluate one Python arithmetic expression; math functions (sqrt, log, sin...) are available without import.",
        {"expression": _text("The expression, e.g. '(3 + 4) * sqrt(2)'")},
        ["expression"],
    ),
    "OCR": _tool("OCR", "Read all the text in an image, with each word's box.", {"image": IMAGE}, ["image"]),
    "ObjectCounter": _tool(
        "ObjectCounter",
        "Count the objects of one kind in an image.",
        {"image": IMAGE, "text": _text("What to count, in English")},
        ["image", "text"],
    ),
    "SceneDescriber": _tool(
        "SceneDescriber", "A short description of what an image shows.", {"image": IMAGE}, ["image"]
    ),
    "WebSearch": _tool(
        "WebSearch",
        "Search the web and get the top results' titles, links and snippets.",
        {
            "query": _text("What to search for"),
            "k": {"type": "integer", "description": "How many results (default 10)"},
        },
        ["query"],
    ),
    "RegionDescriber": _tool(
        "RegionDescriber",
        "Describe one attribute (colour, text, material, action...) of a region of an image.",
        {"image": IMAGE, "bbox": BBOX, "attribute": _text("What to describe about the region")},
        ["image", "bbox", "attribute"],
    ),
    "LocateObjectByText": _tool(
        "LocateObjectByText",
        "Find objects matching a description; returns their boxes in pixels.",
        {
            "image": IMAGE,
            "text": _text("The object to find"),
            "top1": {"type": "boolean", "description": "Only the best match (default true)"},
        },
        ["image", "text"],
    ),
    "CodePlotter": _tool(
        "CodePlotter",
        "Run Python plotting code (matplotlib) and get the figure as a new image.",
        {"command": _text("Python code that draws the figure")},
        ["command"],
    ),
    "MathOCR": _tool("MathOCR", "Read a mathematical expression in an image as LaTeX.", {"image": IMAGE}, ["image"]),
    "Solver": _tool(
        "Solver",
        "Run sympy code that defines a function solution() and get what it returns.",
        {"command": _text("Python code using sympy that defines solution()")},
        ["command"],
    ),
    "DrawBoundingBox": _tool(
        "DrawBoundingBox",
        "Draw a box (and an optional label) on an image; returns the new image.",
        {"image": IMAGE, "bbox": BBOX, "annotation": _text("Optional label written by the box")},
        ["image", "bbox"],
    ),
    "OverlayText": _tool(
        "OverlayText",
        "Write text on an image at a position; returns the new image.",
        {
            "image": IMAGE,
            "text": _text("The text"),
            "position": _text("Where: '(x, y)' in pixels, or top-left, top, top-right, center, bottom-left..."),
            "color": _text("Text colour (default red)"),
        },
        ["image", "text", "position"],
    ),
    "ImageGenerator": _tool(
        "ImageGenerator", "Generate an image from keywords.", {"keywords": _text("What to depict")}, ["keywords"]
    ),
    "ImageStylization": _tool(
        "ImageStylization",
        "Restyle an image following an instruction.",
        {"image": IMAGE, "instruction": _text("How to restyle it")},
        ["image", "instruction"],
    ),
}
SANDBOX_TOOLS = ("Calculator", "DrawBoundingBox", "OverlayText", "CodePlotter", "Solver")
VISION_TOOLS = ("SceneDescriber", "ObjectCounter", "RegionDescriber", "LocateObjectByText", "MathOCR")
GENERATION_TOOLS = ("ImageGenerator", "ImageStylization")


def tool_schemas(*, web: bool) -> list[dict[str, Any]]:
    """Every tool in toolmeta order; WebSearch only with web tools on."""
    return [schema for name, schema in SCHEMAS.items() if web or name != "WebSearch"]


VISION_PROMPTS = {
    "SceneDescriber": "Describe briefly what this image shows.",
    "ObjectCounter": "How many {text} are in this image? Reply with the number only.",
    "RegionDescriber": "This is a region cut out of a larger image. Describe its {attribute}, briefly.",
    "LocateObjectByText": (
        "Find {text} in this image of {width}x{height} pixels. Reply with one box per line as (x1, y1, x2, y2) "
        "in pixels{top1}."
    ),
    "MathOCR": "Transcribe the mathematical expression in this image as LaTeX. Reply with the LaTeX only.",
}


def parse_bbox(value: Any) -> tuple[int, int, int, int] | None:
    """``'(x1, y1, x2, y2)'`` or a list of four numbers as a non-empty pixel box, else None."""
    import re

    if isinstance(value, (list, tuple)) and len(value) == 4:
        numbers = [str(v) for v in value]
    elif isinstance(value, str):
        numbers = re.findall(r"-?\d+(?:\.\d+)?", value)
    else:
        return None
    if len(numbers) != 4:
        return None
    x1, y1, x2, y2 = (round(float(n)) for n in numbers)
    return (x1, y1, x2, y2) if x2 > x1 and y2 > y1 else None


CALC_BUILTINS = ("abs", "round", "min", "max", "pow", "sum")


def calculator_code(expression: str) -> str:
    """Sandbox code printing the value of one arithmetic expression (math names imported, nothing else).

    Raises ``ValueError`` saying what is wrong when ``expression`` is not one expression over numbers,
    math functions and a few builtins (the official tool: "a single Python expression, no imports").
    """
    import ast
    import math

    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"expression is not one Python expression: {exc.msg}") from None
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})
    unknown = [n for n in names if not (n in CALC_BUILTINS or (hasattr(math, n) and not n.startswith("_")))]
    if unknown or any(isinstance(n, (ast.Attribute, ast.Lambda)) for n in ast.walk(tree)):
        raise ValueError(f"only numbers, math functions and {', '.join(CALC_BUILTINS)} may be used, not {unknown}")
    imported = [n for n in names if n not in CALC_BUILTINS]
    head = f"from math import {', '.join(imported)}\n" if imported else ""
    return f"{head}print({ast.unparse(tree)})\n"


def draw_box_code(path: str, box: tuple[int, int, int, int], annotation: str, out: str) -> str:
    label = f"draw.text(({box[0]}, {max(0, box[1] - 14)}), {annotation!r}, fill=(255, 0, 0))\n" if annotation else ""
    return (
        "from PIL import Image, ImageDraw\n"
        f"canvas = Image.open({path!r}).convert('RGB')\n"
        "draw = ImageDraw.Draw(canvas)\n"
        f"draw.rectangle({box!r}, outline=(255, 0, 0), width=3)\n"
        f"{label}canvas.save({out!r})\n"
        f"print('drew the box {box} on the image')\n"
    )


POSITIONS = {
    "top-left": (0.02, 0.02),
    "top": (0.45, 0.02),
    "top-right": (0.8, 0.02),
    "center": (0.45, 0.48),
    "left": (0.02, 0.48),
    "right": (0.8, 0.48),
    "bottom-left": (0.02, 0.92),
    "bottom": (0.45, 0.92),
    "bottom-right": (0.8, 0.92),
}


def text_position(position: str, size: tuple[int, int]) -> tuple[int, int]:
    """``'(x, y)'`` in pixels, or a named place (top-left, center, ...), as a pixel position."""
    import re

    numbers = re.findall(r"-?\d+(?:\.\d+)?", position)
    if len(numbers) >= 2:
        return round(float(numbers[0])), round(float(numbers[1]))
    fx, fy = POSITIONS.get(position.strip().lower().replace(" ", "-"), POSITIONS["top-left"])
    return round(fx * size[0]), round(fy * size[1])


def overlay_text_code(path: str, text: str, xy: tuple[int, int], color: str, out: str) -> str:
    return (
        "from PIL import Image, ImageDraw\n"
        f"canvas = Image.open({path!r}).convert('RGB')\n"
        f"ImageDraw.Draw(canvas).text({xy!r}, {text!r}, fill={color!r})\n"
        f"canvas.save({out!r})\n"
        f"print('wrote the text at {xy}')\n"
    )


def plot_code(command: str, out: str) -> str:
    return (
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        f"{command}\n"
        f"plt.savefig({out!r})\nplt.close('all')\nprint('saved the figure')\n"
    )


def solver_code(command: str) -> str:
    return f"{command}\nprint(solution())\n"
