"""The kernel configuration the host writes to ``config.json`` before starting a kernel."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class KernelConfig:
    """What the in-kernel layers need to know; each layer reads only its own section.

    ``policy``, ``io`` and ``trace`` are plain dicts so that the host and each layer can
    evolve their options without touching this module; a layer whose section has
    ``"enabled": false`` (or is absent) is not installed.
    """

    workspace: str
    inputs_dir: str
    version: str
    protocol: int
    policy: dict[str, Any] = field(default_factory=dict)
    io: dict[str, Any] = field(default_factory=dict)
    trace: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """Serialize for ``config.json``."""
        return json.dumps(self.__dict__, indent=1, sort_keys=True)


def load_config(path: Path) -> KernelConfig:
    """Read ``config.json``; unknown keys are ignored so older kernels fail soft."""
    raw = json.loads(path.read_text())
    known = {k: raw[k] for k in KernelConfig.__dataclass_fields__ if k in raw}
    return KernelConfig(**known)
