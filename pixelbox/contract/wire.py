"""The wire between host and kernel: files in the IPC directory, execute-request metadata, the
record side channel on iopub, and the cell that runs an atomic tool.

Everything here is data both sides must agree on byte for byte; change it only together with
:data:`KERNEL_PROTOCOL`, which the kernel reports at start so a stale image is refused.
"""

from __future__ import annotations

import json
import math

KERNEL_PROTOCOL = 11
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
SAVE_AS_METADATA_KEY = "pixelbox.save_as"
"""Execute-request metadata ``{"name": FILE, "apis": [API, ...]}``: every image the cell saves through
one of those APIs (an artifact record's ``api``, e.g. ``PIL.Image.Image.save``) becomes the artifact
``FILE`` in the artifact directory, whatever path the code gave, and a later one replaces an earlier
one of the same cell (that record carries ``replaces``: the index it takes over). The DeepEyes/Thyme
runners name every image saved in turn K ``image_{K+1}.png`` this way."""
ENV_METADATA_KEY = "pixelbox.env"
"""Execute-request metadata: environment variables (name -> string) set for this cell only and restored after it."""

RECORD_MSG_TYPE = "pixelbox_record"
"""The iopub message type of the record side channel: content ``{"kind": KIND, "records": [...]}``.

Records travel on a message type of their own, sent by the kernel's session, never as a display
bundle: whatever a cell displays (``display``, ``_repr_mimebundle_``, an ``execute_result``) is an
output, never a record."""
END_MSG_TYPE = "pixelbox_end_request"
"""The shell message type of the host's end-of-request marker, sent right behind each execute request
with an id the host makes. The kernel handles it after the request (shell requests run one at a
time) and publishes only its ``idle``: no ``busy``, no reply, so the marker costs one iopub message,
and its ``idle`` (not any ``idle`` a cell can publish) ends the host's collection."""
KINDS = ("artifact", "event", "normalization", "notice")
"""Kinds of records the kernel sends on the side channel."""
MIME_PREFIX = "application/vnd.pixelbox."
MIME_SUFFIX = "+json"
"""Display MIME types that name pixelbox records (the side channel of protocol 3 and before): a
bundle carrying one now is a cell trying to pass output off as records, and the host says so."""

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


def json_safe(value: object, depth: int = 0) -> object:
    """``value`` as JSON any strict reader accepts: NaN and infinities become ``None``, lone
    surrogates U+FFFD, keys strings, tuples lists, other objects their ``str``; nesting is cut
    at :data:`JSON_SAFE_DEPTH` levels.

    The kernel packs every record through this, so one odd value in one event cannot make the
    packer raise and lose the whole batch with the integrity notice behind it; ``pixelbox trace
    --json`` prints through it, so its output is always strict JSON.
    """
    if isinstance(value, str):
        return _without_surrogates(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= JSON_SAFE_DEPTH:
        return None
    if isinstance(value, dict):
        return {str(json_safe(key, depth + 1)): json_safe(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item, depth + 1) for item in value]
    return json_safe(str(value), depth + 1)


JSON_SAFE_DEPTH = 64
"""Nesting :func:`json_safe` keeps (records are a few levels deep; deeper is a cell's doing)."""


def _without_surrogates(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)
    return text


def tool_cell(name: str, arguments_json: str) -> str:
    """The uninstrumented cell that runs atomic tool ``name`` in the kernel (``Sandbox.call_tool``)."""
    return f"{RECORDER_NAME}.tool({name!r}, {arguments_json!r})"


def tool_arguments(arguments: dict[str, object]) -> str:
    """Tool arguments as the JSON text :func:`tool_cell` carries (no NaN or Infinity)."""
    return json.dumps(arguments, allow_nan=False)
