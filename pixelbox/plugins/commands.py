"""Run a process inside a sandbox on behalf of a plug-in (inspect_ai's ``exec``).

The kernel starts the process with ``subprocess``, so it runs where the kernel runs: in the
container (or under the local kernel's uid, cgroup and network namespace), with the sandbox's
limits, never on the host. The cell that starts it binds no name in the agent's namespace.
Standard input, output and error travel through files in the sandbox's private IPC directory
(never the workspace, where the command itself would see them), because the kernel's message
streams are capped far below what a command may print; the host reads them without following
links and deletes them. A deadline is enforced in the sandbox by ``timeout`` (which
kills the command's whole process group) and again on the host by the cell's own deadline.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pixelbox.runtime.errors import PixelboxError
from pixelbox.runtime.execution import Execution
from pixelbox.runtime.sandbox import Sandbox
from pixelbox.runtime.workspace import write_host_file

TIMEOUT_BINARY = "/usr/bin/timeout"
"""Launched by absolute path: a wrapper must never be resolved through a PATH the sandbox controls."""
TIMED_OUT = 124
"""Exit status of ``timeout`` when the deadline passed."""
KILL_AFTER_S = 2
"""Seconds ``timeout`` waits after SIGTERM before SIGKILL."""
HOST_MARGIN_S = 15.0
"""Extra time the host's own deadline on the cell allows beyond the command's (busy machines)."""
DEFAULT_TIMEOUT_S = 600.0
"""A command's deadline when the caller gives none: generous, but never unbounded."""
NOT_STARTED = {"FileNotFoundError": 127, "PermissionError": 126, "NotADirectoryError": 127}
"""Why ``subprocess`` could not start the command, as the exit status a shell would give."""


class CommandError(PixelboxError):
    """The sandbox could not run the command at all (not a failure of the command itself)."""


@dataclass(frozen=True)
class CommandResult:
    """How a command ended: its exit status, its output (cut to ``max_output``) and whether it timed out."""

    returncode: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    stdout_over: bool = False
    """``stdout`` was longer than ``max_output`` and holds its last ``max_output`` bytes."""
    stderr_over: bool = False
    execution: Execution | None = None
    """The sandbox's record of the cell that ran the command."""


def _cell(argv: list[str], stdin: str | None, out: str, err: str, cwd: str, env: dict[str, str]) -> str:
    """One expression that starts ``argv`` and evaluates to its exit status; every value a literal."""
    source = f"open({stdin!r}, 'rb')" if stdin else "sp.DEVNULL"
    return (
        f"(lambda sp, os: sp.run({argv!r}, stdin={source}, stdout=open({out!r}, 'wb'), "
        f"stderr=open({err!r}, 'wb'), cwd={cwd!r}, env={{**os.environ, **{env!r}}}).returncode)"
        "(__import__('subprocess'), __import__('os'))"
    )


def in_workspace(sandbox: Sandbox, path: str | None) -> str:
    """An in-sandbox directory: ``path`` if absolute, else relative to the workspace (its root when None)."""
    root = sandbox.paths.workspace
    if not path:
        return root
    return path if path.startswith("/") else f"{root}/{path}"


def run_command(
    sandbox: Sandbox,
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    max_output: int = 10 * 1024**2,
) -> CommandResult:
    """Run ``argv`` in ``sandbox`` and wait for it; raise :class:`CommandError` if it could not be run."""
    if not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError(f"argv must be a non-empty list of strings, got {argv!r}")
    deadline = float(timeout) if timeout is not None else DEFAULT_TIMEOUT_S
    token = secrets.token_hex(8)
    names = {part: f"command-{token}.{part}" for part in ("in", "out", "err")}
    inside = sandbox.paths.ipc.rstrip("/")
    try:
        if stdin is not None:
            write_host_file(sandbox.layout.ipc, names["in"], stdin)  # fresh, read-only, never through a link
        wrapped = [TIMEOUT_BINARY, "-k", str(KILL_AFTER_S), f"{deadline:g}", *argv]
        cell = _cell(
            wrapped,
            f"{inside}/{names['in']}" if stdin is not None else None,
            f"{inside}/{names['out']}",
            f"{inside}/{names['err']}",
            in_workspace(sandbox, cwd),
            dict(env or {}),
        )
        started = time.monotonic()
        result = sandbox.execute(cell, timeout=deadline + KILL_AFTER_S + HOST_MARGIN_S)
        return _ended(sandbox.layout.ipc, result, names, max_output, time.monotonic() - started >= deadline)
    finally:
        for name in names.values():
            with contextlib.suppress(OSError):
                os.unlink(sandbox.layout.ipc / name)


def _ended(ipc: Path, result: Execution, names: dict[str, str], max_output: int, past_deadline: bool) -> CommandResult:
    """The :class:`CommandResult` of a finished cell."""
    if result.status == "timeout":
        return CommandResult(TIMED_OUT, b"", b"", timed_out=True, execution=result)
    if result.status == "crashed":
        raise CommandError(f"the sandbox's kernel died while running the command: {result.crash_reason}")
    if result.error is not None:
        if result.error.ename == "PolicyViolation":
            raise CommandError(
                "commands cannot run under the RestrictedPython policy (on by default for the local backend); "
                "use the docker backend, or turn the policy off (policy=False) where the local backend's uid, "
                "network namespace and cgroup are isolation enough"
            )
        status = NOT_STARTED.get(result.error.ename)
        if status is None:
            raise CommandError(f"the sandbox could not start the command: {result.error}")
        return CommandResult(status, b"", f"{result.error.evalue}\n".encode(), execution=result)
    returncode = _exit_status(result)
    stdout, stdout_over = _read_tail(ipc / names["out"], max_output)
    stderr, stderr_over = _read_tail(ipc / names["err"], max_output)
    return CommandResult(
        returncode,
        stdout,
        stderr,
        timed_out=returncode == TIMED_OUT and past_deadline,
        stdout_over=stdout_over,
        stderr_over=stderr_over,
        execution=result,
    )


def _exit_status(result: Execution) -> int:
    """The exit status the cell evaluated to (its one ``text/plain`` result)."""
    values = [o.data["text/plain"] for o in result.outputs if o.type == "execute_result" and "text/plain" in o.data]
    try:
        return int(values[-1])
    except (IndexError, ValueError):
        raise CommandError(f"the sandbox did not report the command's exit status (got {values!r})") from None


def _read_tail(path: Path, limit: int) -> tuple[bytes, bool]:
    """What the command wrote to ``path``: all of it, or its last ``limit`` bytes and True when longer.

    Read as the host reads any kernel-written file: no links, no FIFOs, no hard links.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return b"", False
    except OSError as exc:
        raise CommandError(f"the command's output {path.name} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise CommandError(f"the command's output {path.name} was replaced by something other than a plain file")
        over = info.st_size > limit
        if over:
            stream.seek(info.st_size - limit)
        return stream.read(limit), over
