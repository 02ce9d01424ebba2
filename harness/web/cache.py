"""Per-task record/replay cache of web-tool results: one JSON file per call, keyed by tool and arguments.

Modes:
- ``record``: always call the provider and store the result (success or error);
- ``replay``: answer only from the cache; a miss is a tool error and never touches the network;
- ``auto``: use a stored success, otherwise call the provider and store what it says;
- ``off``: no cache at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

CacheMode = Literal["off", "record", "replay", "auto"]
CACHE_MODES: tuple[CacheMode, ...] = ("off", "record", "replay", "auto")
CACHE_VERSION = 1


@dataclass(frozen=True)
class CacheEntry:
    """One stored call: its outcome and payload."""

    tool: str
    args: dict[str, Any]
    ok: bool
    data: dict[str, Any] | None
    error: str | None


def normalize_args(args: dict[str, Any]) -> dict[str, Any]:
    """Arguments as they are keyed: ``None`` dropped, strings stripped with inner whitespace collapsed."""
    return {k: re.sub(r"\s+", " ", v).strip() if isinstance(v, str) else v for k, v in args.items() if v is not None}


def cache_key(tool: str, args: dict[str, Any]) -> str:
    """A stable hash of the tool name and normalized arguments."""
    canonical = json.dumps({"tool": tool, "args": normalize_args(args)}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


class WebCache:
    """A directory of cached web-tool results (usually one directory per task)."""

    def __init__(self, directory: str | Path | None, mode: CacheMode = "auto") -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"web cache mode must be one of {', '.join(CACHE_MODES)}, got {mode!r}")
        if mode != "off" and directory is None:
            raise ValueError(f"web cache mode {mode!r} needs a directory")
        self.mode: CacheMode = mode
        self.directory = None if directory is None else Path(directory)

    @classmethod
    def for_task(cls, root: str | Path, task_id: str, mode: CacheMode = "auto") -> WebCache:
        """The cache of one task: ``ROOT/TASK_ID/``."""
        return cls(Path(root) / task_id, mode)

    def path(self, tool: str, args: dict[str, Any]) -> Path:
        """Where the call's result is (or would be) stored."""
        if self.directory is None:
            raise ValueError("this web cache is off and has no directory")
        return self.directory / f"{tool}-{cache_key(tool, args)}.json"

    def get(self, tool: str, args: dict[str, Any]) -> CacheEntry | None:
        """The stored result, or None when absent (or unreadable, which is treated as absent)."""
        if self.mode == "off":
            return None
        try:
            raw = json.loads(self.path(tool, args).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        if not isinstance(raw, dict) or raw.get("tool") != tool:
            return None
        return CacheEntry(tool, raw.get("args") or {}, bool(raw.get("ok")), raw.get("data"), raw.get("error"))

    def put(self, tool: str, args: dict[str, Any], *, ok: bool, data: dict[str, Any] | None, error: str | None) -> None:
        """Store a result atomically (write a temporary file, then rename over the old one)."""
        if self.mode == "off":
            return
        target = self.path(tool, args)
        target.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "v": CACHE_VERSION,
            "tool": tool,
            "args": normalize_args(args),
            "ok": ok,
            "data": data,
            "error": error,
        }
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(record, out, ensure_ascii=False)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
