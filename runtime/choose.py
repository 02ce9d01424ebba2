"""Choosing a backend for a sandbox, and saying why."""

from __future__ import annotations

import threading

from pixelbox.runtime.backends.base import Backend
from pixelbox.runtime.backends.local import LocalBackend
from pixelbox.runtime.errors import BackendUnavailable
from pixelbox.runtime.options import SandboxOptions

_cache: dict[tuple[str, str, str | None], Backend] = {}
_lock = threading.Lock()


def _docker(runtime: str, image: str | None) -> Backend:
    from pixelbox.runtime.backends.docker import DockerBackend

    key = ("docker", runtime, image)
    with _lock:
        if key not in _cache:
            _cache[key] = DockerBackend(runtime=runtime, image=image)
        return _cache[key]


def choose_backend(options: SandboxOptions) -> tuple[Backend, str]:
    """Return the backend for ``options`` and a sentence explaining the choice.

    ``auto`` prefers Docker (a real isolation boundary) when an engine with the kernel image
    is reachable, and otherwise falls back to the local backend, saying what was missing.
    """
    if options.backend == "local":
        return LocalBackend(), "local backend requested"
    if options.backend == "docker":
        return _docker(options.runtime, options.image), f"docker backend requested (runtime {options.runtime})"
    try:
        backend = _docker(options.runtime, options.image)
    except BackendUnavailable as exc:
        return LocalBackend(), f"auto: docker unavailable, using local ({exc})"
    return backend, f"auto: Docker engine and kernel image found (runtime {options.runtime})"


def forget_backends() -> None:
    """Drop cached backends (after the engine restarted or an image was rebuilt)."""
    with _lock:
        _cache.clear()
