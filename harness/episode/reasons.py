"""Why an episode ended, in words that carry no host paths.

An episode's ``reason`` travels into scores, reports and exports that are shared beyond the
machine that ran it, and much of what fails inside a sandbox quotes paths (an ``OSError``'s
file name, a kernel log's traceback, the sandbox's own directory on the host). Those are
replaced by what they stand for, so a reason says what went wrong without saying where this
host keeps its files or what its directory layout is.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

SANDBOX_ROOT = re.compile(r"/[^\s'\"]*?/pbx-\d+(?:\.\d+)?-[A-Za-z0-9_]+")
"""A sandbox's host directory (``runtime.workspace``: ``<tmp>/pbx-<pid>.<start>-<random>``)."""


def _host_roots() -> list[tuple[str, str]]:
    """Host directories that may appear in messages and what each is shown as, longest first."""
    checkout = str(Path(__file__).resolve().parents[2])
    roots = {
        sys.prefix: "<python>",
        sys.base_prefix: "<python>",
        checkout: "<pixelbox>",
        os.getcwd(): "<cwd>",
        os.path.expanduser("~"): "<home>",
        tempfile.gettempdir(): "<tmp>",
    }
    return sorted(((p, label) for p, label in roots.items() if len(p) > 1), key=lambda item: -len(item[0]))


def without_host_paths(text: str) -> str:
    """``text`` with every sandbox directory and known host directory replaced by a placeholder."""
    text = SANDBOX_ROOT.sub("<sandbox>", text)
    for root, label in _host_roots():
        text = text.replace(root, label)
    return text


def failure_reason(prefix: str, exc: BaseException) -> str:
    """``prefix: Type: message`` for an episode's reason, host paths removed."""
    return without_host_paths(f"{prefix}{type(exc).__name__}: {exc}")
