"""Reading a code-mode turn: the ``<code>`` blocks to run and the ``<answer>``, nothing rewritten.

Models often wrap the code inside the tags in a markdown fence (```python ... ```); the fence
lines are dropped, the code itself is kept byte for byte. An unclosed ``<code>`` at the end of
a turn (a model cut off by its token limit) is still run. ``<answer>`` only counts in a turn that
takes no action; the episode decides that, this module only finds the pieces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CODE = re.compile(r"<code>(.*?)(?:</code>|\Z)", re.DOTALL | re.IGNORECASE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^\s*```[\w+-]*[ \t]*\n")
_FENCE_CLOSE = re.compile(r"\n?[ \t]*```\s*$")
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


def extract_code(text: str) -> list[str]:
    """The code of every ``<code>`` block, in order; empty blocks are skipped."""
    blocks = [strip_fence(match.group(1)) for match in _CODE.finditer(text or "")]
    return [block for block in blocks if block.strip()]


def extract_answer(text: str) -> str | None:
    """The text of the last ``<answer>`` block, stripped (None when there is none)."""
    found = _ANSWER.findall(text or "")
    return found[-1].strip() if found else None


def has_bare_fence(text: str) -> bool:
    """Whether the turn has a python fence outside any ``<code>`` tags (worth a hint: it is not run)."""
    outside = _CODE.sub("", text or "")
    return bool(_BARE_FENCE.search(outside))


def parse_turn(text: str) -> ParsedTurn:
    """Split a code-mode turn into its code blocks and answer."""
    return ParsedTurn(tuple(extract_code(text)), extract_answer(text))
