"""Output as it happens: ``execute(..., on_stdout=, on_stderr=, on_output=)`` and ``stream(code)``.

The kernel's iopub messages are applied one at a time (:class:`pixelbox.runtime.protocol.Collected`);
each stdout or stderr chunk and each rich output is also handed to the caller's callbacks the
moment it arrives, before the cell ends. The :class:`Execution` returned at the end is the same
as without callbacks (capped streams, outputs, artifacts, events). Callbacks see every chunk,
uncapped: a callback that keeps everything a flooding cell prints keeps it all.

A callback that raises is not called again for that cell, and the cell runs on (the kernel is
never left mid-request); the execution gets a notice naming the callback and the exception.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pixelbox.runtime.execution import Execution, Output

OutputKind = Literal["stdout", "stderr", "output", "result"]
TextCallback = Callable[[str], Any]
OutputCallback = Callable[[Output], Any]


@dataclass(frozen=True)
class OutputEvent:
    """One piece of a cell's output as it arrived; the last event of a stream is its ``result``.

    ``kind`` is ``stdout`` or ``stderr`` (``text`` holds the chunk), ``output`` (``output`` holds
    the rich output: a display or the cell's value, binary payloads already in files) or
    ``result`` (``execution`` holds the finished :class:`Execution`).
    """

    kind: OutputKind
    text: str = ""
    output: Output | None = None
    execution: Execution | None = None


class Listeners:
    """The callbacks of one ``execute`` call, each guarded so a failing one cannot stop the cell."""

    def __init__(
        self,
        on_stdout: TextCallback | None = None,
        on_stderr: TextCallback | None = None,
        on_output: OutputCallback | None = None,
    ) -> None:
        self.callbacks: dict[str, Callable[[Any], Any] | None] = {
            "stdout": on_stdout,
            "stderr": on_stderr,
            "output": on_output,
        }
        for name, callback in self.callbacks.items():
            if callback is not None and not callable(callback):
                raise TypeError(f"on_{name} must be callable, got {type(callback).__name__}")
        self.failures: list[str] = []

    @property
    def active(self) -> bool:
        """Whether any callback was given (without one, nothing is called per message)."""
        return any(self.callbacks.values())

    def __call__(self, kind: str, payload: Any) -> None:
        callback = self.callbacks.get(kind)
        if callback is None:
            return
        try:
            callback(payload)
        except Exception as exc:
            self.callbacks[kind] = None
            self.failures.append(f"the on_{kind} callback raised {type(exc).__name__}: {exc}; it was not called again")


Run = Callable[..., Execution]
"""``execute`` with everything but the callbacks bound: called with ``on_stdout``, ``on_stderr``, ``on_output``."""


def stream_sync(run: Run) -> Iterator[OutputEvent]:
    """Run ``run`` in a thread and yield its output events as they arrive, then the ``result``."""
    events: queue.Queue[OutputEvent | BaseException] = queue.Queue()
    worker = threading.Thread(target=_produce, args=(run, events.put), name="pixelbox-stream", daemon=True)
    worker.start()
    while True:
        item = events.get()
        if isinstance(item, BaseException):
            raise item
        yield item
        if item.kind == "result":
            return


async def stream_async(run: Run) -> AsyncIterator[OutputEvent]:
    """The same as :func:`stream_sync` for an event loop: the cell runs in a worker thread."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[OutputEvent | BaseException] = asyncio.Queue()

    def put(item: OutputEvent | BaseException) -> None:
        loop.call_soon_threadsafe(events.put_nowait, item)

    worker = loop.run_in_executor(None, _produce, run, put)
    try:
        while True:
            item = await events.get()
            if isinstance(item, BaseException):
                raise item
            yield item
            if item.kind == "result":
                return
    finally:
        await asyncio.shield(worker)


def _produce(run: Run, put: Callable[[OutputEvent | BaseException], None]) -> None:
    try:
        execution = run(
            on_stdout=lambda text: put(OutputEvent("stdout", text=text)),
            on_stderr=lambda text: put(OutputEvent("stderr", text=text)),
            on_output=lambda output: put(OutputEvent("output", output=output)),
        )
        put(OutputEvent("result", execution=execution))
    except BaseException as exc:
        put(exc)
