"""The Jupyter messaging side of a sandbox: connection files, the readiness handshake, and
one execute request collected under a deadline while watching the kernel stay alive.

Transport is ZMQ over IPC (Unix-domain) sockets in a private directory that both the host and
the kernel see (bind-mounted into containers), so kernels need no network interface at all.
"""

from __future__ import annotations

import contextlib
import json
import queue
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import zmq
from jupyter_client.blocking.client import BlockingKernelClient

from pixelbox.contract.wire import CONNECTION_FILE, END_MSG_TYPE, KINDS, READY_FILE, RECORD_MSG_TYPE, kind_of
from pixelbox.runtime.dirwatch import DirectoryWatch
from pixelbox.runtime.errors import KernelStartError, WorkspacePathError
from pixelbox.runtime.execution import ErrorInfo, Output
from pixelbox.runtime.outputs import CappedText, capped, save_bundle, strip_ansi
from pixelbox.runtime.workspace import read_kernel_file, write_host_file

PORT_NAMES = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
SOCKET_STEM = "k"
POLL_SLICE_S = 0.05

ERROR_TEXT_CAP = 16_000
"""Cap on an error's message and on its traceback (head and tail kept): a cell can raise an
exception whose text is megabytes long, and every byte would reach the agent's context."""

READY_MAX_BYTES = 64 * 1024
"""Cap on the kernel's ready file (a few hundred bytes in practice)."""
READY_SLICE_S = 0.005
"""Longest wait for the ready file between looks (and liveness checks) when no file event wakes the host."""
WELCOME_WAIT_S = 0.5
"""How long the handshake waits for the kernel's ``iopub_welcome`` before it asks ``kernel_info`` instead."""
WELCOME_MSG_TYPE = "iopub_welcome"

RunEnd = Literal["idle", "deadline", "dead"]


def write_connection_file(ipc_dir: Path, kernel_ipc_dir: str) -> dict[str, Any]:
    """Write ``kernel.json`` as the kernel will see it; return the host's view of it.

    The two views differ only in the socket path prefix: ``kernel_ipc_dir`` is where the same
    directory is mounted inside the sandbox.
    """
    base: dict[str, Any] = {name: i + 1 for i, name in enumerate(PORT_NAMES)}
    base.update(transport="ipc", signature_scheme="hmac-sha256", key=secrets.token_hex(32))
    kernel_view = dict(base, ip=f"{kernel_ipc_dir}/{SOCKET_STEM}")
    write_host_file(ipc_dir, CONNECTION_FILE, json.dumps(kernel_view))
    return dict(base, ip=str(ipc_dir / SOCKET_STEM))


def wait_for_ready_file(ipc_dir: Path, deadline: float, alive: Callable[[], bool]) -> dict[str, Any]:
    """Wait for the kernel's ``ready.json``; fail fast if the kernel process dies first.

    Read without following links, never from a FIFO, capped, and parsed under guard: what is
    wrong is said without quoting the file (it is kernel-written and could hold anything).
    """
    path = ipc_dir / READY_FILE
    with DirectoryWatch(ipc_dir) as watch:  # woken when the file lands; a look every slice regardless
        while True:
            try:
                data = read_kernel_file(path, max_bytes=READY_MAX_BYTES)
            except WorkspacePathError as exc:
                raise KernelStartError(str(exc)) from None
            if data is not None:
                return _ready_record(data)
            if not alive():
                raise KernelStartError("the kernel exited before it was ready")
            if time.monotonic() > deadline:
                raise KernelStartError("the kernel did not become ready before the start timeout")
            watch.wait(READY_SLICE_S)


def _ready_record(data: bytes) -> dict[str, Any]:
    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise KernelStartError("the kernel's ready file is not valid JSON") from None
    if not isinstance(record, dict):
        raise KernelStartError("the kernel's ready file does not hold a JSON object")
    return record


@dataclass
class Collected:
    """What one execute request produced so far (filled while messages arrive)."""

    stdout: CappedText
    stderr: CappedText
    out_dir: Path
    max_outputs: int
    index: int
    outputs: list[Output] = field(default_factory=list)
    outputs_dropped: int = 0
    error: ErrorInfo | None = None
    execution_count: int | None = None
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    malformed: int = 0
    """Messages from the kernel that did not deserialise or did not have a message's shape (dropped)."""

    forged: list[str] = field(default_factory=list)
    """What the cell sent that looked like records but did not come on the record channel."""
    listener: Callable[[str, Any], None] | None = None
    """Told each stdout/stderr chunk and each new output as it arrives (``execute``'s callbacks)."""

    def add_records(self, content: dict[str, Any]) -> None:
        """File one message of the record side channel (the kernel's own message type)."""
        kind, batch = content.get("kind"), content.get("records")
        if kind not in KINDS or not isinstance(batch, list):
            self.forged.append(f"a malformed record message ({str(kind)[:40]!r}) was ignored")
            return
        self.records.setdefault(str(kind), []).extend(p for p in batch if isinstance(p, dict))

    def add_bundle(self, msg_type: str, content: dict[str, Any]) -> None:
        """File a display/result bundle as an output (capped); pixelbox MIME types in it are
        a cell passing output off as records: dropped and reported, never filed as records."""
        data = content.get("data") or {}
        forged = [mime for mime in data if kind_of(str(mime)) is not None]
        if forged:
            self.forged.append(f"the cell displayed pixelbox record types {sorted(map(str, forged))[:4]}")
            data = {mime: value for mime, value in data.items() if mime not in forged}
            if not data:
                return
            content = {**content, "data": data}
        if len(self.outputs) >= self.max_outputs:
            self.outputs_dropped += 1
            return
        stem = f"exec{self.index:04d}_out{len(self.outputs):03d}"
        self.outputs.append(save_bundle(msg_type, content, self.out_dir, stem))
        if self.listener is not None:
            self.listener("output", self.outputs[-1])

    def handle(self, msg: dict[str, Any]) -> None:
        """Apply one iopub message of this request.

        Every field comes from the kernel, so a message of the wrong shape is counted and
        dropped here rather than raising out of ``execute``. ``status`` messages are ignored: a
        cell can publish an ``idle`` of its own, so when the request is done is decided by
        :meth:`KernelChannel.collect` from the host's own marker.
        """
        try:
            self._apply(msg)
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
            self.malformed += 1

    def _apply(self, msg: dict[str, Any]) -> None:
        msg_type = msg["header"]["msg_type"]
        content = msg["content"]
        if msg_type == "stream":
            name = "stderr" if content.get("name") == "stderr" else "stdout"
            text = content.get("text", "")
            (self.stderr if name == "stderr" else self.stdout).write(text)
            if self.listener is not None and isinstance(text, str) and text:
                self.listener(name, text)
        elif msg_type == RECORD_MSG_TYPE:
            self.add_records(content)
        elif msg_type in ("display_data", "execute_result", "update_display_data"):
            self.add_bundle(msg_type, content)
        elif msg_type == "error":
            tb = capped("traceback", strip_ansi("\n".join(content.get("traceback", []))), ERROR_TEXT_CAP)
            evalue = capped("error message", strip_ansi(str(content.get("evalue", ""))), ERROR_TEXT_CAP)
            self.error = ErrorInfo(str(content.get("ename", "Error"))[:200], evalue, tb)
        elif msg_type == "execute_input":
            self.execution_count = content.get("execution_count")
        elif msg_type == "clear_output" and not content.get("wait"):
            self.outputs.clear()


def _is_idle(msg: dict[str, Any]) -> bool:
    return bool(
        msg.get("header", {}).get("msg_type") == "status" and msg.get("content", {}).get("execution_state") == "idle"
    )


class KernelChannel:
    """A connected client for one kernel. Not thread-safe: one sandbox, one caller at a time."""

    def __init__(self, connection: dict[str, Any]) -> None:
        self._markers: dict[str, str] = {}
        self.client = BlockingKernelClient()
        self.client.load_connection_info(connection)  # type: ignore[arg-type]
        self.client.start_channels(hb=False)

    def handshake(self, deadline: float, alive: Callable[[], bool]) -> None:
        """Return once iopub delivers to this client (PUB/SUB joins late: what a kernel publishes
        before the subscription has joined is lost).

        The kernel's ``iopub_welcome`` (JEP 65, ipykernel 7) says so without a round trip: its
        iopub socket sends it once this client's subscription has reached it (the ready file is
        written after the sockets are bound, so the welcome comes at once). A kernel that does
        not greet within :data:`WELCOME_WAIT_S` is asked ``kernel_info`` until its reply and an
        iopub message of it have come. Requests sent after the welcome wait in the kernel's shell
        socket until its loop runs, so the first cell follows at once.
        """
        if self._welcomed(min(deadline, time.monotonic() + WELCOME_WAIT_S), alive):
            return
        self._kernel_info_round_trip(deadline, alive)

    def _welcomed(self, until: float, alive: Callable[[], bool]) -> bool:
        while (remaining := until - time.monotonic()) > 0:
            msg = receive(self.client.iopub_channel, min(POLL_SLICE_S, remaining))
            if msg is not None and msg["header"].get("msg_type") == WELCOME_MSG_TYPE:
                return True
            if msg is None and not alive():
                raise KernelStartError("the kernel exited during the start handshake")
        return False

    def _kernel_info_round_trip(self, deadline: float, alive: Callable[[], bool]) -> None:
        """Round-trip ``kernel_info`` until iopub delivers too (a kernel that sends no welcome)."""
        while True:
            msg_id = self.client.kernel_info()
            saw_iopub = False
            reply: dict[str, Any] | None = None
            slice_end = time.monotonic() + 0.5
            while time.monotonic() < slice_end and not (saw_iopub and reply):
                if not alive():
                    raise KernelStartError("the kernel exited during the start handshake")
                saw_iopub = saw_iopub or self._iopub_has_parent(msg_id)
                if reply is None:
                    reply = self._shell_reply(msg_id, timeout=0.01)
            if saw_iopub and reply:
                return
            if time.monotonic() > deadline:
                raise KernelStartError("the kernel did not answer kernel_info before the start timeout")

    def _iopub_has_parent(self, msg_id: str) -> bool:
        msg = receive(self.client.iopub_channel, 0.01)
        return msg is not None and msg["parent_header"].get("msg_id") == msg_id

    def _shell_reply(self, msg_id: str, timeout: float) -> dict[str, Any] | None:
        msg = receive(self.client.shell_channel, timeout)
        return msg if msg is not None and msg["parent_header"].get("msg_id") == msg_id else None

    def send_execute(self, code: str, metadata: dict[str, Any] | None = None) -> str:
        """Send an execute request, and the host's end-of-request marker behind it; return its id.

        The marker (:data:`~pixelbox.contract.wire.END_MSG_TYPE`) is sent right after the execute
        request on the same shell socket, so no round trip is waited for between them. The kernel
        handles shell requests one after the other and publishes on one iopub socket in order, so the
        marker's ``idle`` (all the kernel publishes for it) arrives after everything the execute
        request published: that, not any ``idle`` a cell could publish itself, ends collection.
        The marker's id is random and made by the host after the cell was sent: not jupyter_client's
        ``SESSION_PID_N`` numbering, from which a kernel holding its parent's id would guess it.
        """
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        msg = self.client.session.msg("execute_request", content, metadata=metadata or {})
        self.client.shell_channel.send(msg)
        marker = self.client.session.msg(END_MSG_TYPE, {})
        marker["header"]["msg_id"] = marker["msg_id"] = secrets.token_hex(16)  # not the session's numbering
        self.client.shell_channel.send(marker)
        msg_id = str(msg["header"]["msg_id"])
        self._markers = {msg_id: str(marker["header"]["msg_id"])}
        return msg_id

    def collect(self, msg_id: str, into: Collected, until: float, alive: Callable[[], bool]) -> RunEnd:
        """Feed iopub messages of ``msg_id`` into ``into`` until the host's marker comes back idle,
        the deadline, or death."""
        marker = self._markers.get(msg_id)
        while True:
            remaining = until - time.monotonic()
            if remaining <= 0:
                return "deadline"
            msg = receive(self.client.iopub_channel, min(POLL_SLICE_S, remaining), into)
            if msg is None:
                if not alive():
                    return "dead"
                continue
            parent = msg["parent_header"].get("msg_id")
            if parent == msg_id:
                into.handle(msg)
            elif parent == marker and marker is not None and _is_idle(msg):
                self._drain_shell()
                return "idle"

    def _drain_shell(self) -> None:
        """Discard pending shell replies so they never pile up (unread: the host needs none of them,
        and checking and parsing each would only cost time)."""
        socket = self.client.shell_channel.socket
        with contextlib.suppress(zmq.Again):
            while True:
                socket.recv_multipart(zmq.NOBLOCK, copy=False)

    def interrupt(self) -> None:
        """Ask the kernel to raise KeyboardInterrupt (control channel, works while busy)."""
        msg = self.client.session.msg("interrupt_request", {})
        self.client.control_channel.send(msg)

    def close(self) -> None:
        """Close sockets; never raises."""
        with contextlib.suppress(Exception):
            self.client.stop_channels()


def receive(channel: Any, timeout: float, into: Collected | None = None) -> dict[str, Any] | None:
    """The next message on ``channel`` within ``timeout``, or None (nothing came, or it was dropped).

    The frames are the kernel's: a bad signature, a body that is not JSON or a message without
    a header, parent header and content dict is dropped (and counted in ``into``), never raised
    out of ``execute``. Socket errors (the host's own side) still raise.
    """
    try:
        msg = channel.get_msg(timeout=timeout)
    except queue.Empty:
        return None
    except zmq.ZMQError:
        raise
    except Exception:  # whatever deserialising kernel-made frames raises
        msg = None
    if isinstance(msg, dict) and all(isinstance(msg.get(key), dict) for key in ("header", "parent_header", "content")):
        return msg
    if into is not None:
        into.malformed += 1
    return None
