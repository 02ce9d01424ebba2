"""``Sandbox.run_command``: a process run in the sandbox beside the kernel, not through it.

A command runs where the kernel runs and as the kernel's user, under the same limits, but outside
the kernel's Python namespace: on Docker it is ``docker exec`` into the sandbox's container as its
unprivileged uid, wrapped in coreutils ``timeout``; on the local backend a child process made like
the kernel (the sandbox's uid, its cgroup, rlimits, a private network namespace and ``/dev/shm``,
no new privileges, the scrubbed environment). Its output is capped like a cell's. It is recorded in
the trace as a ``command`` event, never as tampering (a ``!ls`` inside a cell runs untraced and
marks the cell tampered; ``run_command`` is the traced way to run a program).
"""

from __future__ import annotations

import codecs
import contextlib
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from pixelbox.contract.events import EVENT_VERSION
from pixelbox.runtime.outputs import CappedText

COMMAND_API = "pixelbox.run_command"
"""The ``api`` of a command event."""
NOT_FOUND = 127
"""Exit status of a command that could not be started (as shells and ``timeout`` report it)."""
READ_CHUNK = 64 * 1024
DRAIN_S = 2.0
"""How long output is still read after the process ended or was killed (a child that escaped its
process group may hold the pipes open; what it writes later is not waited for)."""
MAX_ENV_BYTES = 128 * 1024


@dataclass(frozen=True)
class CommandSpec:
    """What to run: argv, extra environment, deadline in seconds and the output caps."""

    argv: tuple[str, ...]
    env: dict[str, str]
    timeout: float
    stdout_cap: int
    stderr_cap: int


@dataclass
class Captured:
    """What a backend brings back from a command: its streams (capped), exit status, whether it overran."""

    stdout: CappedText
    stderr: CappedText
    exit_code: int | None = None
    timed_out: bool = False


@dataclass
class CommandResult:
    """What one ``run_command`` call did. ``exit_code`` is None when the command was killed at its deadline.

    ``index`` is taken from the same sequence as executions, so commands and cells of a sandbox are
    ordered together; ``events`` holds the command event the trace records.
    """

    index: int
    argv: list[str]
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: int = 0
    stderr_truncated: int = 0
    duration: float = 0.0
    timed_out: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the command exited with status 0 before its deadline."""
        return self.exit_code == 0 and not self.timed_out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> CommandResult:
        """Rebuild from :meth:`to_dict` output."""
        return cls(**dict(raw))


def command_spec(
    argv: Sequence[str], env: Mapping[str, str] | None, timeout: float, *, stdout_cap: int, stderr_cap: int
) -> CommandSpec:
    """Check ``run_command``'s arguments; a clear error for each kind of bad input."""
    if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence):
        raise TypeError("argv must be a list of strings such as ['ls', '-l'] (no shell is involved)")
    if not argv or not all(isinstance(a, str) and "\x00" not in a for a in argv):
        raise ValueError(f"argv must be a non-empty list of strings without NUL bytes, got {list(argv)!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return CommandSpec(tuple(argv), check_env(env), float(timeout), stdout_cap, stderr_cap)


def check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Per-call environment variables: names and values are strings (names without ``=``, no NUL)."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise TypeError(f"env must be a mapping of names to strings, got {type(env).__name__}")
    checked: dict[str, str] = {}
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name or "\x00" in name:
            raise ValueError(f"env: {name!r} is not a valid variable name (a non-empty string without '=' or NUL)")
        if not isinstance(value, str) or "\x00" in value:
            raise ValueError(f"env[{name!r}] must be a string without NUL bytes, got {value!r}")
        checked[name] = value
    if sum(len(k) + len(v) + 2 for k, v in checked.items()) > MAX_ENV_BYTES:
        raise ValueError(f"env holds more than {MAX_ENV_BYTES} bytes of names and values")
    return checked


def command_event(result: CommandResult, seq: int, env_names: Iterable[str]) -> dict[str, Any]:
    """The trace's record of a command: op ``command``, its argv, exit status and duration.

    Only the names of per-call environment variables are recorded, not their values (they may be
    credentials the embedder passes to one program).
    """
    error = None
    if not result.ok:
        reason = "timeout" if result.timed_out else f"exit status {result.exit_code}"
        error = {"type": "CommandFailed", "message": f"{' '.join(result.argv)[:200]}: {reason}"}
    return {
        "v": EVENT_VERSION,
        "seq": seq,
        "exec": result.index,
        "op": "command",
        "status": "ok" if result.ok else "error",
        "api": COMMAND_API,
        "src": None,
        "inputs": [],
        "output": None,
        "params": {
            "argv": list(result.argv),
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "env": sorted(env_names),
        },
        "artifact": None,
        "error": error,
        "t_ms": round(result.duration * 1000, 3),
    }


def new_capture(spec: CommandSpec) -> Captured:
    return Captured(CappedText("stdout", spec.stdout_cap), CappedText("stderr", spec.stderr_cap))


def pump(chunks: Iterable[bytes], sink: CappedText) -> None:
    """Decode UTF-8 chunks (a character split between chunks kept whole) into ``sink``."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for chunk in chunks:
        sink.write(decoder.decode(chunk))
    sink.write(decoder.decode(b"", final=True))


def run_process(popen: Callable[[], subprocess.Popen[bytes]], spec: CommandSpec) -> Captured:
    """Start a host process (session leader of its own group) and collect it under ``spec.timeout``.

    At the deadline the whole process group is killed. A program that cannot be started gives
    exit status 127 and the reason on stderr, as a shell would.
    """
    captured = new_capture(spec)
    try:
        proc = popen()
    except OSError as exc:
        captured.stderr.write(f"{spec.argv[0]}: {exc.strerror or exc}\n")
        captured.exit_code = NOT_FOUND
        return captured
    readers = [_reader(proc.stdout, captured.stdout), _reader(proc.stderr, captured.stderr)]
    try:
        captured.exit_code = proc.wait(timeout=spec.timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        captured.timed_out = True
    for reader in readers:
        reader.join(DRAIN_S)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    return captured


def _reader(stream: IO[bytes] | None, sink: CappedText) -> threading.Thread:
    def read() -> None:
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                pump(iter(lambda: os.read(stream.fileno(), READ_CHUNK), b""), sink)

    thread = threading.Thread(target=read, name="pixelbox-command-output", daemon=True)
    thread.start()
    return thread


def elapsed_since(started: float) -> float:
    return time.monotonic() - started
