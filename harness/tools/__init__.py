"""The tools an episode offers an agent besides code: the atomic image tools, run in the sandbox's
kernel (:mod:`.atomic`), and the web tools, run through the providers (:mod:`.web`)."""

from __future__ import annotations

from typing import Any

from pixelbox.harness.modes import ATOMIC
from pixelbox.harness.tools.atomic import atomic_schemas
from pixelbox.harness.tools.web import web_schemas


def offered_tools(mode: str, *, web: bool) -> list[dict[str, Any]]:
    """The function-calling schemas an Agentic-MME episode offers: the image tools in atomic mode,
    then the web tools when they are on."""
    return (atomic_schemas() if mode == ATOMIC else []) + (web_schemas() if web else [])


__all__ = ["offered_tools"]
