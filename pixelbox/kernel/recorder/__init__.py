"""In-kernel trace recorder: records the image operations a cell actually executes.

Only the standard library is imported here: NumPy, Pillow, OpenCV, SciPy, scikit-image and
matplotlib entries are resolved once the agent imports them (see ``libs``), so the recorder
costs kernel start nothing.

Public surface for other in-kernel layers:

- ``install(shell, section)``: the layer entry point (see ``pixelbox.kernel.plugins``);
- ``current()``: the kernel's recorder, with ``register_root(obj_or_path, key)`` for task inputs
  and ``link_artifact(obj_or_path, artifact)`` for captured artifacts;
- ``last_events()``: the events of the last finished execution (what was published).
"""

from __future__ import annotations

from typing import Any

from pixelbox.contract.events import EVENT_VERSION
from pixelbox.kernel.recorder.core import Recorder
from pixelbox.kernel.recorder.hooks import ShellHooks, strip_recorder_frames

_RECORDER: Recorder | None = None
_HOOKS: ShellHooks | None = None


def current() -> Recorder:
    """The kernel's recorder, created on first use (atomic tools may run without a shell)."""
    global _RECORDER
    if _RECORDER is None:
        _RECORDER = Recorder()
    return _RECORDER


def install(shell: Any, section: dict[str, Any] | None = None, publish: Any = None) -> ShellHooks:
    """Bind the recorder as ``__pbx__`` in ``shell`` and hook cell boundaries and tracebacks.

    ``section`` is the config's ``trace`` section; ``max_events`` bounds one execution's batch.
    ``publish(kind, payload)`` defaults to :func:`pixelbox.kernel.channel.publish`; tests may
    pass a collector. Installing twice on one shell is refused, since hooks would fire twice.
    """
    global _HOOKS
    if _HOOKS is not None and _HOOKS.shell is shell:
        raise RuntimeError("the pixelbox recorder is already installed in this shell")
    recorder = current()
    max_events = (section or {}).get("max_events")
    if max_events is not None:
        if not isinstance(max_events, int) or max_events < 1:
            raise ValueError(f"trace.max_events must be a positive integer, got {max_events!r}")
        recorder.max_events = max_events
    hooks = ShellHooks(shell, recorder, publish)
    hooks.install()
    _HOOKS = hooks
    return hooks


def hooks() -> ShellHooks | None:
    """The installed shell hooks, if any."""
    return _HOOKS


def last_events() -> list[dict[str, Any]]:
    """Events published for the last finished execution (empty before the first)."""
    return list(_HOOKS.last_batch) if _HOOKS is not None else []


def register_root(obj_or_path: Any, key: str | int) -> str:
    return current().register_root(obj_or_path, key)


def link_artifact(obj_or_path: Any, artifact: Any) -> None:
    current().link_artifact(obj_or_path, artifact)


__all__ = [
    "EVENT_VERSION",
    "Recorder",
    "ShellHooks",
    "current",
    "hooks",
    "install",
    "last_events",
    "link_artifact",
    "register_root",
    "strip_recorder_frames",
]
