"""Side channel from the kernel to the host, on the Jupyter iopub stream (kernel side).

Structured records (artifacts, trace events, path normalizations, notices) travel as iopub
messages of their own type (:data:`pixelbox.contract.wire.RECORD_MSG_TYPE`), sent through the
kernel's session with the parent header of the request being run. Riding on iopub keeps them in
true order with stdout and rich outputs and needs no extra socket; using a message type no
display path produces means that nothing a cell displays (``display``, ``_repr_mimebundle_``, a
last expression) can be filed by the host as a record, and that display hooks (``%%capture``)
cannot swallow them. Every record is made JSON-safe first (:func:`pixelbox.contract.wire.json_safe`).
"""

from __future__ import annotations

import sys
from typing import Any

from pixelbox.contract.wire import KINDS, RECORD_MSG_TYPE, json_safe, mime_for


def publish(kind: str, payload: dict[str, Any] | list[dict[str, Any]]) -> None:
    """Send one record (or a batch) of ``kind`` to the host, in order with other output."""
    if kind not in KINDS:
        raise ValueError(f"unknown pixelbox channel kind {kind!r}; expected one of {KINDS}")
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    display_pub = getattr(shell, "display_pub", None)
    session = getattr(display_pub, "session", None)
    socket = getattr(display_pub, "pub_socket", None)
    if session is None or socket is None:  # an in-process shell (tests): no host to talk to
        from IPython.display import publish_display_data

        publish_display_data({mime_for(kind): json_safe(payload)})
        return
    for stream in (sys.stdout, sys.stderr):  # keep records in order with the text before them
        stream.flush()
    records = json_safe(payload if isinstance(payload, list) else [payload])
    parent = getattr(display_pub, "parent_header", {})
    msg = session.msg(RECORD_MSG_TYPE, {"kind": kind, "records": records}, parent=parent)
    session.send(socket, msg, ident=RECORD_MSG_TYPE.encode())


def parent_metadata(shell: Any) -> dict[str, Any]:
    """The metadata of the execute_request being run (the host's per-cell facts), or {}."""
    kernel = getattr(shell, "kernel", None)
    parent: Any = None
    if kernel is not None and hasattr(kernel, "get_parent"):
        try:
            parent = kernel.get_parent()
        except Exception:
            parent = None
    metadata = parent.get("metadata", {}) if isinstance(parent, dict) else {}
    return metadata if isinstance(metadata, dict) else {}


def pack_message(obj: Any) -> bytes:
    """The kernel session's JSON packer: jupyter_client's, but no value can lose a message.

    jupyter_client encodes with ``surrogateescape``, which fails on a high surrogate such as the
    one in ``print('a\\ud800b')``, and refuses NaN; the whole message (an output, the error of a
    failing cell, a batch of records) would be dropped. Such messages are sent ASCII-escaped
    instead, and as a last resort with every value made JSON-safe.
    """
    import json

    from jupyter_client.session import json_default, json_packer

    try:
        return json_packer(obj)
    except (UnicodeEncodeError, ValueError, TypeError):
        pass
    try:
        return json.dumps(obj, default=json_default, ensure_ascii=True, allow_nan=False).encode("ascii")
    except (ValueError, TypeError):
        return json.dumps(json_safe(obj), ensure_ascii=True, allow_nan=False).encode("ascii")
