"""Sandbox backends: where a kernel runs (a local child process, a runc or runsc container), by name.

:data:`BACKENDS` is the one list of backends: ``SandboxOptions`` validates ``backend`` and
``runtime`` against it, ``backend="auto"`` tries its entries in ``auto_rank`` order,
``pixelbox cleanup`` asks each for what dead processes left, and every ``--backend`` and
``--runtime`` choice of the command line is read from it. A new backend is its module (a
:class:`~pixelbox.runtime.backends.base.Backend` subclass) plus one ``BACKENDS.add`` line here.

Entries name their class as ``module:Class`` and import it on first use, so listing the
backends costs nothing and the Docker SDK is loaded only when a container backend is used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pixelbox.registry import Registry
from pixelbox.runtime.errors import BackendUnavailable

if TYPE_CHECKING:
    from pixelbox.runtime.backends.base import Backend
    from pixelbox.runtime.options import SandboxOptions

AUTO = "auto"
"""The backend choice that picks the first available backend in ``auto_rank`` order."""


@dataclass(frozen=True)
class BackendEntry:
    """One backend: its name, class (``module:Class``), a summary, the container runtimes it
    accepts, its rank for ``backend="auto"`` (lower first; ``None``: never chosen automatically),
    whether it is the ``fallback`` that needs nothing beyond the host (``pixelbox smoke`` fails
    when it does not start), and whether its kernels run in a ``container`` (an isolation boundary
    of their own; elsewhere the RestrictedPython policy is on by default)."""

    name: str
    target: str
    summary: str
    runtimes: tuple[str, ...] = ()
    auto_rank: int | None = None
    fallback: bool = False
    container: bool = False

    def load(self) -> type[Backend]:
        """The backend class (imported now)."""
        module, _, attribute = self.target.partition(":")
        cls: type[Backend] = getattr(importlib.import_module(module), attribute)
        return cls


BACKENDS: Registry[BackendEntry] = Registry("backend")
BACKENDS.add(
    "docker",
    BackendEntry(
        "docker",
        "pixelbox.runtime.backends.docker:DockerBackend",
        "one container per sandbox, runc or gVisor (runsc), no network interface",
        runtimes=("runc", "runsc"),
        auto_rank=0,
        container=True,
    ),
)
BACKENDS.add(
    "local",
    BackendEntry(
        "local",
        "pixelbox.runtime.backends.local:LocalBackend",
        "a child process of the host under its own uid, network namespace, cgroup and rlimits",
        auto_rank=1,
        fallback=True,
    ),
)


def backend_choices() -> tuple[str, ...]:
    """``auto`` and every registered backend, for options and ``--backend``."""
    return (AUTO, *BACKENDS.names())


def runtime_choices() -> tuple[str, ...]:
    """Every container runtime some backend accepts, for options and ``--runtime``."""
    found: dict[str, None] = {}
    for entry in BACKENDS.entries():
        found.update(dict.fromkeys(entry.runtimes))
    return tuple(found)


def choose_backend(options: SandboxOptions) -> tuple[Backend, str]:
    """Return the backend for ``options`` and a sentence explaining the choice.

    ``auto`` tries the backends in ``auto_rank`` order (Docker, a real isolation boundary, first)
    and takes the first that is available, saying what was missing before it.
    """
    if options.backend != AUTO:
        backend = BACKENDS.get(options.backend).load().for_options(options)
        return backend, backend.chosen_because(options, auto=False)
    candidates = [e for e in BACKENDS.entries() if e.auto_rank is not None and (e.container or options.image is None)]
    ranked = sorted(candidates, key=lambda e: e.auto_rank or 0)  # an image only runs in a container
    missing: list[tuple[str, BackendUnavailable]] = []
    for entry in ranked:
        try:
            backend = entry.load().for_options(options)
        except BackendUnavailable as exc:
            missing.append((entry.name, exc))
            continue
        if not missing:
            return backend, backend.chosen_because(options, auto=True)
        names = ", ".join(name for name, _ in missing)
        details = "; ".join(str(exc) for _, exc in missing)
        return backend, f"auto: {names} unavailable, using {entry.name} ({details})"
    raise BackendUnavailable("no backend is available: " + "; ".join(f"{name}: {exc}" for name, exc in missing))


__all__ = ["AUTO", "BACKENDS", "BackendEntry", "backend_choices", "choose_backend", "runtime_choices"]
