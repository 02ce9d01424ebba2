"""The kernel's IPython application: ipykernel's, minus everything a kernel could plant for its next start.

ipykernel reads configuration files (``ipython_kernel_config.py``, ``ipython_config.py`` in the
profile under ``IPYTHONDIR``, ``jupyter_*_config.py`` under ``~/.jupyter``) and runs the profile's
``startup/*.py`` files before the first cell, with the real builtins: the policy layers are
installed only afterwards. Those directories are in the sandbox's home, which the kernel can
write, so a cell could leave code there that the next kernel of its sandbox (after a crash, a
timeout or a restart) runs outside every guard. The sandbox's kernel reads none of them: its
options all come from the command line (:data:`pixelbox.kernel.fresh.KERNEL_ARGS`).

Its kernel (:class:`SandboxKernel`) answers the host's end-of-request marker
(:data:`~pixelbox.contract.wire.END_MSG_TYPE`) with its ``idle`` alone.

The options are the same for every kernel; only the connection file differs. A primed process
(the zygote) parses them once (:meth:`SandboxKernelApp.remember_options`), and every kernel
forked from it takes that parsed configuration instead of building traitlets' command-line
parser again (a tenth of a forked kernel's start).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from copy import deepcopy
from types import SimpleNamespace
from typing import Any, ClassVar

from ipykernel.ipkernel import IPythonKernel
from ipykernel.kernelapp import IPKernelApp
from ipykernel.kernelbase import Kernel
from traitlets import Type
from traitlets.config import Config

from pixelbox.contract.wire import END_MSG_TYPE

PLACEHOLDER = "/nonexistent/kernel.json"
"""The connection file of the throwaway parse: never read."""


class SandboxKernel(IPythonKernel):
    """``IPythonKernel`` that answers the host's end-of-request marker at the least cost.

    The marker is queued behind each execute request, and ipykernel dispatches shell requests one
    at a time, in order: when the marker's turn comes, everything the request published (its output
    flushed, its ``idle``) is already queued on iopub, and the marker's ``idle`` goes out behind it.
    That ``idle`` is all the marker gets: a full dispatch would add a ``busy``, a reply and two
    waits for the output streams' thread per cell, none of which the host reads.

    It also skips ipykernel's list of every loaded module's file, made for a debugger the kernel does
    not have (:func:`pixelbox.kernel.fresh.without_debugger`): in a kernel forked from the zygote that
    list alone writes to some 1700 of the zygote's pages (the modules' and their file names' reference
    counts), 7-10 ms of its start.
    """

    def __init__(self, **kwargs: Any) -> None:
        with _no_module_list():
            super().__init__(**kwargs)

    async def dispatch_shell(self, msg: Any, /, subshell_id: str | None = None, *, concurrent: bool = False) -> None:
        """Publish a marker's ``idle`` (its signature checked); dispatch anything else as ipykernel does."""
        marker = self._end_marker(msg)
        if marker is None:
            await super().dispatch_shell(msg, subshell_id=subshell_id, concurrent=concurrent)
        else:
            self._publish_status("idle", "shell", parent=marker)

    def _end_marker(self, frames: Any) -> dict[str, Any] | None:
        """The deserialized marker if ``frames`` are one (signed with the session's key), else None."""
        if self.session is None:
            return None
        try:
            _, parts = self.session.feed_identities(frames, copy=False)
            frame = parts[1]
            header = json.loads(frame if isinstance(frame, bytes) else frame.bytes)
            if not isinstance(header, dict) or header.get("msg_type") != END_MSG_TYPE:
                return None
            marker = self.session.deserialize(parts, copy=False)  # its signature remembered: no replay
        except Exception:  # not a message, or not a signed one: ipykernel's dispatch says so
            return None
        return dict(marker)


@contextlib.contextmanager
def _no_module_list() -> Iterator[None]:
    """While ``IPythonKernel.__init__`` runs, show its module no loaded modules (its one use of ``sys``
    there lists their files for the debugger); as it is when a debugger is available."""
    from ipykernel import debugger, ipkernel

    if debugger._is_debugpy_available:
        yield
        return
    real = ipkernel.sys
    ipkernel.sys = SimpleNamespace(modules={})  # type: ignore[assignment]
    try:
        yield
    finally:
        ipkernel.sys = real


class SandboxKernelApp(IPKernelApp):
    """``IPKernelApp`` that loads no configuration file, runs no startup file and runs :class:`SandboxKernel`."""

    kernel_class = Type(SandboxKernel, klass=Kernel)
    _parsed: ClassVar[dict[tuple[str, ...], tuple[Config, str]]] = {}
    """Options parsed before (by :meth:`remember_options`) -> their configuration without the connection
    file, and the section the parser put the connection file in."""

    @classmethod
    def remember_options(cls, options: tuple[str, ...]) -> Config:
        """Parse ``-f PLACEHOLDER *options`` once in a throwaway application and keep the result, so
        later kernels given ``-f FILE *options`` skip the parser; return the configuration.

        Nothing of a sandbox is in it (the options are fixed), and the application is dropped:
        no singleton, no sockets, no threads.
        """
        app = cls()
        try:
            app.parse_command_line(["-f", PLACEHOLDER, *options])
            config = deepcopy(app.cli_config)
        finally:
            cls.clear_instance()
        sections = [name for name, section in config.items() if section.get("connection_file") == PLACEHOLDER]
        if len(sections) != 1:
            raise ValueError(f"the kernel's options did not parse as expected: {config!r}")
        del config[sections[0]]["connection_file"]
        cls._parsed[tuple(options)] = (config, sections[0])
        return config

    def parse_command_line(self, argv: Any = None) -> None:
        """As traitlets does, but from the remembered configuration when ``argv`` is ``-f FILE`` and
        options parsed before (the same values the parser would give)."""
        known = self._parsed.get(tuple(argv[2:])) if argv and len(argv) >= 2 and argv[0] == "-f" else None
        if known is None:
            super().parse_command_line(argv)
            return
        config = deepcopy(known[0])
        config[known[1]].connection_file = argv[1]
        self.argv = list(argv)
        self.cli_config = config
        self.update_config(config)
        self.extra_args = []

    def load_config_file(self, *args: object, **kwargs: object) -> None:
        """Read no configuration file: the command line is the whole configuration."""

    def _run_startup_files(self) -> None:
        """Run no startup file (profile ``startup/``, ``PYTHONSTARTUP``)."""
