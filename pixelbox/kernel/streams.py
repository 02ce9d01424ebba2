"""Keeps the kernel's own output streams working from one cell to the next.

A cell that runs ``sys.stdout.close()`` (or closes ``sys.stderr``, or rebinds either) would
otherwise leave every later cell failing with "I/O operation on closed file", or printing
into the void, until the kernel is restarted. Before each cell this layer puts the kernel's
streams back (reopening a closed ipykernel ``OutStream`` on the same iopub thread) and says
so on the pixelbox channel: ``notice`` ``{"source": "streams", "message": ...}``.

Installed for every kernel by :mod:`pixelbox.kernel.plugins`, whatever the config says.
Nested cells (``%%capture`` runs its body as a cell while its capture is in place) are left
alone: only the outermost cell's start is checked.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

from pixelbox.kernel.cells import OutermostCell

Publisher = Callable[[str, Any], None]
_FDS = {"stdout": 1, "stderr": 2}


class StreamGuard(OutermostCell):
    """Remembers the kernel's ``sys.stdout``/``sys.stderr`` and restores them before each cell."""

    def __init__(self, shell: Any, publish: Publisher | None = None) -> None:
        super().__init__(shell)
        self.publish = publish or _channel_publish
        self.own: dict[str, Any] = {name: getattr(sys, name) for name in _FDS}
        self.watched = {name: bool(getattr(stream, "_should_watch", False)) for name, stream in self.own.items()}
        """Whether each stream also captured its file descriptor (ipykernel's ``watchfd``)."""
        self.pub_threads = {name: getattr(stream, "pub_thread", None) for name, stream in self.own.items()}

    def before(self) -> None:
        messages = [message for name in _FDS if (message := self.check(name)) is not None]
        if messages:
            with contextlib.suppress(Exception):  # the notice is informational; the streams matter
                self.publish("notice", {"source": "streams", "message": " ".join(messages)})

    def check(self, name: str) -> str | None:
        """Restore ``sys.<name>`` if needed; returns what was done, or ``None`` if all was well."""
        own = self.own[name]
        current = getattr(sys, name)
        own_closed = _is_closed(own)
        if current is own and not own_closed:
            return None
        what = "closed" if current is own else ("replaced and closed" if own_closed else "replaced")
        stream = self.reopen(name) if own_closed else own
        if stream is None:
            return f"sys.{name} was {what} by an earlier cell and could not be reopened; restart the kernel."
        # the kernel told sys.<name> which request this cell answers before this hook ran, so a
        # stream that was not in place then must be told too, or its output goes to a stale one
        parent = getattr(self.shell, "parent_header", None)
        if isinstance(parent, dict) and parent and hasattr(stream, "set_parent"):
            stream.set_parent(parent)
        setattr(sys, name, stream)
        self.own[name] = stream
        return f"sys.{name} was {what} by an earlier cell; the kernel's {name} has been restored."

    def reopen(self, name: str) -> Any:
        """A new stream like the kernel's closed one, on the same iopub thread (``None`` if not an OutStream)."""
        old = self.own[name]
        pub_thread = self.pub_threads[name]
        session = getattr(old, "session", None)
        if pub_thread is None or session is None:
            return None
        current = getattr(sys, name)
        # ipykernel captures the descriptor of whatever sys.<name> is while the stream is made
        setattr(sys, name, _Descriptor(_FDS[name]))
        try:
            stream = type(old)(session, pub_thread, name, watchfd=self.watched[name])
        except Exception:
            return None
        finally:
            setattr(sys, name, current)
        return stream


class _Descriptor:
    """Stands for a standard stream by its file descriptor alone."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd


def _is_closed(stream: Any) -> bool:
    try:
        return bool(stream.closed)
    except Exception:
        return True


def _channel_publish(kind: str, payload: Any) -> None:
    from pixelbox.kernel.channel import publish

    publish(kind, payload)


def install(shell: Any, section: dict[str, Any] | None = None, publish: Publisher | None = None) -> StreamGuard:
    """Guard ``shell``'s output streams (``section`` is accepted for the plugin interface and unused)."""
    guard = StreamGuard(shell, publish)
    guard.install()
    return guard


__all__ = ["StreamGuard", "install"]
