"""Defence in depth under the AST policy: a CPython audit hook active while a cell runs.

The AST guards only see what model code does itself; library code it calls (matplotlib
spawning ``latex``, imageio fetching a URL, pathlib deleting a file) runs unguarded. Audit
events are raised by the interpreter for every caller, so while a cell executes this hook
refuses: starting processes and sending signals, sockets and name lookups, loading native
code through ctypes, building code or function objects from parts, creating links, opening
``/proc``, ``/sys`` and ``/dev`` files other than the harmless devices, and removing,
renaming or changing permissions of files outside the writable places (the workspace, the
temporary directory, the user cache and config directories, and any configured extras).

Audit hooks cannot be removed, so the hook is installed once per process and does nothing
unless a policy cell is running (``begin``/``end`` around each execution).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable
from typing import Any

from pixelbox.kernel.policy.errors import PolicyPermissionError

PROCESS_EVENTS = frozenset(
    {
        "os.system",
        "os.exec",
        "os.spawn",
        "os.posix_spawn",
        "os.fork",
        "os.forkpty",
        "os.kill",
        "os.killpg",
        "subprocess.Popen",
        "pty.spawn",
        "os.startfile",
    }
)
CODE_EVENTS = frozenset({"code.__new__", "function.__new__"})
LINK_EVENTS = frozenset({"os.symlink", "os.link"})
DESTRUCTIVE_EVENTS = frozenset(
    {
        "os.remove",
        "os.rmdir",
        "os.rename",
        "os.chmod",
        "os.chown",
        "shutil.rmtree",
    }
)
PSEUDO_FS = ("/proc", "/sys", "/dev")
HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"})


class AuditState:
    """What the hook enforces, and whether a policy cell is running right now."""

    def __init__(self) -> None:
        self.depth = 0
        self.writable: tuple[str, ...] = ()

    def configure(self, writable: Iterable[str]) -> None:
        """Set the places where destructive file operations are allowed."""
        roots = {os.path.realpath(p) for p in writable if p}
        self.writable = tuple(sorted(roots))


STATE = AuditState()
_installed = False


def default_writable(workspace: str, extra: Iterable[str] = ()) -> list[str]:
    """Workspace, temp dir, per-user cache/config (matplotlib keeps its font cache there), extras."""
    home = os.path.expanduser("~")
    return [
        workspace,
        tempfile.gettempdir(),
        os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"),
        os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"),
        os.environ.get("MPLCONFIGDIR", ""),
        *extra,
    ]


def install_hook() -> None:
    """Register the hook once per process."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


def begin() -> None:
    """A policy cell starts running."""
    STATE.depth += 1


def end() -> None:
    """A policy cell has finished."""
    STATE.depth = max(0, STATE.depth - 1)


def _refuse(what: str, rule: str, hint: str = "") -> PolicyPermissionError:
    return PolicyPermissionError.build(what, rule, hint)


def _as_path(value: Any) -> str | None:
    if isinstance(value, int):
        return None
    try:
        return os.fsdecode(os.fspath(value))
    except TypeError:
        return None


def check_open_path(file: Any) -> None:
    """Refuse opening pseudo-file-system paths (``/proc``, ``/sys``, ``/dev`` except null & co)."""
    path = _as_path(file)
    if path is None:
        return
    real = os.path.realpath(path)
    if real in HARMLESS_DEVICES:
        return
    if any(real == root or real.startswith(root + "/") for root in PSEUDO_FS):
        raise _refuse(
            f"opening {path!r} is not allowed",
            "denied-path",
            "/proc, /sys and /dev hold the system's state, not task data",
        )


def _resolve(path: Any, dir_fd: Any) -> str | None:
    text = _as_path(path)
    if text is None:
        return None
    if isinstance(dir_fd, int) and not os.path.isabs(text):
        try:
            text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
        except OSError:
            return None
    return os.path.realpath(text)


def check_writable(path: Any, dir_fd: Any = None) -> None:
    """Refuse destructive operations on ``path`` outside the writable places."""
    real = _resolve(path, dir_fd)
    if real is None:
        return
    if not any(real == root or real.startswith(root + "/") for root in STATE.writable):
        raise _refuse(
            f"removing, renaming or changing permissions of {real!r} is not allowed",
            "denied-path",
            "Only files in the workspace and the temporary directory may be changed this way",
        )


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not STATE.depth:
        return
    if event == "open":
        check_open_path(args[0])
    elif event in PROCESS_EVENTS:
        raise _refuse(f"starting processes or sending signals is not allowed ({event})", "no-process")
    elif event.startswith("socket."):
        raise _refuse(f"network access is not allowed ({event})", "no-network")
    elif event.startswith("ctypes."):
        raise _refuse(f"calling native code through ctypes is not allowed ({event})", "no-native-code")
    elif event in CODE_EVENTS:
        raise _refuse(f"building code or function objects is not allowed ({event})", "no-code-objects")
    elif event in LINK_EVENTS:
        raise _refuse(f"creating links is not allowed ({event})", "no-links", "Copy the file instead")
    elif event in DESTRUCTIVE_EVENTS:
        _check_destructive(event, args)


def _check_destructive(event: str, args: tuple[Any, ...]) -> None:
    if event == "os.rename":
        check_writable(args[0], args[2])
        check_writable(args[1], args[3])
    elif event in ("os.chmod", "os.chown"):
        check_writable(args[0], args[-1])
    else:
        check_writable(args[0], args[1] if len(args) > 1 else None)
