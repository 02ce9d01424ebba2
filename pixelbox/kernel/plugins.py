"""Installs the in-kernel layers the config enables, in a fixed order.

Order matters: the policy must see the cell after the tracer's instrumentation (the tracer
rewrites code on the host, so it arrives already instrumented), the image I/O layer patches
libraries before the recorder wraps them so that captured saves are recorded as ``io`` events.
Each layer module exposes ``install(shell, section: dict) -> None``. The ``ALWAYS`` layers are
installed for every kernel, before the configured ones (the stream guard must remember the
kernel's own output streams).
"""

from __future__ import annotations

import importlib
import traceback
from typing import Any

from pixelbox.contract.config import KernelConfig

ALWAYS: tuple[tuple[str, str], ...] = (("streams", "pixelbox.kernel.streams"), ("env", "pixelbox.kernel.callenv"))
LAYERS: tuple[tuple[str, str], ...] = (
    ("policy", "pixelbox.kernel.policy"),
    ("io", "pixelbox.kernel.imageio"),
    ("trace", "pixelbox.kernel.recorder"),
    ("trace", "pixelbox.kernel.atomic"),
)
"""``(config section, layer module)`` in install order; the atomic tools serve through the recorder
(``__pbx__.tool``), so they are installed with it, after it."""


def install_plugins(shell: Any, config: KernelConfig) -> list[str]:
    """Install each enabled layer; return human-readable problems instead of dying.

    A layer that fails to install is reported to the host (which decides whether that is
    fatal: a requested policy that cannot be installed is) rather than killing the kernel.
    """
    problems: list[str] = []
    layers: list[tuple[str, str, dict[str, Any]]] = [(name, module, {}) for name, module in ALWAYS]
    layers += [(name, module, getattr(config, name)) for name, module in LAYERS]
    for section_name, module_name, section in layers:
        if section_name not in dict(ALWAYS) and not section.get("enabled"):
            continue
        try:
            module = importlib.import_module(module_name)
            module.install(shell, section)
        except Exception:
            problems.append(f"{section_name} layer ({module_name}) failed to install:\n{traceback.format_exc()}")
    return problems
