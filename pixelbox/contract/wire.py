"""The wire between host and kernel: files in the IPC directory, execute-request metadata, the
record side channel on iopub, and the cell that runs an atomic tool.

Everything here is data both sides must agree on byte for byte; change it only together with
:data:`KERNEL_PROTOCOL`, which the kernel reports at start so a stale image is refused.
"""

from __future__ import annotations

import json

KERNEL_PROTOCOL = 4
"""Bumped whenever the host/kernel contract (config, wire, channel MIME types) changes."""

CONNECTION_FILE = "kernel.json"
"""Jupyter connection file (``ipc`` transport) the host writes into the IPC directory."""
CONFIG_FILE = "config.json"
"""The kernel configuration (:class:`pixelbox.contract.config.KernelConfig`) the host writes."""
READY_FILE = "ready.json"
"""Written atomically by the kernel once it listens: its version, protocol, pid, uid, problems."""
READY_FIELDS = ("version", "protocol", "pid", "uid", "python", "interfaces", "problems")

RECORDER_NAME = "__pbx__"
"""The name the recorder is bound to in the user namespace; instrumented code calls through it."""
ORIGINAL_SOURCE_METADATA_KEY = "pixelbox.original"
"""Execute-request metadata: the agent's own source, so tracebacks quote it (not the instrumented cell)."""
EXEC_METADATA_KEY = "pixelbox.exec"
"""Execute-request metadata: the host's execution index, so events number like results."""

MIME_PREFIX = "application/vnd.pixelbox."
MIME_SUFFIX = "+json"
KINDS = ("artifact", "event", "normalization", "notice")
"""Kinds of records the kernel sends on the side channel (``display_data`` on iopub)."""

ADD_IMAGE = "add_image"
"""Internal tool the harness uses to put a downloaded image (already uploaded to the workspace) in the list."""
READ_TEXT = "read_text"
"""Internal tool that reads the text in an image with tesseract (Agent-X's OCR), recorded as an ``ocr`` event."""
ADD_GENERATED = "add_generated"
"""Internal tool that takes in an image a generation model made (uploaded to the workspace) as a ``generate`` event."""
RAW_ARGUMENTS_KEY = "__pixelbox_raw_arguments__"
"""Arguments that were not a JSON object travel as ``{RAW_ARGUMENTS_KEY: text}`` and are judged as that text."""
TOOL_API_PREFIX = "pixelbox.tools."
"""The ``api`` of events recorded by atomic tools: ``pixelbox.tools.<name>``."""


def mime_for(kind: str) -> str:
    """The MIME type that carries records of ``kind``."""
    return f"{MIME_PREFIX}{kind}{MIME_SUFFIX}"


def kind_of(mime: str) -> str | None:
    """Inverse of :func:`mime_for`; ``None`` for ordinary MIME types."""
    if mime.startswith(MIME_PREFIX) and mime.endswith(MIME_SUFFIX):
        return mime[len(MIME_PREFIX) : -len(MIME_SUFFIX)]
    return None


def tool_cell(name: str, arguments_json: str) -> str:
    """The uninstrumented cell that runs atomic tool ``name`` in the kernel (``Sandbox.call_tool``)."""
    return f"{RECORDER_NAME}.tool({name!r}, {arguments_json!r})"


def tool_arguments(arguments: dict[str, object]) -> str:
    """Tool arguments as the JSON text :func:`tool_cell` carries (no NaN or Infinity)."""
    return json.dumps(arguments, allow_nan=False)
