"""Defence in depth under the AST policy: a CPython audit hook active while a cell runs.

The AST guards only see what model code does itself; library code it calls (matplotlib
spawning ``latex``, imageio fetching a URL, pathlib deleting a file) runs unguarded. Audit
events are raised by the interpreter for every caller, so while a cell executes this hook
refuses: starting processes and sending signals, sockets and name lookups, loading native
code through ctypes, building code or function objects from parts, unpickling anything that
names a class or function (``pickle.find_class``: every pickle that could call code), ``exec``
and ``compile`` called by model code itself (or by code that was compiled from a string), creating
links, opening ``/proc``, ``/sys`` and ``/dev`` files other than the harmless devices, and
removing, renaming or changing permissions of files outside the writable places (the workspace,
the temporary directory, the user cache and config directories, and any configured extras).
Library code that compiles its own source (``namedtuple``, ``dataclasses``, imports, IPython
compiling the cell) is left alone: it is the caller that decides.

Audit hooks cannot be removed, so each installation adds one hook that does nothing unless its
policy's cell is running. Whether it is running is held in the hook's closure, reachable only
through the :class:`Switch` the policy layer keeps (model code never sees it), so code that got
hold of the real interpreter still finds no flag to clear.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from types import CodeType
from typing import Any

from RestrictedPython.transformer import INSPECT_ATTRIBUTES

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
DYNAMIC_CODE_EVENTS = frozenset({"exec", "compile"})
"""Running or compiling source: refused when the caller is model code (see :func:`_check_dynamic`)."""
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
FRAME_ATTRIBUTES = frozenset(INSPECT_ATTRIBUTES) | {
    "getattr",
    "vars",
    "globals",
    "locals",
    "eval",
    "exec",
    "compile",
    "__import__",
    "__builtins__",
    "__globals__",
    "__subclasses__",
    "__code__",
    "__closure__",
}
"""Names string-compiled library code may not use: attributes of frames, code objects, generators and
tracebacks (RestrictedPython's list), and the builtins and attributes that reach them by another
spelling (``getattr(g, 'gi_' + 'frame')``). ``namedtuple`` and ``dataclasses`` use none of them."""
PSEUDO_FS = ("/proc", "/sys", "/dev")
HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"})


class TrustedProgram:
    """One program the kernel's own tools run while a cell is armed (tesseract for OCR).

    Only :func:`trusted_program` makes one, from kernel code (model code cannot import pixelbox);
    while it is open the hook lets start exactly ``executable`` and signal the processes it started.
    """

    def __init__(self, executable: str) -> None:
        self.executable = os.path.realpath(executable)
        self.pids: set[int] = set()


_TRUSTED: list[TrustedProgram] = []


@contextlib.contextmanager
def trusted_program(executable: str) -> Iterator[TrustedProgram]:
    """Let the kernel's own tool start ``executable`` (and stop what it started) while this is open."""
    program = TrustedProgram(executable)
    _TRUSTED.append(program)
    try:
        yield program
    finally:
        _TRUSTED.remove(program)


def _trusted(event: str, args: tuple[Any, ...]) -> bool:
    """Whether a process event is the start (or stop) of a program a trusted tool runs right now."""
    if event == "subprocess.Popen" and args and args[0] is not None:
        real = os.path.realpath(os.fsdecode(args[0]))
        return any(program.executable == real for program in _TRUSTED)
    if event == "os.kill" and args:
        return any(args[0] in program.pids for program in _TRUSTED)
    return False


class AuditState:
    """Where destructive file operations are allowed (the same for every installation)."""

    def __init__(self) -> None:
        self.writable: tuple[str, ...] = ()

    def configure(self, writable: Iterable[str]) -> None:
        """Set the places where destructive file operations are allowed."""
        roots = {os.path.realpath(p) for p in writable if p}
        self.writable = tuple(sorted(roots))


STATE = AuditState()


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


class Switch:
    """Turns one installed hook on for a cell and off after it; the flag itself is in the hook's closure."""

    __slots__ = ("active", "begin", "end")

    def __init__(self, begin: Callable[[], None], end: Callable[[], None], active: Callable[[], bool]) -> None:
        self.begin, self.end, self.active = begin, end, active


def install_hook(is_model_code: Callable[[str], bool] = lambda filename: False) -> Switch:
    """Register a new hook; return the switch that arms it around each cell.

    ``is_model_code(filename)`` says whether a frame's file is one of the agent's cells; ``exec``
    and ``compile`` called from such a frame (or from code compiled from a string) are refused.
    """
    armed = [False]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if armed[0]:
            _check(event, args, is_model_code)

    def begin() -> None:
        armed[0] = True

    def end() -> None:
        armed[0] = False

    sys.addaudithook(hook)
    return Switch(begin, end, lambda: armed[0])


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


def _check(event: str, args: tuple[Any, ...], is_model_code: Callable[[str], bool]) -> None:
    if event == "open":
        check_open_path(args[0])
    elif event in PROCESS_EVENTS:
        if _trusted(event, args):
            return
        raise _refuse(f"starting processes or sending signals is not allowed ({event})", "no-process")
    elif event.startswith("socket."):
        raise _refuse(f"network access is not allowed ({event})", "no-network")
    elif event.startswith("ctypes."):
        raise _refuse(f"calling native code through ctypes is not allowed ({event})", "no-native-code")
    elif event in CODE_EVENTS:
        raise _refuse(f"building code or function objects is not allowed ({event})", "no-code-objects")
    elif event == "pickle.find_class":
        what = f"unpickling {args[0]}.{args[1]} is not allowed: unpickling runs arbitrary code"
        raise _refuse(what, "no-pickle", "Save arrays without object dtype (allow_pickle=False)")
    elif event in DYNAMIC_CODE_EVENTS:
        _check_dynamic(event, is_model_code)
        if event == "exec" and args:
            _check_string_code(args[0], is_model_code)
    elif event in LINK_EVENTS:
        raise _refuse(f"creating links is not allowed ({event})", "no-links", "Copy the file instead")
    elif event in DESTRUCTIVE_EVENTS:
        _check_destructive(event, args)


def _check_dynamic(event: str, is_model_code: Callable[[str], bool]) -> None:
    """Refuse ``exec``/``compile`` whose innermost Python caller is a cell or string-compiled code.

    Frames: 0 is this function, 1 ``_check``, 2 the hook, 3 the caller of ``exec``/``compile``.
    """
    try:
        filename = sys._getframe(3).f_code.co_filename
    except ValueError:  # called from C with no Python frame at all
        return
    from_file = filename.startswith("/") or filename.startswith("<frozen ")
    if is_model_code(filename) or not from_file:
        what = f"running or compiling code from a string is not allowed ({event})"
        raise _refuse(what, "denied-builtin", "Write the code directly in the cell")


def _check_string_code(code: Any, is_model_code: Callable[[str], bool]) -> None:
    """Refuse running string-compiled code that reaches frames (``gi_frame.f_globals``...).

    A library that evaluates a string model code handed it (``PIL.ImageMath.unsafe_eval``) runs
    it with the real ``eval``, outside the attribute guard; from a frame the real builtins and
    modules are one step away. Code a library generates itself (``namedtuple``, ``dataclasses``)
    never names frame attributes; code from files (imports) and the cells themselves (checked
    by the AST policy) are left alone.
    """
    if not isinstance(code, CodeType):
        return
    filename = code.co_filename
    if filename.startswith("/") or filename.startswith("<frozen ") or is_model_code(filename):
        return
    reached = sorted(FRAME_ATTRIBUTES.intersection(_code_names(code)))
    if reached:
        what = f"code compiled from a string may not reach frames or code objects ({', '.join(reached)})"
        raise _refuse(what, "no-frame-access", "Library functions that evaluate strings run under the policy too")


def _code_names(code: CodeType) -> Iterator[str]:
    """Every name (global, attribute) ``code`` and the code objects nested in it use."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _code_names(const)


def _check_destructive(event: str, args: tuple[Any, ...]) -> None:
    if event == "os.rename":
        check_writable(args[0], args[2])
        check_writable(args[1], args[3])
    elif event in ("os.chmod", "os.chown"):
        check_writable(args[0], args[-1])
    else:
        check_writable(args[0], args[1] if len(args) > 1 else None)
