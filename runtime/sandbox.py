"""``Sandbox``: a stateful, isolated Jupyter kernel that runs model-written Python."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pixelbox import __version__
from pixelbox.contract.config import KernelConfig
from pixelbox.contract.wire import (
    CONFIG_FILE,
    ENV_METADATA_KEY,
    EXEC_METADATA_KEY,
    KERNEL_PROTOCOL,
    ORIGINAL_SOURCE_METADATA_KEY,
    SAVE_AS_METADATA_KEY,
    tool_arguments,
    tool_cell,
)
from pixelbox.runtime import live
from pixelbox.runtime.artifacts import MAX_PIXELS, Artifact, ArtifactRejected, Numbering, ingest_artifact
from pixelbox.runtime.audits import AuditLog
from pixelbox.runtime.backends import choose_backend
from pixelbox.runtime.backends.base import Backend, KernelHandle, KernelPaths, ParkedKernel
from pixelbox.runtime.commands import CommandResult, check_env, command_event, command_spec
from pixelbox.runtime.errors import KernelStartError, SandboxClosed
from pixelbox.runtime.execution import ErrorInfo, Execution, Status
from pixelbox.runtime.files import SandboxFiles
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.outputs import CappedText
from pixelbox.runtime.profiles import DEFAULT_PROFILE, profile_spec
from pixelbox.runtime.protocol import Collected, KernelChannel, wait_for_ready_file, write_connection_file
from pixelbox.runtime.streaming import Listeners, OutputCallback, OutputEvent, TextCallback, stream_sync
from pixelbox.runtime.workspace import (
    Layout,
    read_workspace_file,
    resolve_inside,
    write_host_file,
    write_workspace_file,
)
from pixelbox.tracer.dynamic import InstrumentationError, instrument
from pixelbox.tracer.events import Event, EventFormatError

MAX_DOWNLOAD_BYTES = 512 * 1024**2
KERNEL_LOG_TAIL = 64 * 1024
"""How much of the end of the kernel's log a start failure quotes from (the kernel writes the log)."""


@dataclass
class SandboxInfo:
    """What a sandbox is and the isolation actually in force (read from the live kernel)."""

    backend: str
    runtime: str | None
    reason: str
    image: str | None
    image_id: str | None
    policy: bool
    isolation: dict[str, Any]
    limits: dict[str, Any]
    kernel: dict[str, Any]
    workspace: str
    options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable view."""
        return asdict(self)


class Sandbox:
    """A Jupyter kernel in a sandbox, driven synchronously.

    State persists across :meth:`execute` calls like notebook cells. Every call returns an
    :class:`Execution` and never hangs past ``timeout + grace``: a kernel that ignores the
    interrupt is replaced, a dead one is reported as ``crashed`` and replaced on the next call.
    Use as a context manager, or call :meth:`close`; sandboxes left open are closed on garbage
    collection and at interpreter exit.
    """

    def __init__(
        self,
        options: SandboxOptions | None = None,
        *,
        inputs: Sequence[str | Path] = (),
        **overrides: Any,
    ) -> None:
        base = options or SandboxOptions()
        self.options = base.with_(**overrides) if overrides else base
        self._lock = threading.RLock()
        self._closed = False
        self._handle: KernelHandle | None = None
        self._channel: KernelChannel | None = None
        self._needs_restart = False
        self._retiring: threading.Thread | None = None
        self._unreported_restart = False
        self._next_index = 1
        self._ready: dict[str, Any] = {}
        self._next_artifact: int | None = None
        """Index the next artifact gets; carried across kernel restarts so nothing is renumbered."""
        self._next_seq = 0
        self.start_path = "cold"
        """How the current kernel was started: ``fast`` (the backend's fast path) or ``cold``."""
        self._fast_failure: str | None = None
        self._audits = AuditLog(background=self.options.audit)
        self._backend, self._reason = choose_backend(self.options)
        self._uid = self._backend.allocate_uid()
        size = self.options.workspace_size
        self._parked = self._backend.take_parked(self.options) if self.options.fast_start else None
        """A kernel the backend parked ahead in a layout of its own (a spare): that layout is this sandbox's."""
        self.from_spare = False
        """Whether the current kernel was parked ahead (a spare) rather than started for this sandbox."""
        cap = None if size is None else int(size)
        self.layout = self._parked.layout if self._parked else Layout.create(self._uid, disk_cap=cap)
        live.register(self)
        try:
            self._input_names = self._copy_inputs(inputs)
            self._start_kernel()
        except BaseException:
            self.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._closed

    def close(self) -> None:
        """Stop the kernel and delete the sandbox's files. Idempotent."""
        if self.mark_closed():
            self.teardown()

    def mark_closed(self) -> bool:
        """Refuse further use at once; return False if it was already closed.

        Split from :meth:`teardown` so a pool can retire a sandbox instantly and pay for
        stopping the container in the background.
        """
        lock = getattr(self, "_lock", None)
        if lock is None:
            return False
        with lock:
            if self._closed:
                return False
            self._closed = True
            return True

    def teardown(self) -> None:
        """Stop the kernel and remove files (after :meth:`mark_closed`); never raises."""
        with self._lock:
            try:
                self._stop_kernel()
            finally:
                if hasattr(self, "layout"):
                    self.layout.remove()
                if hasattr(self, "_audits"):
                    self._audits.close()
                live.unregister(self)

    def restart(self) -> None:
        """Replace the kernel with a fresh one; workspace files are kept, variables are not."""
        with self._lock:
            self._check_open()
            self._stop_kernel()
            self._start_kernel()
            self._audits.restarted()

    @property
    def connection_info(self) -> dict[str, Any]:
        """The host's Jupyter connection info for the current kernel (IPC transport).

        For advanced use and benchmarks: a second client can attach to the same kernel. Its
        messages bypass deadlines and capture, so do not use it to run model code.
        """
        self._check_open()
        return dict(self._connection)

    def kernel_cpu_seconds(self) -> float | None:
        """CPU-seconds the current kernel has used so far (its cgroup's accounting: the container with
        its runtime's processes on docker); None where the backend cannot tell."""
        with self._lock:
            return self._handle.cpu_seconds() if self._handle is not None else None

    @property
    def alive(self) -> bool:
        """Whether the kernel is running (cheap; no round trip)."""
        return bool(self._handle and self._handle.alive() and not self._needs_restart)

    # -- kernel start/stop -------------------------------------------------------------------

    @property
    def paths(self) -> KernelPaths:
        """Where the workspace, inputs and IPC directory appear inside the sandbox."""
        return self._backend.paths(self.layout)

    def _kernel_config(self) -> KernelConfig:
        paths = self.paths
        io = dict(self.options.io)
        io["enabled"] = self.options.io_enabled
        if io["enabled"]:
            io["profile"] = profile_spec(io.get("profile", DEFAULT_PROFILE)).to_dict()
            io.setdefault("workspace", paths.workspace)
            io["inputs"] = [
                {"index": i, "name": name, "path": f"{paths.inputs}/{name}"} for i, name in enumerate(self._input_names)
            ]
            if self._next_artifact is not None:
                io["first_index"] = self._next_artifact
        return KernelConfig(
            workspace=paths.workspace,
            inputs_dir=paths.inputs,
            version=__version__,
            protocol=KERNEL_PROTOCOL,
            policy=self._policy_section(),
            io=io,
            trace={"enabled": self.options.trace},
        )

    def _policy_section(self) -> dict[str, Any]:
        section: dict[str, Any] = {"enabled": self.options.policy_enabled(self._backend.name)}
        if self.options.allow_modules:
            section["extra_modules"] = list(self.options.allow_modules)
        return section

    def _start_kernel(self) -> None:
        """Start a kernel, through the backend's fast path when ``options.fast_start`` allows.

        A kernel from the fast path that fails to become ready is stopped and the start is made
        once more, cold (the failure is kept in ``info.kernel["fast_start_failure"]``).
        """
        self._join_retired()
        try:
            self._start_once(fast=self.options.fast_start)
        except KernelStartError as exc:
            if self.start_path != "fast":
                raise
            self._fast_failure = str(exc)
            self._start_once(fast=False)

    def _launch(self, fast: bool, parked: ParkedKernel | None) -> KernelHandle:
        """The parked kernel when there is one (woken now), else the backend's fresh kernel from its fast path
        when ``fast`` and it has one, else a cold one."""
        self.from_spare = parked is not None
        if parked is not None:
            parked.wake()
            self.start_path = "fast"
            return parked.handle
        if fast:
            handle = self._backend.start_fresh(self.layout, self.options, self._uid)
            if handle is not None:
                self.start_path = "fast"
                return handle
        self.start_path = "cold"
        return self._backend.start(self.layout, self.options, self._uid)

    def _claim_parked(self) -> ParkedKernel | None:
        """The parked kernel, once, if it is still alive (its IPC directory is untouched: the kernel waits
        for its environment there); a dead one is stopped and the start goes on as without it."""
        parked, self._parked = self._parked, None
        if parked is not None and not parked.handle.alive():
            parked.handle.kill()
            return None
        return parked

    def _start_once(self, *, fast: bool) -> None:
        parked = self._claim_parked() if fast else None
        ipc = self.layout.ipc if parked is not None else self.layout.fresh_ipc(self._uid)
        self._connection = connection = write_connection_file(ipc, self.paths.ipc)
        write_host_file(ipc, CONFIG_FILE, self._kernel_config().to_json())
        deadline = time.monotonic() + self.options.start_timeout
        self._handle = handle = self._launch(fast, parked)
        try:
            self._ready = wait_for_ready_file(ipc, deadline, handle.alive)
            self._check_ready()
            self._channel = KernelChannel(connection)
            self._channel.handshake(deadline, handle.alive)
            handle.started()
        except KernelStartError as exc:
            detail = handle.exit_reason() if not handle.alive() else "still running"
            log = self._kernel_log()
            self._stop_kernel()
            raise KernelStartError(f"{exc} (kernel: {detail}){log}") from None
        self._needs_restart = False

    def _check_ready(self) -> None:
        ready = self._ready
        if ready.get("version") != __version__ or ready.get("protocol") != KERNEL_PROTOCOL:
            from pixelbox.runtime.image import BUILD_COMMAND

            raise KernelStartError(
                f"the kernel runs pixelbox {_short(ready.get('version'))} (protocol {_short(ready.get('protocol'))}) "
                f"but the host is {__version__} (protocol {KERNEL_PROTOCOL}); rebuild the image with `{BUILD_COMMAND}`"
            )
        if ready.get("problems"):
            raise KernelStartError("in-kernel layers failed to install:\n" + "\n".join(ready["problems"]))

    def _kernel_log(self) -> str:
        """The last lines of the kernel's stderr log: read without following links, its last 64 KiB only."""
        try:
            fd = os.open(self.layout.root / "kernel.log", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return ""
        with os.fdopen(fd, "rb") as log:
            size = os.fstat(fd).st_size
            log.seek(max(0, size - KERNEL_LOG_TAIL))
            tail = log.read(KERNEL_LOG_TAIL).decode(errors="replace")
        return "\nkernel log (last lines):\n" + "\n".join(tail.splitlines()[-15:]) if tail else ""

    def _stop_kernel(self) -> None:
        self._join_retired()
        parked, self._parked = getattr(self, "_parked", None), None
        if parked is not None:  # taken, never woken (the sandbox failed before its first start)
            parked.handle.kill()
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._handle is not None:
            self._handle.kill()
            self._handle = None

    def _retire_kernel(self) -> None:
        """Stop a stuck kernel without making the caller wait for it.

        Killing a container takes a daemon round trip or two, so it runs in a thread; the next
        kernel start (or close) waits for it first, so two kernels of one sandbox never overlap.
        """
        handle, self._handle = self._handle, None
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        self._needs_restart = True
        if handle is not None:
            self._retiring = threading.Thread(target=handle.kill, name="pixelbox-retire-kernel", daemon=True)
            self._retiring.start()

    def _join_retired(self) -> None:
        retiring, self._retiring = self._retiring, None
        if retiring is not None:
            retiring.join()

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosed("this sandbox is closed; create a new Sandbox")

    # -- execution ---------------------------------------------------------------------------

    def execute(
        self,
        code: str,
        *,
        timeout: float | None = None,
        save_as: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        on_stdout: TextCallback | None = None,
        on_stderr: TextCallback | None = None,
        on_output: OutputCallback | None = None,
    ) -> Execution:
        """Run ``code`` as the next cell and return what happened (never raises for cell faults).

        With ``options.trace`` the cell is instrumented on the host first (cached by hash) and the
        agent's own source travels alongside it, so tracebacks quote the agent's code. ``save_as``
        (``{"name": FILE, "apis": [...]}``, :data:`~pixelbox.contract.wire.SAVE_AS_METADATA_KEY`)
        names every image the cell saves through those APIs, the last one winning. ``env`` sets
        environment variables for this cell only (restored after it). ``on_stdout`` / ``on_stderr``
        get each chunk of output and ``on_output`` each rich output as it arrives
        (:mod:`pixelbox.runtime.streaming`); the returned :class:`Execution` is the same either way.
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        listeners = Listeners(on_stdout, on_stderr, on_output)
        extra: dict[str, Any] = {ENV_METADATA_KEY: check_env(env)} if env else {}
        if save_as:
            extra[SAVE_AS_METADATA_KEY] = {"name": str(save_as["name"]), "apis": list(save_as["apis"])}
        if not self.options.trace:
            return self._execute_cell(code, extra, timeout, listeners)
        try:
            cell = instrument(code)
        except InstrumentationError as exc:
            return self._refused(ErrorInfo("InstrumentationError", str(exc), str(exc)))
        if cell.refusal is not None:
            return self._refused(ErrorInfo("ReservedNameError", cell.refusal, cell.refusal))
        result = self._execute_cell(cell.code, {ORIGINAL_SOURCE_METADATA_KEY: code, **extra}, timeout, listeners)
        self._audits.note(code, result)
        if cell.untraced_lines:
            lines = ", ".join(map(str, cell.untraced_lines))
            result.notices.append(
                f"trace incomplete: line(s) {lines} ran through IPython magics, shell escapes or f-string "
                "fields, which are not traced"
            )
            result.tampered = True
        elif cell.syntax_error is not None and result.status == "ok":
            result.notices.append("trace incomplete: this cell is not plain Python, so it ran untraced")
            result.tampered = True
        return result

    def stream(
        self, code: str, *, timeout: float | None = None, env: Mapping[str, str] | None = None
    ) -> Iterator[OutputEvent]:
        """Run ``code`` like :meth:`execute`, yielding its output events as they arrive and, last,
        a ``result`` event holding the :class:`Execution`."""
        return stream_sync(lambda **callbacks: self.execute(code, timeout=timeout, env=env, **callbacks))

    def run_command(
        self, argv: Sequence[str], *, timeout: float | None = None, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        """Run the program ``argv`` in the sandbox beside the kernel, not in its namespace.

        Same place, user and limits as the kernel (:mod:`pixelbox.runtime.commands`), output capped
        like a cell's, ``timeout`` defaulting to ``options.timeout``; no shell is involved. Recorded
        as a ``command`` event in ``result.events``, numbered with the executions. A command that
        fails or overruns is a result (``ok`` False), never an exception.
        """
        spec = command_spec(
            argv,
            env,
            self.options.timeout if timeout is None else timeout,
            stdout_cap=self.options.stdout_cap,
            stderr_cap=self.options.stderr_cap,
        )
        with self._lock:
            self._check_open()
            index = self._next_index
            self._next_index += 1
            if self._ensure_kernel():
                self._unreported_restart = True
            assert self._handle is not None
            started = time.monotonic()
            captured = self._backend.run_command(self._handle, self.layout, self.options, spec)
            result = CommandResult(
                index=index,
                argv=list(spec.argv),
                exit_code=captured.exit_code,
                stdout=captured.stdout.value(),
                stderr=captured.stderr.value(),
                stdout_truncated=captured.stdout.dropped,
                stderr_truncated=captured.stderr.dropped,
                duration=time.monotonic() - started,
                timed_out=captured.timed_out,
            )
            result.events = self._valid_events([command_event(result, 0, spec.env)], [])
            return result

    def audit(self, result: Execution) -> dict[str, Any]:
        """What ``result``'s cell says beside what ran: written-not-run and run-not-written, with reasons.

        Read on demand with the tracer's static half (libcst), never inside ``execute``; the
        audit is stored on ``result.audit`` and returned. A cell the static half cannot read gives
        ``{"available": false, "reason": ...}``.
        """
        return self._audits.audit(result)

    def call_tool(self, name: str, arguments: Mapping[str, Any], *, timeout: float | None = None) -> Execution:
        """Run atomic image tool ``name`` in the kernel (atomic mode), like a cell of its own.

        The tool runs through the same recorder and image I/O layer as agent code, so it yields
        the same canonical events and numbered artifacts. Bad arguments come back as
        ``status="error"`` with a message saying what is valid; the sandbox keeps working.
        """
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"tool name must be an identifier, got {name!r}")
        try:
            encoded = tool_arguments(dict(arguments))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"tool arguments must be JSON-serializable: {exc}") from None
        code = tool_cell(name, encoded)
        return self._execute_cell(code, {ORIGINAL_SOURCE_METADATA_KEY: code}, timeout)

    def _refused(self, error: ErrorInfo) -> Execution:
        """The result for a cell pixelbox would not run: nothing executed, state kept."""
        with self._lock:
            self._check_open()
            index = self._next_index
            self._next_index += 1
        return Execution(index=index, status="error", error=error, notices=[f"not run: {error.evalue}"])

    def _execute_cell(
        self, code: str, metadata: dict[str, Any], timeout: float | None, listeners: Listeners | None = None
    ) -> Execution:
        with self._lock:
            self._check_open()
            index = self._next_index
            self._next_index += 1
            restarted = self._ensure_kernel() or self._unreported_restart
            self._unreported_restart = False
            started = time.monotonic()
            collected = self._new_collected(index)
            if listeners is not None and listeners.active:
                collected.listener = listeners
            metadata = {**metadata, EXEC_METADATA_KEY: index}
            status, crash_reason, notices, replaced = self._run(
                code, metadata, collected, timeout or self.options.timeout
            )
            result = self._assemble(index, status, collected, time.monotonic() - started)
            result.crash_reason = crash_reason
            result.notices = notices + result.notices + (listeners.failures if listeners is not None else [])
            result.restarted = restarted or replaced
            result.state_lost = restarted or replaced or status == "crashed"
            return result

    def _ensure_kernel(self) -> bool:
        """Start a fresh kernel if the last one died or was stopped; report whether that happened."""
        if self._handle is None or self._needs_restart or not self._handle.alive():
            self._stop_kernel()
            self._start_kernel()
            return True
        return False

    def _new_collected(self, index: int) -> Collected:
        return Collected(
            stdout=CappedText("stdout", self.options.stdout_cap),
            stderr=CappedText("stderr", self.options.stderr_cap),
            out_dir=self.layout.outputs,
            max_outputs=self.options.max_outputs,
            index=index,
        )

    def _run(
        self, code: str, metadata: dict[str, Any], into: Collected, timeout: float
    ) -> tuple[Status, str | None, list[str], bool]:
        """Send the cell and wait; on the deadline interrupt, then replace the kernel if needed."""
        assert self._channel is not None and self._handle is not None
        handle = self._handle
        msg_id = self._channel.send_execute(code, metadata)
        end = self._channel.collect(msg_id, into, time.monotonic() + timeout, handle.alive)
        if end == "idle":
            return ("error" if into.error else "ok"), None, [], False
        if end == "dead":
            self._needs_restart = True
            return "crashed", handle.exit_reason(), [f"the kernel died: {handle.exit_reason()}; state was lost"], False
        handle.interrupt()
        end = self._channel.collect(msg_id, into, time.monotonic() + self.options.grace, handle.alive)
        if end == "idle":
            return (
                "timeout",
                None,
                [f"execution exceeded its {timeout:g} s deadline and was interrupted; variables were kept"],
                False,
            )
        self._retire_kernel()
        return (
            "timeout",
            None,
            [
                f"execution exceeded its {timeout:g} s deadline and ignored the interrupt; the kernel was "
                "stopped and all variables were lost (a fresh kernel starts with the next execution)"
            ],
            True,
        )

    def _assemble(self, index: int, status: Status, collected: Collected, duration: float) -> Execution:
        records = collected.records
        notices, tampered = _notices(records.get("notice", []))
        if collected.malformed:
            notices.append(
                f"trace integrity: {collected.malformed} message(s) from the kernel were not valid Jupyter "
                "messages (bad signature, unreadable body or wrong shape) and were dropped"
            )
            tampered = True
        if collected.forged:
            notices.extend(f"trace integrity: {what}; not filed as records" for what in collected.forged)
            tampered = True
        artifacts, forged = self._ingest(records.get("artifact", []), index, notices)
        return Execution(
            index=index,
            status=status,
            stdout=collected.stdout.value(),
            stderr=collected.stderr.value(),
            stdout_truncated=collected.stdout.dropped,
            stderr_truncated=collected.stderr.dropped,
            outputs=collected.outputs,
            outputs_dropped=collected.outputs_dropped,
            error=collected.error,
            duration=duration,
            execution_count=collected.execution_count,
            artifacts=artifacts,
            events=self._valid_events(records.get("event", []), notices),
            normalizations=records.get("normalization", []),
            notices=notices,
            tampered=tampered or forged,
        )

    def _ingest(self, announced: list[dict[str, Any]], index: int, notices: list[str]) -> tuple[list[Artifact], bool]:
        """Admit the kernel's artifacts only after the host's own checks (numbering, digest, no
        links, real images); also say whether a record was forged (the execution is then tampered).
        With ``options.artifacts_dir`` a copy of each is kept there, which outlives the sandbox."""
        admitted: list[Artifact] = []
        forged = False
        announced = _without_replaced(announced)
        max_pixels = int(dict(self.options.io.get("limits") or {}).get("max_pixels_per_image", MAX_PIXELS))
        keep_in = None if self.options.artifacts_dir is None else Path(self.options.artifacts_dir)
        numbering = self._numbering()
        for record in announced:
            try:
                numbering.claim(record)
                artifact = ingest_artifact(record, self.layout.work, max_pixels=max_pixels, keep_in=keep_in)
                admitted.append(replace(artifact, exec_index=index))
            except ArtifactRejected as exc:
                notices.append(f"artifact rejected: {exc}")
                forged = forged or exc.forged
        self._next_artifact = numbering.next
        return admitted, forged

    def _numbering(self) -> Numbering:
        """The artifact numbers this sandbox's profile gives, continuing from the last one taken."""
        spec = profile_spec(self.options.io.get("profile", DEFAULT_PROFILE))
        stems = tuple(stem for stem in (spec.stem, spec.download_stem) if stem) if spec.stem else ()
        return Numbering(spec.first_index, stems, self._next_artifact)

    def _valid_events(self, batch: list[dict[str, Any]], notices: list[str]) -> list[dict[str, Any]]:
        """Events that follow the schema, renumbered into this sandbox's own sequence.

        The kernel numbers executions as the host told it (``pixelbox.exec`` metadata) but counts
        events from 0 again when it is replaced; the host renumbers them into a sequence that
        never restarts, so a trace's events stay unique and ordered across kernel restarts. A
        malformed record is dropped and said so, never trusted.
        """
        valid: list[dict[str, Any]] = []
        for raw in batch:
            try:
                event = Event.from_dict(raw).to_dict()
            except (EventFormatError, KeyError, TypeError, ValueError) as exc:
                notices.append(f"trace event dropped: {exc}")
                continue
            cell = raw["src"].get("cell") if isinstance(raw.get("src"), dict) else None
            if isinstance(cell, int) and not isinstance(cell, bool) and event["src"] is not None:
                event["src"]["cell"] = cell
            event["seq"] = self._next_seq
            self._next_seq += 1
            valid.append(event)
        return valid

    # -- files ---------------------------------------------------------------------------------

    def _copy_inputs(self, inputs: Sequence[str | Path]) -> list[str]:
        names: list[str] = []
        for src in inputs:
            source = Path(src)
            if not source.is_file():
                raise FileNotFoundError(f"input image {source} does not exist or is not a file")
            name = source.name if source.name not in names else f"{len(names)}_{source.name}"
            self.layout.add_input(source, name, self._uid)
            names.append(name)
        return names

    @property
    def inputs(self) -> list[str]:
        """File names of the task's input images, in order (index 0 first)."""
        return list(self._input_names)

    @property
    def files(self) -> SandboxFiles:
        """List, read, write and remove files in the workspace (and read the inputs): see
        :mod:`pixelbox.runtime.files`; paths as the kernel sees them or relative to the workspace."""
        self._check_open()
        return SandboxFiles(self._file_roots, self._file_owner)

    def _file_roots(self) -> dict[str, tuple[Path, bool]]:
        self._check_open()
        paths = self.paths
        return {paths.workspace: (self.layout.work, True), paths.inputs: (self.layout.inputs, False)}

    def _file_owner(self) -> int | None:
        """Who files the host writes for the kernel belong to (its uid, when the host may give them away)."""
        return self._uid if self._uid is not None and os.geteuid() == 0 else None

    def _workspace_relative(self, path: str) -> str:
        prefix = self.paths.workspace.rstrip("/") + "/"
        return path[len(prefix) :] if path.startswith(prefix) else path

    def upload(self, src: str | Path | bytes, dest: str) -> str:
        """Copy a host file (or raw bytes) into the workspace; return its in-sandbox path.

        Written through directory descriptors without following links, so a symlink the kernel
        planted at the destination (or at any temporary name) is replaced, never written through.
        """
        with self._lock:
            self._check_open()
            relative = self._workspace_relative(dest)
            target = write_workspace_file(
                self.layout.work, relative, src if isinstance(src, bytes) else Path(src), owner=self._file_owner()
            )
            return f"{self.paths.workspace}/{target.relative_to(self.layout.work)}"

    def download(self, path: str) -> bytes:
        """Read a file from the workspace (no symlinks anywhere on the way, no hard links, capped size)."""
        with self._lock:
            self._check_open()
            relative = self._workspace_relative(path)
            resolve_inside(self.layout.work, relative, what="download")
            return read_workspace_file(self.layout.work, relative, what="download", max_bytes=MAX_DOWNLOAD_BYTES)[0]

    # -- description -----------------------------------------------------------------------------

    @property
    def info(self) -> SandboxInfo:
        """Backend, runtime, the isolation facts in force, limits, image, kernel identity."""
        with self._lock:
            self._check_open()
            if self._handle is None:  # stopped after a deadline: describe the kernel that comes next
                self._start_kernel()
                self._unreported_restart = True
            handle = self._handle
        assert handle is not None
        backend: Backend = self._backend
        facts = backend.facts(handle, self._ready, self.options)
        return SandboxInfo(
            backend=backend.name,
            runtime=getattr(backend, "runtime", None),
            reason=self._reason,
            image=getattr(backend, "image", None),
            image_id=getattr(backend, "image_id", None),
            policy=self.options.policy_enabled(backend.name),
            isolation={**facts, "workspace_quota": self.layout.disk_note or f"{self.layout.disk_cap} bytes (tmpfs)"},
            limits={
                "memory": int(self.options.memory),
                "cpus": self.options.cpus,
                "pids": self.options.pids,
                "timeout": self.options.timeout,
                "grace": self.options.grace,
                "stdout_cap": self.options.stdout_cap,
                "stderr_cap": self.options.stderr_cap,
                "workspace_size": self.layout.disk_cap,
            },
            kernel={
                **{k: self._ready.get(k) for k in ("version", "protocol", "pid", "uid", "python")},
                "start": self.start_path,
                "spare": self.from_spare,
                "fast_start_failure": self._fast_failure,
            },
            workspace=str(self.layout.work),
            options=self.options.to_dict(),
        )


def _short(value: Any) -> str:
    """A kernel-reported value quoted in a host message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _notices(records: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """Plain-text notices from the kernel's records, and whether the trace's integrity was hit."""
    texts: list[str] = []
    tampered = False
    for record in records:
        if record.get("kind") == "trace_integrity":
            tampered = True
            texts.extend(f"trace integrity: {problem}" for problem in record.get("problems", []))
        else:
            texts.append(str(record.get("message", record.get("text", record))))
    return texts, tampered


def _without_replaced(announced: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records whose files still hold what they announced: one a later save of the same cell
    replaced under a host save name (same path, the later record ``replaces`` its index) is dropped."""
    kept: list[dict[str, Any]] = []
    for position, record in enumerate(announced):
        later = announced[position + 1 :]
        if isinstance(record, dict) and any(
            isinstance(r, dict) and r.get("replaces") == record.get("index") and r.get("path") == record.get("path")
            for r in later
        ):
            continue
        kept.append(record)
    return kept
