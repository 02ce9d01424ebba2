"""Judge answers cached on disk by (judge id, prompt, image sha256).

The raw answer is cached, not the verdict: verdicts are recomputed from it, so changing the
matching rules never needs a judge call. Writes are atomic (write then rename).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


class JudgeCache:
    """A directory of JSON files, one per (judge, prompt, image) key."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    @staticmethod
    def key(judge_id: str, prompt: str, image_sha256: str) -> str:
        raw = json.dumps([judge_id, prompt, image_sha256]).encode()
        return hashlib.sha256(raw).hexdigest()

    def get(self, judge_id: str, prompt: str, image_sha256: str) -> dict[str, Any] | None:
        path = self._path(self.key(judge_id, prompt, image_sha256))
        if not path.is_file():
            return None
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def put(self, judge_id: str, prompt: str, image_sha256: str, value: dict[str, Any]) -> None:
        path = self._path(self.key(judge_id, prompt, image_sha256))
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"judge": judge_id, "image_sha256": image_sha256, **value}
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
        os.replace(tmp, path)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"


class NoCache(JudgeCache):
    """A cache that remembers nothing (for judges built without a directory)."""

    def __init__(self) -> None:
        super().__init__(Path(os.devnull))

    def get(self, judge_id: str, prompt: str, image_sha256: str) -> dict[str, Any] | None:
        return None

    def put(self, judge_id: str, prompt: str, image_sha256: str, value: dict[str, Any]) -> None:
        return None
