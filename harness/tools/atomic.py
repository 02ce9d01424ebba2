"""The 14 atomic image tools on the host side: their function-calling schemas and dispatch to the sandbox.

The schemas come from the same table the kernel validates against
(:mod:`pixelbox.contract.tools`), so what the model is told and what the kernel accepts agree.
A call is sent to the sandbox verbatim (arguments as the model wrote them): validation, the image
lookup, the canonical operation and the capture all happen in the kernel, and a bad call comes
back as an ``Execution`` with status ``error`` and a ``ToolError`` saying what is valid.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from pixelbox.contract.tools import TOOL_SPECS, function_schema
from pixelbox.contract.wire import ADD_IMAGE, RAW_ARGUMENTS_KEY, tool_cell
from pixelbox.runtime.execution import Execution

ATOMIC_TOOLS: tuple[str, ...] = tuple(TOOL_SPECS)
"""The image tools by name, in the order they are offered."""


class ToolSandbox(Protocol):
    """What dispatch needs from a sandbox (``Sandbox`` has it)."""

    def execute(self, code: str, *, timeout: float | None = None) -> Execution: ...


def atomic_schemas() -> list[dict[str, Any]]:
    """Function-calling schemas of the 14 image tools."""
    return [function_schema(spec) for spec in TOOL_SPECS.values()]


def atomic_tool_lines() -> list[str]:
    """One line per tool for the atomic-mode system prompt."""
    return [f"{spec.signature()}: {spec.description}" for spec in TOOL_SPECS.values()]


def is_atomic_tool(name: str) -> bool:
    """Whether ``name`` is one of the 14 image tools."""
    return name in TOOL_SPECS


def call_tool(sandbox: Any, name: str, arguments_json: str, *, timeout: float | None = None) -> Execution:
    """Run an atomic tool in the sandbox's kernel through ``Sandbox.call_tool``.

    Arguments that are not a JSON object travel verbatim under :data:`RAW_ARGUMENTS_KEY`, so the
    kernel reports what is wrong with them exactly as for any other bad call. Sandboxes without
    ``call_tool`` get the equivalent ``__pbx__.tool`` cell through ``execute``.
    """
    arguments = _as_object(arguments_json)
    method = getattr(sandbox, "call_tool", None)
    if callable(method):
        raw = {RAW_ARGUMENTS_KEY: str(arguments_json)}
        try:
            result: Execution = method(name, arguments if arguments is not None else raw, timeout=timeout)
        except ValueError:  # arguments JSON cannot carry (NaN, Infinity): let the kernel judge the text
            result = method(name, raw, timeout=timeout)
        return result
    executed: Execution = sandbox.execute(tool_cell(name, arguments_json), timeout=timeout)
    return executed


def add_image(sandbox: Any, kernel_path: str, url: str, *, timeout: float | None = None) -> Execution:
    """Make an image file already uploaded to the workspace the next image (downloads)."""
    return call_tool(sandbox, ADD_IMAGE, json.dumps({"path": kernel_path, "url": url}), timeout=timeout)


def _as_object(arguments_json: str) -> dict[str, Any] | None:
    try:
        value = json.loads(arguments_json or "{}")
    except (json.JSONDecodeError, TypeError):
        return None
    return value if isinstance(value, dict) else None
