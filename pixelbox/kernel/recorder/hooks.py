"""Wiring the recorder into an IPython shell: cell boundaries, source lines and tracebacks.

- ``pre_run_cell`` starts an execution and notes the agent's original source, sent by the host
  in the execute_request metadata under ``pixelbox.original``;
- the shell's compiler cache is wrapped so the cell's ``linecache`` entry holds the original
  lines (same count, same numbers), so tracebacks and warnings quote the agent's code;
- a traceback filter (:mod:`pixelbox.kernel.tracebacks`) unlinks the recorder's own frames;
- ``post_run_cell`` re-binds ``__pbx__`` if the cell removed it (marking the execution tampered),
  publishes any integrity problems, then the execution's events as one batch on the pixelbox
  channel (a batch that cannot be sent becomes one more integrity problem).
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pixelbox.contract.wire import EXEC_METADATA_KEY, ORIGINAL_SOURCE_METADATA_KEY, RECORDER_NAME
from pixelbox.kernel.recorder.core import Recorder
from pixelbox.kernel.tracebacks import add_traceback_filter, strip_frames, under

_RECORDER_DIR = str(Path(__file__).resolve().parent)
_is_recorder_frame = under(_RECORDER_DIR)
_ORIGINAL_METHODS = {
    name: Recorder.__dict__[name] for name in ("c", "s", "t", "sub", "inv", "gt", "ge", "lt", "le", "tool")
}

Publisher = Callable[[str, Any], None]


class ShellHooks:
    """Connects one :class:`Recorder` to one IPython shell."""

    def __init__(self, shell: Any, recorder: Recorder, publish: Publisher | None = None) -> None:
        self.shell = shell
        self.recorder = recorder
        self.publish = publish or _channel_publish
        self.original_source: str | None = None
        self.last_batch: list[dict[str, Any]] = []
        self.last_problems: list[str] = []
        self.depth = 0
        """Nesting of run_cell (cell magics such as %%capture run a cell inside a cell)."""

    def install(self) -> None:
        self.bind()
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)
        self._wrap_compiler_cache()
        self._wrap_showtraceback()

    def bind(self) -> None:
        self.shell.user_ns[RECORDER_NAME] = self.recorder
        hidden = getattr(self.shell, "user_ns_hidden", None)
        if isinstance(hidden, dict):
            hidden[RECORDER_NAME] = self.recorder

    # -- events ------------------------------------------------------------------------------
    def pre_run_cell(self, info: Any = None) -> None:
        self.depth += 1
        if self.depth > 1:
            return
        problems = self._integrity()
        self.recorder.begin()
        self.recorder.problems.extend(problems)
        metadata = self._parent_metadata()
        host_index = metadata.get(EXEC_METADATA_KEY)
        if isinstance(host_index, int) and not isinstance(host_index, bool):
            self.recorder.exec_index = host_index
        source = metadata.get(ORIGINAL_SOURCE_METADATA_KEY)
        self.original_source = source if isinstance(source, str) else self.original_source

    def post_run_cell(self, result: Any = None) -> None:
        self.depth = max(0, self.depth - 1)
        if self.depth > 0:
            return
        events = self.recorder.end()
        problems = list(self.recorder.problems) + self._integrity()
        self.last_batch, self.last_problems = list(events), problems
        if problems:  # first, so that nothing about the events can keep it from the host
            self._notify(problems)
        if events:
            try:
                self.publish("event", events)
            except Exception as exc:  # never lose the news with the batch
                self._notify([f"the execution's {len(events)} event(s) could not be sent: {type(exc).__name__}"])

    def _notify(self, problems: list[str]) -> None:
        self.publish("notice", {"kind": "trace_integrity", "exec": self.recorder.exec_index, "problems": problems})

    def set_original(self, source: str | None) -> None:
        """Provide the agent's source for the next cell (tests, or hosts without metadata)."""
        self.original_source = source

    def _integrity(self) -> list[str]:
        """Restore the recorder binding and methods, describing anything the cell changed."""
        problems = []
        if self.shell.user_ns.get(RECORDER_NAME) is not self.recorder:
            problems.append(f"the cell deleted or rebound {RECORDER_NAME}; ops after that were not recorded")
            self.bind()
        for name, method in _ORIGINAL_METHODS.items():
            if Recorder.__dict__.get(name) is not method:
                problems.append(f"the recorder method {name!r} was replaced")
                setattr(Recorder, name, method)
        return problems

    def _parent_metadata(self) -> dict[str, Any]:
        """The metadata of the execute_request being run (the host's per-cell facts), or {}."""
        from pixelbox.kernel.channel import parent_metadata

        return parent_metadata(self.shell)

    # -- source lines and tracebacks ---------------------------------------------------------
    def _wrap_compiler_cache(self) -> None:
        compiler = self.shell.compile
        original_cache = compiler.cache
        hooks = self

        def cache(transformed_code: str, number: int = 0, raw_code: str | None = None) -> str:
            name: str = original_cache(transformed_code, number, raw_code)
            hooks.recorder.cell_files[name] = hooks.recorder.exec_index
            source, hooks.original_source = hooks.original_source, None
            if source is not None:
                _show_original(name, transformed_code, source)
            return name

        compiler.cache = cache

    def _wrap_showtraceback(self) -> None:
        add_traceback_filter(self.shell, strip_recorder_frames)


def _show_original(name: str, instrumented: str, original: str) -> None:
    """Make ``linecache`` quote the original lines when the line structure matches."""
    lines = [line + "\n" for line in original.splitlines()]
    if len(lines) != len(instrumented.splitlines()):
        return
    entry = linecache.cache.get(name)
    if entry is not None and len(entry) == 4:
        _, mtime, _, fullname = entry
        linecache.cache[name] = (len(original), mtime, lines, fullname)


def strip_recorder_frames(exc: BaseException) -> None:
    """Unlink frames of the recorder's own code from ``exc``'s traceback (and its causes)."""
    strip_frames(exc, _is_recorder_frame)


def _channel_publish(kind: str, payload: Any) -> None:
    from pixelbox.kernel.channel import publish

    publish(kind, payload)
