"""The kernel answers the host's end-of-request marker with its ``idle`` alone, after the request
before it, and only when the marker carries the session's signature."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.session import Session

from pixelbox.contract.wire import END_MSG_TYPE
from pixelbox.runtime import Sandbox

WAIT_S = 60.0


@pytest.fixture
def client(backend: dict[str, Any]) -> Iterator[BlockingKernelClient]:
    """A plain jupyter_client client on a fresh sandbox's kernel."""
    with Sandbox(**backend) as sandbox:
        kernel = BlockingKernelClient()
        kernel.load_connection_info(sandbox.connection_info)  # type: ignore[arg-type]
        kernel.start_channels(hb=False)
        try:
            yield kernel
        finally:
            kernel.stop_channels()


def _until_idle(client: BlockingKernelClient, fence: str) -> list[dict[str, Any]]:
    """Every iopub message up to the ``idle`` of request ``fence``."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        msg = client.get_iopub_msg(timeout=WAIT_S)
        seen.append(msg)
        if msg["parent_header"].get("msg_id") == fence and msg["content"].get("execution_state") == "idle":
            return seen
    raise AssertionError(f"no idle for {fence} within {WAIT_S} s")


def _shell_replies(client: BlockingKernelClient, fence: str) -> list[str]:
    """Parent ids of the shell replies up to the reply to ``fence``."""
    parents: list[str] = []
    while not parents or parents[-1] != fence:
        parents.append(client.get_shell_msg(timeout=WAIT_S)["parent_header"].get("msg_id"))
    return parents


def test_the_marker_gets_its_idle_alone_after_the_request_before_it(client: BlockingKernelClient) -> None:
    request = client.execute("print('cell')")
    marker = client.session.msg(END_MSG_TYPE, {})
    client.shell_channel.send(marker)
    fence = client.kernel_info()
    seen = _until_idle(client, fence)
    about = [(m["parent_header"].get("msg_id"), m["msg_type"], m["content"].get("execution_state")) for m in seen]
    assert [a for a in about if a[0] == marker["msg_id"]] == [(marker["msg_id"], "status", "idle")]
    order = [a[0] for a in about if a[1:] == ("status", "idle")]
    assert order.index(request) < order.index(marker["msg_id"]) < order.index(fence), about
    assert _shell_replies(client, fence) == [request, fence], "the marker gets no reply"


def test_a_marker_signed_with_another_key_gets_nothing(client: BlockingKernelClient) -> None:
    forger = Session(key=b"not-the-kernel-key", signature_scheme="hmac-sha256")
    marker = forger.msg(END_MSG_TYPE, {})
    forger.send(client.shell_channel.socket, marker)
    fence = client.kernel_info()
    seen = _until_idle(client, fence)
    assert [m for m in seen if m["parent_header"].get("msg_id") == marker["msg_id"]] == []
