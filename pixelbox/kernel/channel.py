"""Side channel from the kernel to the host, multiplexed on the Jupyter iopub stream (kernel side).

Structured records (artifacts, trace events, path normalizations) travel as ``display_data``
messages whose only MIME type is ``application/vnd.pixelbox.<kind>+json``. Riding on iopub
keeps them in true order with stdout and rich outputs and needs no extra socket; the host
strips them out of ``Execution.outputs`` and files them under the matching field. The MIME types
are part of the contract (:mod:`pixelbox.contract.wire`).
"""

from __future__ import annotations

from typing import Any

from pixelbox.contract.wire import KINDS, mime_for


def publish(kind: str, payload: dict[str, Any] | list[dict[str, Any]]) -> None:
    """Send one record (or a batch) of ``kind`` to the host, in order with other output."""
    if kind not in KINDS:
        raise ValueError(f"unknown pixelbox channel kind {kind!r}; expected one of {KINDS}")
    from IPython.display import publish_display_data

    publish_display_data({mime_for(kind): payload})


def pack_message(obj: Any) -> bytes:
    """The kernel session's JSON packer: jupyter_client's, but a lone surrogate cannot lose a message.

    jupyter_client encodes with ``surrogateescape``, which fails on a high surrogate such as the
    one in ``print('a\\ud800b')``; the whole message (an output, or the error of a failing cell)
    would be dropped. Such messages are sent ASCII-escaped instead, which any JSON reader decodes.
    """
    import json

    from jupyter_client.session import json_default, json_packer

    try:
        return json_packer(obj)
    except UnicodeEncodeError:
        return json.dumps(obj, default=json_default, ensure_ascii=True, allow_nan=False).encode("ascii")
