"""The local fork server: ``python -m pixelbox.kernel.zygote --socket PATH``.

A zygote imports what every kernel imports (:func:`pixelbox.kernel.fresh.preload`) once, then
forks one fresh kernel per connection on ``PATH`` (a Unix socket in a directory only the host
can enter). The host starts it (``pixelbox.runtime.backends.zygote``) and talks to it on two
channels: the zygote's stdin (its end means "exit"; a byte, that a kernel's start is over) and
stdout (one ``ready`` line once it listens), and one connection per kernel.

The zygote keeps one child forked ahead of the next request, the *spare*: it has dropped what it
inherited (below) and waits on a socket pair to the zygote, holding nothing else, so neither the
fork of a ~120 MB process nor those first steps fall on a sandbox's start. Per connection the
zygote passes the connection to the spare (``SCM_RIGHTS``) and forks the next spare once that
kernel has started (the host says so; or after :data:`REFILL_AFTER_S`); without a
spare (it died) it forks at once. It reads nothing of the connection: the child reads the
:class:`~pixelbox.contract.confine.ForkRequest` (environment, IPC directory, confinement) and the
kernel's log descriptor from it. The zygote only writes on it: ``{"pid": N}`` after
the fork and ``{"exit": CODE}`` once it has reaped the child (``CODE`` as ``subprocess`` gives it:
negative for a signal). So no sandbox's environment, key or file ever passes through the
zygote's memory, and the next child cannot inherit it.

Given control-group parents (``--cgroup-parent``, one per cgroup v1 controller), the zygote also makes
the spare's groups ahead (:class:`SpareGroups`, named ``<--cgroup-prefix>-spare-N``, no limits yet) and
the spare joins them at once: joining a group can wait for an RCU grace period (8-30 ms under load),
which then falls on no sandbox's start. The zygote's ``{"pid": N}`` reply names that group
(``"cgroup"``); the host renames it to the sandbox's and writes the sandbox's limits before it sends
the request, so the kernel runs no request under the spare's unlimited group. A group whose child
exits without having been handed over (or whose kernel the host never adopted) is removed by the
zygote when it reaps the child.

In the child (the spare, as soon as it is forked), before anything of the request is read: its
groups joined, the pages a kernel writes written ahead (:mod:`pixelbox.kernel.prefault`), new empty
network and IPC namespaces made (:func:`~pixelbox.contract.confine.isolate`: nothing of a sandbox is
in them), a new session, default signal handlers, every descriptor of the
zygote closed (the listening socket and the other kernels' connections above all: a kernel
holding the listener could take the next sandbox's request). A spare whose zygote exits sees its
link close and exits too. Then it takes its log as stderr, confines itself
(:class:`~pixelbox.contract.confine.Confinement`: cgroups unless joined ahead,
network and mount namespaces, rlimits, its own uid, ``no_new_privs``), shows a cold kernel's
command line in ``/proc`` (written over its inherited one), and runs phase two of a kernel
(:func:`pixelbox.kernel.fresh.serve`), which replaces the environment and reseeds every random
source before it reads the sandbox's configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import selectors
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from pixelbox.contract.confine import isolate, receive_request
from pixelbox.kernel.fresh import preload, serve, without_workspace_imports
from pixelbox.kernel.prefault import Ranges, Rehearsal, populate

CHILD_FAILED = 70
"""Exit code of a forked child that could not become a kernel (the reason is in its log)."""
JOIN_FAILED = 71
"""Exit code of a spare that could not join its groups: the zygote then makes spares without groups."""
REFILL_AFTER_S = 1.0
"""After a hand-off the next spare is forked once the host says the kernel started, or after this long."""


class SpareGroups:
    """The control groups spares join ahead: one directory per parent (cgroup v1 controller), named
    ``<prefix>-spare-N``, made by the zygote (root) before the fork, empty of limits until the host
    adopts them for a sandbox (renamed to the sandbox's group, limits written)."""

    def __init__(self, parents: list[Path], prefix: str) -> None:
        self.parents = parents
        self.prefix = prefix
        self.count = 0
        self.broken = not parents

    def make(self) -> tuple[str, list[int]] | None:
        """A new group in every parent and its open ``cgroup.procs`` files; None when any cannot be made."""
        if self.broken:
            return None
        self.count += 1
        name = f"{self.prefix}-spare-{self.count}"
        fds: list[int] = []
        try:
            for parent in self.parents:
                (parent / name).mkdir()
                fds.append(os.open(parent / name / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        except OSError:
            _close_all(fds)
            self.remove(name)
            self.broken = True  # no cgroup here for spares: kernels join their sandbox's groups themselves
            return None
        return name, fds

    def remove(self, name: str) -> None:
        """Remove the group ``name`` where it still exists (not renamed by the host); it must be empty."""
        for parent in self.parents:
            with contextlib.suppress(OSError):
                (parent / name).rmdir()


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _join(fds: list[int]) -> None:
    """In a spare: move into the groups whose ``cgroup.procs`` files are open at ``fds``, then close them."""
    try:
        for fd in fds:
            os.write(fd, str(os.getpid()).encode())
    except OSError:
        os._exit(JOIN_FAILED)
    finally:
        _close_all(fds)


class Zygote:
    """The serving loop: accept, hand the connection to the spare (or fork), report pids and exit codes."""

    def __init__(self, path: Path, groups: SpareGroups | None = None, prefault: bool = True) -> None:
        self.groups = groups or SpareGroups([], "")
        self.prefault = prefault
        self.rehearsal: Rehearsal | None = None
        self.written: Ranges = []
        """The pages a kernel writes while it starts (learned by the rehearsal): each spare writes them ahead."""
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener_dir = path.parent
        self.listener.listen(64)
        self.children: dict[int, socket.socket] = {}
        self.spare: tuple[int, socket.socket] | None = None
        """The child forked ahead of the next request, and the zygote's end of its link."""
        self.refill_due: float | None = None
        """When to fork the next spare at the latest (None: there is one, or it is being made)."""
        self.group_of: dict[int, str] = {}
        """Child pid -> the spare group it joined (removed when the child is reaped, unless the host renamed it)."""
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "control")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "reap")
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)

    def run(self) -> None:
        """Serve until the host closes stdin; the spare goes with the zygote."""
        try:
            self._refill()
            if self.prefault:
                self.rehearsal = _rehearse(self.listener_dir / "rehearsal")
            if self.rehearsal is not None:
                self.selector.register(self.rehearsal.fd, selectors.EVENT_READ, "rehearsal")
            while True:
                due = self.refill_due
                events = self.selector.select(None if due is None else max(0.0, due - time.monotonic()))
                if due is not None and time.monotonic() >= due:
                    self._refill()
                for key, _ in events:
                    if key.data == "control" and not self._control():
                        return
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "reap":
                        os.read(self.wake_r, 4096)
                        self._reap()
                    elif key.data == "rehearsal":
                        self._learn()
        finally:
            self._dismiss_spare()
            if self.rehearsal is not None and not self.rehearsal.reaped:
                _kill(self.rehearsal.pid)

    def _learn(self) -> None:
        """Read the rehearsal's report; once complete, later spares write its pages ahead."""
        assert self.rehearsal is not None
        if self.rehearsal.read():
            self.selector.unregister(self.rehearsal.fd)
            self.written = self.rehearsal.ranges

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        pid = self._hand_to_spare(conn)
        if pid is None:
            pid = os.fork()
            if pid == 0:
                self._become_kernel(conn, lambda: conn)
        self.children[pid] = conn
        _say(conn, {"pid": pid, "cgroup": self.group_of.get(pid)})
        self._refill_later()

    def _refill_later(self) -> None:
        """Fork the next spare once the host says the kernel just handed over started (a line on stdin),
        or after :data:`REFILL_AFTER_S`: a spare forked now would slow that kernel's start (the fork
        itself, and its cgroup join blocks every fork and thread start on the machine while it waits
        for an RCU grace period, ipykernel's threads included)."""
        if self.spare is None:
            deadline = time.monotonic() + REFILL_AFTER_S
            self.refill_due = deadline if self.refill_due is None else min(self.refill_due, deadline)

    def _control(self) -> bool:
        """Read the host's stdin: False at its end (exit); a kernel started: fork the spare now."""
        data = os.read(sys.stdin.fileno(), 4096)
        if data and self.refill_due is not None:
            self._refill()
        return bool(data)

    def _refill(self) -> None:
        """Fork the spare for the next request (its fork and first steps then cost the requester nothing)."""
        self.refill_due = None
        if self.spare is not None:
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        group = self.groups.make()
        name, procs = group if group is not None else (None, [])
        try:
            pid = os.fork()
        except OSError:  # no spare for now (out of processes or memory): the next request forks itself
            ours.close()
            theirs.close()
            _close_all(procs)
            if name is not None:
                self.groups.remove(name)
            return
        if pid == 0:
            ours.close()
            self._become_kernel(theirs, lambda: _await_connection(theirs), lambda: self._ahead(procs), procs)
        theirs.close()
        _close_all(procs)
        if name is not None:
            self.group_of[pid] = name
        self.spare = (pid, ours)

    def _hand_to_spare(self, conn: socket.socket) -> int | None:
        """Pass ``conn`` to the spare, which becomes its kernel; its pid, or None when there is no spare."""
        if self.spare is None:
            return None
        (pid, link), self.spare = self.spare, None
        try:
            socket.send_fds(link, [b"c"], [conn.fileno()])
        except OSError:  # the spare is gone: fork as before
            _kill(pid)
            return None
        finally:
            link.close()
        return pid

    def _dismiss_spare(self) -> None:
        if self.spare is not None:
            (pid, link), self.spare = self.spare, None
            link.close()
            _kill(pid)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            self._forget_group(pid)

    def _forget_group(self, pid: int) -> None:
        """Remove the spare group child ``pid`` joined, if the host did not adopt (rename) it."""
        name = self.group_of.pop(pid, None)
        if name is not None:
            self.groups.remove(name)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.rehearsal is not None and pid == self.rehearsal.pid:
                self.rehearsal.reaped = True
            self._forget_group(pid)
            if self.spare is not None and self.spare[0] == pid:  # died waiting: make another
                self.spare[1].close()
                self.spare = None
                if os.waitstatus_to_exitcode(status) == JOIN_FAILED:
                    self.groups.broken = True
                self._refill()
            conn = self.children.pop(pid, None)
            if conn is not None:
                _say(conn, {"exit": os.waitstatus_to_exitcode(status)})
                conn.close()

    def _ahead(self, procs: list[int]) -> bool:
        """In a spare, once it holds nothing of the zygote but its link and its groups' ``procs`` files:
        join the groups, write ahead the pages a kernel writes (in its group: they count against the
        sandbox that gets it), then make its own empty network and IPC namespaces; whether it could."""
        _join(procs)
        with contextlib.suppress(Exception):  # a page that cannot be written ahead is faulted in later
            populate(self.written)
        return os.geteuid() == 0 and isolate()

    def _become_kernel(
        self,
        keep: socket.socket,
        connection: Callable[[], socket.socket | None],
        ahead: Callable[[], bool] = lambda: False,
        also_keep: tuple[int, ...] | list[int] = (),
    ) -> NoReturn:
        """In a child: drop everything of the zygote but ``keep``, do what can be done ``ahead`` (a spare's
        work before its request; True when its namespaces are made), then take the request's connection
        (``keep`` itself, or for the spare what the zygote passes it on ``keep``), read it and serve."""
        code = CHILD_FAILED
        try:
            os.setsid()
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGCHLD, signal.SIGTERM):
                signal.signal(signum, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._close_inherited([keep.fileno(), *also_keep])
            isolated = ahead()
            conn = connection()
            if conn is None:  # a spare dismissed before any request: nothing to do
                code = 0
            else:
                _become(conn, isolated)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
        except BaseException:
            with contextlib.suppress(Exception):
                os.write(2, traceback.format_exc().encode(errors="replace"))
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)

    def _close_inherited(self, keep: list[int]) -> None:
        self.selector.close()
        self.listener.close()
        for other in self.children.values():
            other.close()
        self.children.clear()
        self.spare = None
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        low = 3
        for fd in sorted(keep):
            os.closerange(low, fd)
            low = max(low, fd + 1)
        os.closerange(low, 1 << 16)


def _await_connection(link: socket.socket) -> socket.socket | None:
    """In the spare: wait for the request's connection on ``link``; None when the zygote closes it."""
    _, fds, _, _ = socket.recv_fds(link, 1, 1)
    link.close()
    if not fds:
        return None
    return socket.socket(fileno=fds[0])


def _rehearse(workdir: Path) -> Rehearsal | None:
    """Start the rehearsal; None (spares then fault their pages as they go) when it cannot be forked."""
    try:
        return Rehearsal(workdir)
    except OSError as exc:
        print(f"pixelbox zygote: no rehearsal ({exc}); spares will not write their pages ahead", file=sys.stderr)
        return None


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _become(conn: socket.socket, isolated: bool) -> None:
    """Read the request, take the log as stderr, confine (``isolated``: its network and IPC namespaces
    are made already), then serve as the sandbox's kernel."""
    request, log_fd = receive_request(conn)
    conn.close()
    os.dup2(log_fd, 2)
    os.close(log_fd)
    with contextlib.suppress(OSError, ValueError, IndexError):
        _show_argv(request.argv)
    request.confinement.apply(isolated=isolated)
    os.chdir(request.cwd)
    sys.argv = list(request.argv[1:])
    serve(Path(request.ipc_dir), request.env)


def _show_argv(argv: tuple[str, ...]) -> None:
    """Make ``/proc/self/cmdline`` read as a cold kernel's, by rewriting the command line in place.

    The bytes between ``arg_start`` and ``arg_end`` (fields 48 and 49 of ``/proc/self/stat``) are
    this process's own memory, inherited from the zygote, which the host starts with room to
    spare (``--room``); as ``setproctitle`` does, the new command line is written over them and
    the rest is zeroed. Skipped when it would not fit.
    """
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])
    data = b"\0".join(a.encode() for a in argv) + b"\0"
    if len(data) <= end - start:
        ctypes.memmove(start, data.ljust(end - start, b"\0"), end - start)


def _say(conn: socket.socket, record: dict[str, int | str | None]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(record).encode() + b"\n")


def main(argv: list[str] | None = None) -> None:
    """Preload, listen on ``--socket``, say ``ready`` on stdout, serve until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m pixelbox.kernel.zygote")
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--room", default="", help="padding: room for the forked kernels' command lines")
    parser.add_argument("--cgroup-parent", action="append", default=[], type=Path, help="where spares' groups go")
    parser.add_argument("--cgroup-prefix", default="pbx-spare", help="the name spares' groups start with")
    args = parser.parse_args(argv)
    without_workspace_imports()  # its own directory: kernels forked from it must not import from there
    missing = preload()
    gc.collect()
    gc.freeze()  # what the preload made is never traversed again: kernels do not copy its pages for the collector
    prefault = os.environ.get("PIXELBOX_PREFAULT", "1") != "0"
    zygote = Zygote(args.socket, SpareGroups(args.cgroup_parent, args.cgroup_prefix), prefault)
    sys.stdout.write(json.dumps({"ready": os.getpid(), "missing": missing}) + "\n")
    sys.stdout.flush()
    try:
        zygote.run()
    finally:
        with contextlib.suppress(OSError):
            args.socket.unlink()


if __name__ == "__main__":
    main()
