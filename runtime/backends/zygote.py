"""The host side of the local fork server: start a zygote, ask it for fresh kernels, watch them.

One zygote per interpreter and thread count (what NumPy's BLAS reads at import) serves every
local sandbox of this process. It runs as the host user (root, when kernels get uids of their
own), in a directory ``/tmp/pbx-<owner>-zygote-*`` only the host can enter, so ``pixelbox
cleanup`` finds it like any workspace when its owner dies; it exits when this process closes its
stdin (at exit, or when the process dies). Kernels it forks show a cold kernel's command line
(``python -m pixelbox.kernel --ipc-dir ...``), so every tool that finds
kernels by command line (leak checks, ``pixelbox cleanup``) treats them alike.

A forked kernel is a child of the zygote, not of this process: its liveness is watched through
a pidfd (cheap, and immune to pid reuse), its exit code comes from the zygote, which reaps it.

On cgroup v1 the zygote makes the control groups of its spare (the kernel it forks ahead) in
:func:`~pixelbox.runtime.backends.cgroups.spare_parents`, named ``<its directory's name>-spare-N``,
and the spare joins them ahead. The zygote's reply to a fork names that group; :meth:`Zygote.fork`
asks the caller for the request only then, so the caller can adopt the group (rename it to the
sandbox's, write the limits) before the kernel reads anything. What a zygote killed before it could
remove them leaves is removed by :meth:`Zygote.stop`, or by ``pixelbox cleanup`` once the owner is dead
(the names carry the owner, like the directory's).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pixelbox.contract.confine import ForkRequest, send_request
from pixelbox.runtime import live
from pixelbox.runtime.backends.cgroups import pixelbox_groups, remove_group, spare_parents
from pixelbox.runtime.workspace import ROOT_PREFIX, remove_tree, this_owner

ZYGOTE_MODULE = "pixelbox.kernel.zygote"
ROOM = 512
"""Padding on the zygote's command line, overwritten by each forked kernel with a cold kernel's."""
FORK_REPLY_TIMEOUT_S = 10.0
READY_TIMEOUT_S = 60.0
"""A zygote not listening this long after it started has failed (its imports hang)."""
RETRY_AFTER_S = 60.0
"""A zygote that failed is not replaced before this long after it started: kernels start cold meanwhile."""
EXIT_REPORT_TIMEOUT_S = 1.0
STARTED = b"s"
"""What the host writes on the zygote's stdin once a kernel's start is over (the zygote forks its next spare)."""


class ZygoteUnavailable(RuntimeError):
    """The zygote is not running (it failed to start or died): start kernels cold."""


class Lines:
    """Newline-terminated JSON records from the zygote on one kernel's connection."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.buffer = b""

    def read(self, deadline: float) -> dict[str, Any] | None:
        """The next record before ``deadline``; None if none comes (or the zygote is gone)."""
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.conn], [], [], remaining)[0]:
                return None
            chunk = self.conn.recv(4096)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        record = json.loads(line)
        if not isinstance(record, dict):
            raise ValueError(f"unexpected record from the zygote: {line[:80]!r}")
        return record


class ForkedProcess:
    """A kernel forked by the zygote, with the small part of ``Popen``'s interface handles use."""

    def __init__(self, lines: Lines, pid: int, on_started: Callable[[], None] = lambda: None) -> None:
        self.lines = lines
        self.pid = pid
        self.on_started = on_started
        self.pidfd = os.pidfd_open(pid)
        self.returncode: int | None = None

    def running(self) -> bool:
        """Whether the kernel still runs (its pidfd is not readable yet)."""
        return self.pidfd >= 0 and not select.select([self.pidfd], [], [], 0)[0]

    def exit_code(self, timeout: float = EXIT_REPORT_TIMEOUT_S) -> int | None:
        """The exit code the zygote reported once it reaped the kernel; None when it never says."""
        if self.returncode is None and self.lines.conn.fileno() >= 0:
            with contextlib.suppress(OSError, ValueError):
                record = self.lines.read(time.monotonic() + timeout)
                if record is not None and isinstance(record.get("exit"), int):
                    self.returncode = record["exit"]
        return self.returncode

    def started(self) -> None:
        """Tell the zygote this kernel's start is over: it forks the next spare now (not while this kernel
        starts: a spare's first steps, its cgroup join above all, would slow this start)."""
        self.on_started()

    def wait(self, timeout: float) -> None:
        """Wait until the kernel has exited; ``subprocess.TimeoutExpired`` when it has not in time."""
        if self.pidfd >= 0 and not select.select([self.pidfd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(f"forked kernel {self.pid}", timeout)

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the kernel itself (through its pidfd: never to a reused pid)."""
        if self.pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signum)

    def close(self) -> None:
        """Release the pidfd and the connection (after the kernel is gone)."""
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
        self.lines.conn.close()


class Zygote:
    """One fork server process and its socket; :meth:`fork` gives a fresh kernel."""

    def __init__(self, python: str, env: dict[str, str]) -> None:
        self.python = python
        self.root = Path(tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{this_owner().tag}-zygote-", dir="/tmp"))
        self.root.chmod(0o700)
        self.socket = self.root / "sock"
        self.ready = threading.Event()
        self.started = time.monotonic()
        self.failure: str | None = None
        self.missing: list[str] = []
        groups = [arg for parent in spare_parents() for arg in ("--cgroup-parent", str(parent))]
        if groups:
            groups += ["--cgroup-prefix", self.root.name]
        with open(self.root / "zygote.log", "ab") as log:
            self.proc = subprocess.Popen(
                [python, "-m", ZYGOTE_MODULE, "--socket", str(self.socket), "--room", "." * ROOM, *groups],
                cwd=self.root,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
        if self.proc.stdin is not None:  # kernel_started never blocks this process, whatever the zygote does
            os.set_blocking(self.proc.stdin.fileno(), False)
        threading.Thread(target=self._await_ready, name="pbx-zygote-ready", daemon=True).start()

    def _await_ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        try:
            self.missing = list(json.loads(line)["missing"])
        except (ValueError, KeyError, TypeError):
            self.failure = f"the zygote exited before it was ready ({self.proc.poll()}); see {self.root}/zygote.log"
        self.ready.set()

    def usable(self, timeout: float) -> bool:
        """Wait up to ``timeout`` (at most :data:`READY_TIMEOUT_S`) for the zygote to listen; False when
        it failed, died, or is still not listening :data:`READY_TIMEOUT_S` after it started (then it
        counts as failed: the next request replaces it, after :data:`RETRY_AFTER_S`)."""
        waited = min(timeout, max(0.0, self.started + READY_TIMEOUT_S - time.monotonic()))
        if not self.ready.wait(waited) and time.monotonic() >= self.started + READY_TIMEOUT_S:
            self.failure = self.failure or f"the zygote was not ready {READY_TIMEOUT_S:g} s after it started"
        return self.ready.is_set() and self.failure is None and self.proc.poll() is None

    def fork(self, request_for: Callable[[str | None], ForkRequest], log_fd: int) -> ForkedProcess:
        """A fresh kernel; ``ZygoteUnavailable`` when the zygote cannot serve (or ``request_for`` raises
        ``OSError``: the kernel is then killed before it read anything).

        ``request_for`` is called with the control group the kernel joined ahead (None: it joined
        none) once the zygote has named it, and returns the request the kernel then reads.
        """
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        proc: ForkedProcess | None = None
        try:
            conn.connect(str(self.socket))
            lines = Lines(conn)
            record = lines.read(time.monotonic() + FORK_REPLY_TIMEOUT_S)
            if record is None:
                raise ZygoteUnavailable("the zygote did not answer a fork request")
            proc = ForkedProcess(lines, int(record["pid"]), self.kernel_started)
            group = record.get("cgroup")
            send_request(conn, request_for(group if isinstance(group, str) else None), log_fd)
            return proc
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _abandon(conn, proc)
            raise ZygoteUnavailable(f"the zygote could not fork a kernel: {exc}") from None
        except BaseException:
            _abandon(conn, proc)
            raise

    def kernel_started(self) -> None:
        """Say on the zygote's stdin that a kernel's start is over (one byte: writes of it never interleave)."""
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.write(self.proc.stdin.fileno(), STARTED)  # type: ignore[union-attr]

    def stop(self) -> None:
        """Close the zygote's stdin (it exits), then make sure it is gone and remove its directory."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        for group in pixelbox_groups(f"{self.root.name}-spare-"):  # a killed zygote's unused spare groups
            remove_group(group)
        remove_tree(self.root)


def _abandon(conn: socket.socket, proc: ForkedProcess | None) -> None:
    """Kill a kernel that will not be served (it has read nothing) and drop the connection."""
    if proc is not None:
        proc.signal(signal.SIGKILL)
        proc.close()
    else:
        conn.close()


_zygotes: dict[tuple[str, ...], Zygote] = {}
_lock = threading.Lock()


def zygote_for(python: str, env: dict[str, str]) -> Zygote | None:
    """The zygote for ``python`` and the import-time ``env``, started now if there is none; a failed or
    dead one is replaced, but not sooner than :data:`RETRY_AFTER_S` after it started (None meanwhile:
    kernels start cold rather than each waiting on a zygote that keeps failing)."""
    key = (python, *sorted(f"{k}={v}" for k, v in env.items()))
    with _lock:
        zygote = _zygotes.get(key)
        if zygote is not None and not zygote.usable(0) and (zygote.ready.is_set() or zygote.failure):
            if time.monotonic() < zygote.started + RETRY_AFTER_S and zygote.failure:
                return None
            zygote.stop()
            zygote = None
        if zygote is None:
            zygote = _zygotes[key] = Zygote(python, env)
        return zygote


def stop_all() -> None:
    """Stop every zygote of this process (at exit, and when every sandbox is closed)."""
    with _lock:
        zygotes = list(_zygotes.values())
        _zygotes.clear()
    for zygote in zygotes:
        with contextlib.suppress(Exception):
            zygote.stop()


def running() -> list[dict[str, Any]]:
    """The zygotes of this process: pid, directory, readiness, whether it runs, why it failed (leak checks,
    benchmarks, diagnostics)."""
    with _lock:
        return [
            {
                "pid": z.proc.pid,
                "root": str(z.root),
                "ready": z.ready.is_set() and z.failure is None,
                "alive": z.proc.poll() is None,
                "failure": z.failure,
            }
            for z in _zygotes.values()
        ]


live.on_close_all(stop_all)
