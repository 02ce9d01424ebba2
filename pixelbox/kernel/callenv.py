"""Per-cell environment variables: ``Sandbox.execute(code, env={...})``.

The host sends the variables in the execute request's metadata (``pixelbox.env``). Before the
cell they are set in ``os.environ`` (which child processes and libraries read), and after it each
is put back as it was: restored to its earlier value, or removed if it had none. A nested cell
(``%%capture`` and friends) is left alone: only the outermost cell's request counts.

Installed for every kernel by :mod:`pixelbox.kernel.plugins`. Standard library only.
"""

from __future__ import annotations

import os
from typing import Any

from pixelbox.contract.wire import ENV_METADATA_KEY
from pixelbox.kernel.cells import OutermostCell

_UNSET = None


class CellEnvironment(OutermostCell):
    """Applies one request's variables before its cell and undoes them after."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.saved: dict[str, str | None] = {}

    def before(self) -> None:
        for name, value in self._requested().items():
            self.saved.setdefault(name, os.environ.get(name, _UNSET))
            os.environ[name] = value

    def after(self) -> None:
        saved, self.saved = self.saved, {}
        for name, value in saved.items():
            if value is _UNSET:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def _requested(self) -> dict[str, str]:
        """The variables of the request being run: string names and values only, anything else ignored."""
        kernel = getattr(self.shell, "kernel", None)
        try:
            parent = kernel.get_parent() if kernel is not None and hasattr(kernel, "get_parent") else None
        except Exception:
            parent = None
        metadata = parent.get("metadata") if isinstance(parent, dict) else None
        requested = metadata.get(ENV_METADATA_KEY) if isinstance(metadata, dict) else None
        if not isinstance(requested, dict):
            return {}
        return {
            name: value
            for name, value in requested.items()
            if isinstance(name, str)
            and name
            and "=" not in name
            and "\x00" not in name
            and isinstance(value, str)
            and "\x00" not in value
        }


def install(shell: Any, section: dict[str, Any] | None = None) -> CellEnvironment:
    """Register the per-cell environment on ``shell`` (``section`` is unused: always on)."""
    layer = CellEnvironment(shell)
    layer.install()
    return layer
