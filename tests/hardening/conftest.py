"""Fixtures of the hardening suite: one shared sandbox per backend per module, leak checks.

A module lists the backends its cases apply to in ``HARDENING_BACKENDS`` (default: local with
the restricted policy, docker runc, docker runsc; ``local-os`` is the local backend with the
policy off, used where the operating-system wall must hold on its own). Cases share the
module's sandbox, because starting one per case would blow the CI budget; a case that breaks
its kernel must leave the sandbox usable (the fixture checks after every case) or replaced.
When the module ends the sandbox is closed and everything it made must be gone.

Set ``PIXELBOX_HARDENING_REPORT=path.json`` to write the suite's figures (cases, backends,
outcomes, executions that lost state) for docs/security.md.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pixelbox.runtime import Sandbox
from pixelbox.runtime.backends import choose_backend, criu, restore, spares
from pixelbox.runtime.backends.cgroups import pixelbox_groups
from pixelbox.runtime.backends.docker import DockerBackend
from pixelbox.runtime.options import SandboxOptions
from tests.conftest import prepare_fresh, require_backend
from tests.hardening.support import HOST_SECRET, LIMITS, OUTCOMES, Target, assert_usable

DEFAULT_BACKENDS = ("local", "runc", "runsc")
OPTIONS: dict[str, dict[str, Any]] = {
    "local-os": {"backend": "local", "policy": False},
    "local-cold": {"backend": "local", "fast_start": False},
}
"""Hardening backends that are the local backend with other options: policy off, or cold kernels only
(every start and restart a new interpreter, as when the fork server is unavailable)."""
SECRET_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY")
RESULTS: dict[str, str] = {}
SPARE_WAIT_S = 240.0
"""A spare's restore takes tenths of a second; this covers the checkpoint made first, under heavy load."""


def backend_options(name: str) -> dict[str, Any]:
    """Sandbox options for a hardening backend name (fails in CI when Docker is missing)."""
    if name in OPTIONS:
        return dict(OPTIONS[name])
    return require_backend(name)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``target`` over the module's ``HARDENING_BACKENDS``, one sandbox per module."""
    if "shared" in metafunc.fixturenames:
        names = getattr(metafunc.module, "HARDENING_BACKENDS", DEFAULT_BACKENDS)
        metafunc.parametrize("shared", list(names), indirect=True, scope="module")


@pytest.fixture(scope="session")
def input_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small task image given to every shared sandbox as input 0."""
    path = tmp_path_factory.mktemp("hardening-inputs") / "card.png"
    Image.new("RGB", (64, 48), (200, 30, 30)).save(path)
    return path


@pytest.fixture(scope="module")
def shared(request: pytest.FixtureRequest, input_image: Path) -> Iterator[tuple[str, Sandbox]]:
    """The module's sandbox for one backend, started with a secret in the host environment."""
    name = str(request.param)
    options = {**LIMITS, **backend_options(name), **getattr(request.module, "HARDENING_OPTIONS", {})}
    with pytest.MonkeyPatch.context() as env:
        for var in SECRET_VARS:
            env.setenv(var, HOST_SECRET)
        if restore_requested(options):  # the checkpoint ahead, as a pool makes it (else the first start is cold)
            prepare_fresh(options)
            spare_ahead(options)
        sb = Sandbox(inputs=[input_image], **options)
        try:
            fast_local = options["backend"] == "local" and options.get("fast_start", True)
            if fast_local or restore_requested(options):  # the cases hold for fast kernels too
                assert sb.start_path == "fast", sb.info.kernel
            if restore_requested(options) and spares.enabled():  # and for a kernel parked ahead (a spare)
                assert sb.info.kernel["spare"] is True, sb.info.kernel
            yield name, sb
        finally:
            evidence = leftovers_of(sb)
            sb.close()
            assert_gone(evidence)


@pytest.fixture
def target(shared: tuple[str, Sandbox], request: pytest.FixtureRequest) -> Iterator[Target]:
    """The shared sandbox for one case; afterwards it must still answer (or have been replaced)."""
    name, sb = shared
    case = Target(name, sb)
    yield case
    OUTCOMES[request.node.nodeid] = {
        "backend": name,
        "executions": len(case.log),
        "statuses": [r.status for r in case.log],
        "state_lost": sum(1 for r in case.log if r.state_lost),
    }
    assert_usable(case)


def restore_requested(options: dict[str, Any]) -> bool:
    """Whether a container sandbox is to be restored from a checkpoint: by default where the runtime's
    restore path can run (not with ``PIXELBOX_RUNSC_RESTORE=0`` / ``PIXELBOX_RUNC_RESTORE=0``); never
    with ``fast_start=False``."""
    runtime = options.get("runtime")
    wanted = (runtime == "runsc" and restore.enabled()) or (runtime == "runc" and criu.enabled())
    return wanted and options.get("fast_start", True)


def spare_ahead(options: dict[str, Any]) -> None:
    """With spares on (``PIXELBOX_RESTORE_SPARES``), wait until the restore path parked one for ``options``,
    so the module's sandbox is served from it (the default path of a sandbox started while one is ready)."""
    if spares.enabled():
        sandbox_options = SandboxOptions(**options)
        backend = choose_backend(sandbox_options)[0]
        assert isinstance(backend, DockerBackend)
        assert backend.spare(sandbox_options, SPARE_WAIT_S) is not None, "no spare was restored"


def leftovers_of(sb: Sandbox) -> dict[str, Any]:
    """What a sandbox owns on the host right now, to check it is all gone after close."""
    info = sb.info
    return {
        "root": sb.layout.root,
        "container": info.isolation.get("container_id"),
        "uid": info.kernel.get("uid") if info.backend == "local" else None,
    }


def assert_gone(evidence: dict[str, Any]) -> None:
    """No workspace, container or kernel process of a closed sandbox remains."""
    from pixelbox.runtime.backends.local import processes_of_uid

    root: Path = evidence["root"]
    assert not root.exists(), f"workspace {root} left behind"
    if evidence["container"]:
        from pixelbox.runtime.docker_engine import docker_client

        left = docker_client().containers.list(all=True, filters={"id": evidence["container"]})
        assert not left, f"container {evidence['container']} left behind"
        assert evidence["container"] not in restore.restore_ids(), f"runsc container {evidence['container']} left"
        assert evidence["container"] not in criu.restore_ids(), f"runc container {evidence['container']} left"
    if evidence["uid"]:
        left = _living(processes_of_uid(evidence["uid"]))
        deadline = time.monotonic() + REAP_WAIT_S  # SIGKILLed stragglers leave /proc once init reaps them
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = _living(left)
        assert not left, f"processes of kernel uid {evidence['uid']} left behind: {left}"
    groups = pixelbox_groups(root.name)  # a local kernel's group is named root.name; containers' add a suffix
    assert not groups, f"cgroups left behind: {groups}"


REAP_WAIT_S = 30.0
"""How long killed processes may take to be reaped on a busy host before they count as left behind."""


def _living(pids: list[int]) -> list[int]:
    """The pids that still exist and are not zombies (a zombie holds no resources but its pid)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Remember each hardening case's final outcome (a setup/teardown failure counts against it)."""
    if "tests/hardening/" not in report.nodeid.replace(os.sep, "/"):
        return
    if report.when == "call":
        RESULTS[report.nodeid] = "xfailed (known gap)" if hasattr(report, "wasxfail") else report.outcome
    elif report.failed:
        RESULTS[report.nodeid] = f"{report.when} failed"


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the suite's figures when ``PIXELBOX_HARDENING_REPORT`` names a file."""
    path = os.environ.get("PIXELBOX_HARDENING_REPORT")
    if not path or not RESULTS:
        return
    cases = {nodeid: {"outcome": outcome, **OUTCOMES.get(nodeid, {})} for nodeid, outcome in sorted(RESULTS.items())}
    Path(path).write_text(json.dumps(cases, indent=1) + "\n")
