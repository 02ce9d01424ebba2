"""Reading a code-mode turn: the ``<code>`` blocks to run and the ``<answer>``, nothing rewritten.

Two readings, chosen per run (:data:`CODE_BLOCKS`):

- ``all`` (pixelbox's own): every ``<code>`` block runs, in order. Models often wrap the code inside
  the tags in a markdown fence (```python ... ```); the fence lines are dropped, the code itself is
  kept byte for byte. An unclosed ``<code>`` at the end of a turn (a model cut off by its token
  limit) is still run.
- ``first`` (the official Agentic-MME general runners, our reading of their ``parse_model_output``):
  only the first *closed* block runs, found by a lazy case-insensitive search from the first
  ``<code>`` to the first ``</code>`` (so an unclosed ``<code>`` before a closed block swallows
  the text up to that ``</code>``, tags and all). The block is stripped, then a leading
  ````` ```python ````` line, a leading ````` ``` ````` and a trailing ````` ``` ````` are removed
  once each, in that order, and it is stripped again. A turn whose only block is unclosed runs nothing.

``<answer>`` only counts in a turn that takes no action; the episode decides that, this module only
finds the pieces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

CodeBlocks = Literal["all", "first"]
CODE_BLOCKS: tuple[CodeBlocks, ...] = ("all", "first")
"""Which ``<code>`` blocks of a turn run: every one (``all``) or the official runners' first closed one."""

_CODE = re.compile(r"<code>(.*?)(?:</code>|\Z)", re.DOTALL | re.IGNORECASE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^\s*```[\w+-]*[ \t]*\n")
_FENCE_CLOSE = re.compile(r"\n?[ \t]*```\s*$")
_FIRST_CODE = re.compile(r"<code>(.*?)</code>", re.DOTALL | re.IGNORECASE)
_OFFICIAL_FENCES = (
    re.compile(r"^```python\s*\n?"),
    re.compile(r"^```\s*\n?"),
    re.compile(r"\n?```\s*$"),
)
_BARE_FENCE = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class ParsedTurn:
    """What a model turn asks for: code blocks (in order) and the final answer, if it gave one."""

    code_blocks: tuple[str, ...]
    answer: str | None


def strip_fence(code: str) -> str:
    """Drop one markdown fence around ``code`` (opening line and closing backticks), if present."""
    opened = _FENCE_OPEN.match(code)
    if not opened:
        return code.strip("\n")
    body = code[opened.end() :]
    return _FENCE_CLOSE.sub("", body).strip("\n")


def extract_code(text: str, blocks: CodeBlocks = "all") -> list[str]:
    """The code to run, in order: every non-empty ``<code>`` block (``all``), or the official
    reading's single block (``first``: at most one; see the module docstring)."""
    if blocks == "first":
        first = first_block(text)
        return [first] if first else []
    if blocks != "all":
        raise ValueError(f"code blocks must be one of {', '.join(CODE_BLOCKS)}, got {blocks!r}")
    found = [strip_fence(match.group(1)) for match in _CODE.finditer(text or "")]
    return [block for block in found if block.strip()]


def first_block(text: str) -> str:
    """The official general runner's code of a turn: the first closed block, fences removed ("" when none)."""
    found = _FIRST_CODE.search(text or "")
    code = found.group(1).strip() if found else ""
    if not code:
        return ""
    for fence in _OFFICIAL_FENCES:
        code = fence.sub("", code, count=1)
    return code.strip()


def extract_answer(text: str) -> str | None:
    """The text of the last ``<answer>`` block, stripped (None when there is none)."""
    found = _ANSWER.findall(text or "")
    return found[-1].strip() if found else None


def has_bare_fence(text: str) -> bool:
    """Whether the turn has a python fence outside any ``<code>`` tags (worth a hint: it is not run)."""
    outside = _CODE.sub("", text or "")
    return bool(_BARE_FENCE.search(outside))


def parse_turn(text: str, blocks: CodeBlocks = "all") -> ParsedTurn:
    """Split a code-mode turn into the code blocks that run and its answer."""
    return ParsedTurn(tuple(extract_code(text, blocks)), extract_answer(text))
