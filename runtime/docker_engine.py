"""The Docker engine connection, for the container backend, the image build and cleanup.

One shared client per process (its connection pool sized for many concurrent sandboxes), or a
short-lived client with a timeout of its own (a base-image pull gives up quickly). The Docker SDK
is imported only here and only when asked, so nothing that never touches the engine pays for it.
"""

from __future__ import annotations

import threading
from typing import Any

from pixelbox.runtime.errors import BackendUnavailable

DEFAULT_TIMEOUT_S = 60
"""Seconds the shared client waits for an engine answer."""
_shared: list[Any] = []
_lock = threading.Lock()


def docker_client(timeout: int | None = None) -> Any:
    """A client for the engine ``DOCKER_HOST`` (or the local socket) names, checked with a ping.

    Without ``timeout``, the process's shared client. Raises :class:`BackendUnavailable`, saying how
    to get an engine running, when none answers.
    """
    if timeout is not None:
        return _connect(timeout, max_pool_size=10)
    with _lock:
        if not _shared:
            _shared.append(_connect(DEFAULT_TIMEOUT_S, max_pool_size=64))
        return _shared[0]


def _connect(timeout: int, *, max_pool_size: int) -> Any:
    import docker

    try:
        client = docker.from_env(timeout=timeout, max_pool_size=max_pool_size)
        client.ping()
    except Exception as exc:
        raise BackendUnavailable(
            f"no Docker engine is reachable ({exc.__class__.__name__}: {exc}); start dockerd (`make setup` "
            "installs and starts it, as root), set DOCKER_HOST, or use backend='local'"
        ) from None
    return client


__all__ = ["DEFAULT_TIMEOUT_S", "docker_client"]
