"""Shared test fixtures: backend parametrization and the leak check that ends every session.

Docker-backed tests need an engine and the kernel image. On a developer machine without
them those tests skip; with ``PIXELBOX_REQUIRE_DOCKER=1`` (set by ``.ci/run``) or ``CI=true``
they fail instead, because CI must prove the container backends for real.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

BACKENDS: dict[str, dict[str, Any]] = {
    "local": {"backend": "local"},
    "runc": {"backend": "docker", "runtime": "runc"},
    "runsc": {"backend": "docker", "runtime": "runsc"},
}


def docker_required() -> bool:
    """Whether a missing Docker engine or image must fail the run rather than skip."""
    return os.environ.get("PIXELBOX_REQUIRE_DOCKER") == "1" or os.environ.get("CI", "").lower() == "true"


def _docker_problem(runtime: str) -> str | None:
    from pixelbox.runtime import SandboxOptions
    from pixelbox.runtime.backends.docker import DockerBackend
    from pixelbox.runtime.errors import BackendUnavailable

    try:
        DockerBackend.for_options(SandboxOptions(backend="docker", runtime=runtime))
    except BackendUnavailable as exc:
        return str(exc)
    return None


def prepare_fresh(options: dict[str, Any]) -> None:
    """Have the backend make its fast path for ``options`` ready ahead, as ``SandboxPool`` does (the runsc
    restore paths otherwise make a checkpoint in the background from an option set's second use)."""
    from pixelbox.runtime.backends import choose_backend
    from pixelbox.runtime.options import SandboxOptions

    sandbox_options = SandboxOptions(**options)
    choose_backend(sandbox_options)[0].prepare_fresh(sandbox_options)


def require_backend(name: str) -> dict[str, Any]:
    """Return the options for backend ``name``, skipping or failing if it cannot run."""
    overrides = BACKENDS[name]
    if overrides["backend"] == "docker":
        problem = _docker_problem(overrides["runtime"])
        if problem:
            if docker_required():
                pytest.fail(f"Docker backend {name} is required here but unavailable: {problem}")
            pytest.skip(f"Docker backend {name} unavailable: {problem}")
    return dict(overrides)


@pytest.fixture(scope="session", autouse=True)
def kernel_image_current() -> None:
    """Build the kernel image for this checkout when an engine is up but the image is missing.

    The image tag hashes the in-kernel package, so every edit to it needs a (seconds-long,
    cached) rebuild; doing it here keeps test runs honest about what runs in containers.
    """
    from pixelbox.runtime.docker_engine import docker_client
    from pixelbox.runtime.errors import BackendUnavailable
    from pixelbox.runtime.image import build_kernel_image, image_present

    try:
        client = docker_client()
    except BackendUnavailable:
        return
    if not image_present(client):
        build_kernel_image(log=lambda line: None)


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Options selecting each backend in turn (local, docker runc, docker runsc)."""
    return require_backend(request.param)


@pytest.fixture(params=["runc", "runsc"])
def docker_backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Options selecting each Docker runtime in turn."""
    return require_backend(request.param)


@pytest.fixture(scope="session", autouse=True)
def no_leaks_after_session() -> Iterator[None]:
    """After all tests: no sandbox of this process may remain open or leave anything behind."""
    yield
    from pixelbox.runtime import live

    live.close_all()
    leaks = find_leaks()
    deadline = time.monotonic() + 15
    while leaks and time.monotonic() < deadline:  # a removal still in flight finishes; a leak stays
        time.sleep(0.5)
        leaks = find_leaks()
    assert not leaks, f"pixelbox resources leaked by the test session: {leaks}"


def find_leaks() -> dict[str, list[str]]:
    """Containers, kernel processes, cgroups and workspaces that belong to this process."""
    from pixelbox.runtime.cleanup import leftovers_of

    return leftovers_of(os.getpid())
