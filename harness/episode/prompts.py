"""Default system prompts for code mode and atomic mode, and user-supplied templates.

Templates use ``string.Template`` placeholders (``$name``), so braces in code samples need no
escaping. Available placeholders: ``$images`` (one line per input image), ``$image_count``,
``$input_env`` (where code finds the inputs), ``$output_env`` (where it saves), ``$output_name``
(how new images are named), ``$web_tools`` (the web tools offered, or a sentence saying there are
none), ``$image_tools`` (atomic mode: the tool list), ``$max_rounds``, ``$max_tool_calls``,
``$execution_timeout``, ``$code_blocks`` (code mode: which ``<code>`` blocks of a turn run).
Unknown placeholders are an error when the template is loaded.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pixelbox.harness.modes import CODE, Mode
from pixelbox.runtime.profiles import PROFILES

CODE_SYSTEM = """\
You answer questions about images by looking closely at them. You can run Python to inspect and \
transform the images, and you may use the web tools below when the question needs outside knowledge.

Running code
- Put Python between <code> and </code>. $code_blocks Code runs in one persistent Jupyter kernel, \
so variables, imports and helper functions survive from one block to the next.
- The input images: $images
  $input_env
- Save every image you want to look at with PIL, OpenCV or matplotlib into $output_env. Each saved \
image gets the next image index ($output_name) and is shown to you after the block, together with \
everything the block printed. Use print() for values; there is no display.
- Available: PIL, cv2 (OpenCV), numpy, scipy, matplotlib. There is no network access from code.
- A block may run for at most $execution_timeout seconds.

Web tools
$web_tools

Answering
- Think step by step. Zoom in on small details (crop, then enlarge) rather than guessing.
- When you are sure, reply with the final answer inside <answer> and </answer>, in a turn with no \
code and no tool calls. An answer in a turn that also runs code or calls tools is not accepted.
- You have at most $max_rounds turns and $max_tool_calls code blocks and tool calls together.
"""

CODE_BLOCK_RULES = {
    "all": "Every block of a turn runs, in order.",
    "first": "Only the first <code> block of a turn runs, and only once it is closed with </code>: write one "
    "block per turn; any further block in the same turn is ignored.",
}
"""What ``$code_blocks`` says for each reading (:data:`pixelbox.harness.episode.codemode.CODE_BLOCKS`)."""

ATOMIC_SYSTEM = """\
You answer questions about images by looking closely at them. You cannot run code; instead you call \
image tools as functions, and you may use the web tools when the question needs outside knowledge.

Images
- The input images: $images
- Images are addressed by index. Every image tool works on the image you name with image_index and \
adds its result as a new image with the next index, which is shown to you after the call.
- crop takes bbox_2d = [x1, y1, x2, y2] in coordinates normalized to 0-1000 ((0, 0) is the top-left \
corner, (1000, 1000) the bottom-right) and an optional zoom_scale (0.5-5).

Image tools
$image_tools

Web tools
$web_tools

Answering
- Think step by step. Zoom in on small details rather than guessing.
- When you are sure, reply with the final answer inside <answer> and </answer>, in a turn with no \
tool calls. An answer in a turn that also calls tools is not accepted.
- You have at most $max_rounds turns and $max_tool_calls tool calls.
"""

USER_TEMPLATE = "$prompt"
"""The first user message's text (the images follow it as image parts)."""

WEB_TOOL_LINES = {
    "google_search": "google_search(query): web search; returns titles, links and snippets.",
    "google_lens_search": "google_lens_search(image_index): reverse image search on one of the images.",
    "fetch_webpage": "fetch_webpage(url): the text of a web page.",
    "download_image": "download_image(url): adds an image from the web as the next image index.",
}
NO_WEB_TOOLS = "No web tools are available for this task."

_PLACEHOLDERS = frozenset(
    {
        "images",
        "image_count",
        "input_env",
        "output_env",
        "output_name",
        "web_tools",
        "image_tools",
        "max_rounds",
        "max_tool_calls",
        "execution_timeout",
        "code_blocks",
        "prompt",
    }
)


class TemplateError(ValueError):
    """A prompt template uses a placeholder that does not exist; the message lists the valid ones."""


@dataclass(frozen=True)
class PromptTemplates:
    """The templates of one run. ``None`` means the default for the mode."""

    system: str | None = None
    user: str = USER_TEMPLATE

    def __post_init__(self) -> None:
        for text in (self.system, self.user):
            if text is not None:
                check_template(text)

    @classmethod
    def from_files(cls, system: str | Path | None = None, user: str | Path | None = None) -> PromptTemplates:
        """Load templates from text files (either may be omitted)."""
        return cls(
            system=Path(system).read_text(encoding="utf-8") if system else None,
            user=Path(user).read_text(encoding="utf-8") if user else USER_TEMPLATE,
        )

    def system_text(self, mode: Mode, values: dict[str, Any]) -> str:
        """The system prompt for ``mode`` with ``values`` filled in."""
        template = self.system if self.system is not None else (CODE_SYSTEM if mode == CODE else ATOMIC_SYSTEM)
        return string.Template(template).safe_substitute({k: str(v) for k, v in values.items()})

    def user_text(self, values: dict[str, Any]) -> str:
        """The first user message's text."""
        return string.Template(self.user).safe_substitute({k: str(v) for k, v in values.items()})


def check_template(text: str) -> None:
    """Raise :class:`TemplateError` for placeholders other than the documented ones."""
    names = {
        m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(text) if not m.group("escaped")
    }
    unknown = sorted(n for n in names if n and n not in _PLACEHOLDERS)
    if unknown:
        raise TemplateError(
            f"unknown prompt placeholder(s) {', '.join('$' + n for n in unknown)}; "
            f"available: {', '.join('$' + n for n in sorted(_PLACEHOLDERS))} (write $$ for a literal $)"
        )


def prompt_values(
    *,
    prompt: str,
    image_names: list[str],
    profile: str,
    web_tools: list[str],
    image_tools: list[str],
    max_rounds: int,
    max_tool_calls: int,
    execution_timeout: float,
    code_blocks: str = "all",
) -> dict[str, Any]:
    """Everything a template can refer to, for one task."""
    facts = PROFILES.get(profile).facts.values()
    images = "; ".join(f"image {i} is {name}" for i, name in enumerate(image_names)) or "none"
    web = "\n".join(f"- {WEB_TOOL_LINES[name]}" for name in web_tools if name in WEB_TOOL_LINES)
    return {
        "prompt": prompt,
        "images": images,
        "image_count": len(image_names),
        "web_tools": web or NO_WEB_TOOLS,
        "image_tools": "\n".join(f"- {line}" for line in image_tools),
        "max_rounds": max_rounds,
        "max_tool_calls": max_tool_calls,
        "execution_timeout": f"{execution_timeout:g}",
        "code_blocks": CODE_BLOCK_RULES[code_blocks],
        **facts,
    }
