"""The two interaction modes, named once.

Agentic-MME calls them Gen and Atm; traces, run directories and the command line use ``gen`` and
``atm``, and prose says *code mode* and *atomic mode*. In code mode the model writes Python in
``<code>`` blocks that run in the sandbox; in atomic mode it calls the atomic image tools as
functions. ``code`` and ``atomic`` are accepted wherever a mode is read.
"""

from __future__ import annotations

from typing import Final, Literal

Mode = Literal["gen", "atm"]
CODE: Final = "gen"
"""Code mode: ``<code>`` blocks run in the sandbox's kernel."""
ATOMIC: Final = "atm"
"""Atomic mode: the atomic image tools, called as functions."""
MODES: tuple[Mode, ...] = (CODE, ATOMIC)
MODE_TITLES: dict[str, str] = {CODE: "code", ATOMIC: "atomic"}
"""How prose names each mode."""
_ALIASES: dict[str, Mode] = {CODE: CODE, ATOMIC: ATOMIC, "code": CODE, "atomic": ATOMIC}
MODE_CHOICES: tuple[str, ...] = tuple(_ALIASES)
"""Every spelling a mode is read from: ``gen``, ``atm``, ``code``, ``atomic``."""


def parse_mode(text: object) -> Mode | None:
    """The mode ``text`` names (``gen``/``code`` or ``atm``/``atomic``), or ``None``."""
    return _ALIASES.get(str(text))


__all__ = ["ATOMIC", "CODE", "MODES", "MODE_CHOICES", "MODE_TITLES", "Mode", "parse_mode"]
