"""A small supervisor process that runs commands for us as a child subreaper and reaps at once.

``runsc run --detach`` and ``runsc restore --detach`` leave the sandbox (and its gofer) running after
the command returns; Linux reparents those orphans to the nearest *child subreaper* among their
ancestors, else to PID 1. On this machine PID 1 (the VM's init) reaps 1.5-2 s late, and ``runsc
delete`` polls until the sandbox is reaped, so closing a restored sandbox cost that much. Commands
started through :class:`Subreaper` are children of a dedicated process that is a child subreaper
(``prctl(PR_SET_CHILD_SUBREAPER)``) and blocks in ``waitpid(-1)``: the sandbox becomes its child when
``runsc`` exits and is reaped the moment it dies.

It is a process of its own, not the embedding application's: making the application a subreaper
would change what happens to every orphan of every library it runs. The supervisor holds no secret
and runs nothing but what the host asks (argv, a log file for stdout and stderr); it ends when the
host closes its stdin (the host exited), and the sandboxes it still holds are reparented to PID 1,
as before (``pixelbox cleanup`` removes them).

The file is both the client (:class:`Subreaper`) and the supervisor's program (run by path with
``python -I -S``: only the standard library, so it starts in a few milliseconds).

Protocol, one JSON object per line. Host -> supervisor: ``{"id": n, "argv": [...], "log": path}``
(run a command), ``{"id": n, "kill": true}`` (stop a command that timed out), ``{"id": n, "pids":
[...], "tag": t}`` (SIGKILL those adopted children if their command lines contain ``t``; answer when
they are reaped), ``{"id": n, "exited": p}`` (the exit code of adopted child ``p``, once reaped).
Supervisor -> host: ``{"id": n, "code": c, "cpu": s}`` (exit code, negative for a signal; a
command's CPU-seconds) or
``{"id": n, "error": "..."}``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import subprocess
import sys
import threading
from typing import IO, Any

PR_SET_CHILD_SUBREAPER = 36
KEPT_EXITS = 4096
"""How many exit codes of adopted children the supervisor remembers."""
START_TIMEOUT_S = 10.0


def _become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


class _Supervisor:
    """The supervisor's state: children it answers for (pid -> request id), and the reply channel.

    Children are reaped only under ``lock``, so while it is held no child's pid can be freed and
    reused: a pid checked to be our child is still that process when we signal it."""

    def __init__(self, replies: IO[str]) -> None:
        self.replies = replies
        self.lock = threading.Lock()
        self.running: dict[int, int] = {}
        self.killing: set[int] = set()
        """Requests that kill adopted children (their exit codes are recorded too)."""
        self.outstanding: dict[int, int] = {}
        """Request id -> how many of its processes are still to be reaped."""
        self.spawned = threading.Event()
        self.exits: dict[int, int] = {}
        """Exit codes of adopted children by pid, the most recent :data:`KEPT_EXITS`."""

    def _send(self, message: dict[str, Any]) -> None:
        """Write one reply (the caller holds the lock)."""
        self.replies.write(json.dumps(message) + "\n")
        self.replies.flush()

    def spawn(self, request: dict[str, Any]) -> None:
        """Start ``request['argv']`` with stdin from /dev/null and stdout/stderr appended to its log."""
        log = str(request.get("log") or os.devnull)
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
            (os.POSIX_SPAWN_DUP2, 1, 2),
        ]
        with self.lock:
            try:
                pid = os.posix_spawn(request["argv"][0], request["argv"], dict(os.environ), file_actions=actions)
            except (OSError, KeyError, IndexError, TypeError) as exc:
                self._send({"id": request.get("id"), "error": str(exc)})
                return
            self._expect(request["id"], [pid])
            self.spawned.set()

    def _expect(self, request_id: int, pids: list[int]) -> None:
        """Answer ``request_id`` once all of ``pids`` are reaped (the caller holds the lock)."""
        for pid in pids:
            self.running[pid] = request_id
        self.outstanding[request_id] = len(pids)

    def kill_request(self, request_id: int) -> None:
        """SIGKILL the command of ``request_id`` (a call that timed out)."""
        with self.lock:
            for pid in [pid for pid, rid in self.running.items() if rid == request_id]:
                os.kill(pid, 9)

    def kill_children(self, request: dict[str, Any]) -> None:
        """SIGKILL ``request['pids']`` (an adopted sandbox and its gofer) if each is our child, not a
        command we run, and has ``request['tag']`` (its bundle path) in its command line; answer once
        they are reaped. Anything else (a pid reused since) is left alone and the request fails."""
        pids = [int(pid) for pid in request["pids"]]
        tag = str(request.get("tag") or "")
        with self.lock:
            strangers = [pid for pid in pids if pid in self.running or not _is_adopted(pid, tag)]
            if strangers or not pids:
                self._send({"id": request["id"], "error": f"not children of the subreaper: {strangers}"})
                return
            for pid in pids:
                os.kill(pid, 9)
            self._expect(request["id"], pids)
            self.killing.add(request["id"])

    def reap(self) -> None:
        """Reap every child as soon as it dies: our commands and killed sandboxes (answered), and adopted
        orphans. ``waitid(WNOWAIT)`` learns of a death without reaping; the reap happens under the lock."""
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
            except ChildProcessError:
                self.spawned.wait(1.0)
                self.spawned.clear()
                continue
            if info is None:
                continue
            with self.lock:
                _, status, usage = os.wait4(info.si_pid, 0)
                request_id = self.running.pop(info.si_pid, None)
                if request_id is None or request_id in self.killing:
                    self._record(info.si_pid, os.waitstatus_to_exitcode(status))
                if request_id is None:
                    continue
                self.outstanding[request_id] -= 1
                if self.outstanding[request_id] == 0:
                    del self.outstanding[request_id]
                    self.killing.discard(request_id)
                    cpu = usage.ru_utime + usage.ru_stime
                    self._send({"id": request_id, "code": os.waitstatus_to_exitcode(status), "cpu": cpu})

    def _record(self, pid: int, code: int) -> None:
        """Keep an adopted child's exit code (the caller holds the lock)."""
        self.exits.pop(pid, None)
        self.exits[pid] = code
        while len(self.exits) > KEPT_EXITS:
            del self.exits[next(iter(self.exits))]

    def exit_status(self, request: dict[str, Any]) -> None:
        """Answer with the exit code of the adopted child ``request['exited']`` (the last one of that pid)."""
        with self.lock:
            code = self.exits.get(int(request["exited"]))
            answer = {"code": code} if code is not None else {"error": f"no exit of process {request['exited']} known"}
            self._send({"id": request["id"], **answer})


def _is_adopted(pid: int, tag: str) -> bool:
    """Whether ``pid`` is our child and its command line contains ``tag`` (non-empty)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            parent = next((int(line.split()[1]) for line in status if line.startswith("PPid:")), None)
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            command = cmdline.read().decode(errors="replace")
    except (OSError, ValueError):
        return False
    return parent == os.getpid() and bool(tag) and tag in command


def main() -> None:
    """The supervisor: become a child subreaper, serve requests from stdin until it closes."""
    _become_subreaper()
    supervisor = _Supervisor(sys.stdout)
    threading.Thread(target=supervisor.reap, daemon=True).start()
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("kill"):
            supervisor.kill_request(request["id"])
        elif "pids" in request:
            supervisor.kill_children(request)
        elif "exited" in request:
            supervisor.exit_status(request)
        else:
            supervisor.spawn(request)
    os._exit(0)


class _Call:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.code: int | None = None
        self.error: str | None = None
        self.cpu = 0.0


class Subreaper:
    """The host's end: one supervisor per host process, started on first use, restarted if it died."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._owner = 0
        self._calls: dict[int, _Call] = {}
        self._next = 0
        self.command_cpu = 0.0
        """CPU-seconds of the commands run so far (user + system, from their reaped rusage)."""

    def _started(self) -> subprocess.Popen[str]:
        """The running supervisor (caller holds the lock)."""
        if self._process is None or self._process.poll() is not None or self._owner != os.getpid():
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", __file__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
                start_new_session=True,  # a terminal's Ctrl-C is for the application, not for the reaper
            )
            self._owner = os.getpid()
            self._calls = {}
            threading.Thread(target=self._read, args=(self._process,), name="pbx-subreaper", daemon=True).start()
        return self._process

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                message = json.loads(line)
                with self._lock:
                    call = self._calls.pop(message["id"], None)
                if call is not None:
                    call.code, call.error = message.get("code"), message.get("error")
                    call.cpu = float(message.get("cpu") or 0.0)
                    call.done.set()
        with self._lock:  # the supervisor died: fail what it still owed
            calls = list(self._calls.values()) if self._process is process else []
            for call in calls:
                call.error = "the subreaper supervisor exited"
                call.done.set()

    def _call(self, message: dict[str, Any], timeout: float, *, start: bool = True) -> _Call | None:
        """Send ``message`` (given an id) and wait up to ``timeout`` for its answer; None on timeout
        (or when no supervisor runs and ``start`` is false)."""
        call = _Call()
        with self._lock:
            if not start and (self._process is None or self._process.poll() is not None or self._owner != os.getpid()):
                return None
            process = self._started()
            self._next += 1
            message = {**message, "id": self._next}
            self._calls[self._next] = call
            assert process.stdin is not None
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
        if call.done.wait(timeout):
            return call
        if "argv" in message:
            with self._lock, contextlib.suppress(OSError):
                assert process.stdin is not None
                process.stdin.write(json.dumps({"id": message["id"], "kill": True}) + "\n")
                process.stdin.flush()
        return None

    def run(self, argv: list[str], log: str, timeout: float) -> int:
        """Run ``argv`` as the supervisor's child (stdout and stderr appended to ``log``); its exit code.

        Raises ``subprocess.TimeoutExpired`` (after killing it) past ``timeout``, ``OSError`` when the
        supervisor cannot run it."""
        call = self._call({"argv": argv, "log": log}, timeout)
        if call is None:
            raise subprocess.TimeoutExpired(argv, timeout)
        if call.error is not None or call.code is None:
            raise OSError(f"the subreaper could not run {argv[0]}: {call.error}")
        with self._lock:
            self.command_cpu += call.cpu
        return call.code

    def kill_children(self, pids: list[int], tag: str, timeout: float) -> bool:
        """SIGKILL ``pids`` if they are all the supervisor's adopted children whose command line contains
        ``tag`` (a sandbox and gofer of one bundle) and wait until they are reaped; whether that happened
        (False: not its children, or not gone in time)."""
        call = self._call({"pids": pids, "tag": tag}, timeout, start=False)
        return call is not None and call.error is None

    def exit_status(self, pid: int, timeout: float) -> int | None:
        """The exit code of the supervisor's adopted child ``pid`` once it has been reaped (a sandbox
        process exits with its container's status); None when unknown."""
        call = self._call({"exited": pid}, timeout, start=False)
        return call.code if call is not None and call.error is None else None

    def pid(self) -> int | None:
        """The supervisor's pid while it runs."""
        with self._lock:
            return self._process.pid if self._process is not None and self._process.poll() is None else None


if __name__ == "__main__":
    main()
