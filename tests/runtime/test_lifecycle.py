"""Lifecycle: backend choice, async twin, closing, and cleanup after a crashed host."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import require_backend

from pixelbox.runtime import AsyncSandbox, Sandbox, SandboxClosed
from pixelbox.runtime.cleanup import leftovers_of, remove_leftovers_of
from pixelbox.runtime.mounts import mounts_under
from pixelbox.runtime.workspace import ROOT_PREFIX, process_start

ROOT = Path(__file__).resolve().parents[2]


def _run_python(code: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_auto_prefers_docker_and_says_why() -> None:
    require_backend("runc")
    with Sandbox(backend="auto") as sb:
        assert sb.info.backend == "docker"
        assert sb.info.reason.startswith("auto: Docker engine and kernel image found")


def test_auto_falls_back_to_local_and_says_why() -> None:
    out = _run_python(
        """
        from pixelbox.runtime import Sandbox
        with Sandbox(backend="auto") as sb:
            print(sb.info.backend)
            print(sb.info.reason)
        """,
        env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
    )
    backend, reason = out.strip().splitlines()[:2]
    assert backend == "local"
    assert "docker unavailable" in reason and "Docker engine" in reason


def test_async_twin_runs_sandboxes_concurrently() -> None:
    async def main() -> list[str]:
        async def one(i: int) -> str:
            async with await AsyncSandbox.create(backend="local") as sb:
                await sb.execute(f"v = {i} + 100")
                return (await sb.execute("print(v)")).stdout.strip()

        return await asyncio.gather(*(one(i) for i in range(3)))

    assert asyncio.run(main()) == ["100", "101", "102"]


def test_closed_sandbox_refuses_work_and_removes_its_files() -> None:
    sb = Sandbox(backend="local")
    root = sb.layout.root
    assert root.exists()
    assert mounts_under(str(root)) == ([str(root)] if os.geteuid() == 0 else [])  # the capped tmpfs
    sb.close()
    sb.close()
    assert not root.exists() and mounts_under(str(root)) == []
    with pytest.raises(SandboxClosed):
        sb.execute("1")


def test_cleanup_removes_what_a_killed_host_left_behind(backend: dict[str, Any]) -> None:
    script = f"""
        import os, sys, time
        from pixelbox.runtime import Sandbox
        sb = Sandbox(**{backend!r})
        sb.execute("x = 1")
        print(sb.layout.root, flush=True)
        time.sleep(600)
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert proc.stdout is not None
        root = Path(proc.stdout.readline().strip())
        start = process_start(proc.pid)  # the owner is its pid and start time, read while it lives
        assert root.name.startswith(f"{ROOT_PREFIX}{proc.pid}.{start}-")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert root.exists(), "a SIGKILLed host cannot clean up after itself"
    assert mounts_under(str(root)) == ([str(root)] if os.geteuid() == 0 else [])
    left = leftovers_of(proc.pid, start)
    assert left.get("containers" if backend["backend"] == "docker" else "kernels"), left
    # `pixelbox cleanup`'s pass scoped to this dead owner: the whole pass would also take the dead hosts of a
    # second test session running beside this one, between its kill and its own checks
    report = remove_leftovers_of(proc.pid)
    assert str(root) in report.directories
    assert not root.exists() and mounts_under(str(root)) == []
    assert leftovers_of(proc.pid, start) == {}


def test_garbage_collection_removes_an_unclosed_sandbox(backend: dict[str, Any]) -> None:
    import gc

    sb = Sandbox(**backend)
    root = sb.layout.root
    container = sb.info.isolation.get("container_id")
    del sb
    gc.collect()
    assert not root.exists()
    if container:
        from pixelbox.runtime.docker_engine import docker_client

        assert not docker_client().containers.list(all=True, filters={"id": container})


def test_interpreter_exit_removes_unclosed_sandboxes(backend: dict[str, Any]) -> None:
    out = _run_python(
        f"""
        from pixelbox.runtime import Sandbox
        keep = [Sandbox(**{backend!r}) for _ in range(2)]
        for sb in keep:
            sb.execute("x = 1")
        print(" ".join(str(sb.layout.root) for sb in keep))
        print(" ".join(str(sb.info.isolation.get("container_id") or "") for sb in keep))
        """
    )
    roots, containers = out.rstrip("\n").split("\n")
    assert not any(Path(root).exists() for root in roots.split())
    if backend["backend"] == "docker":
        from pixelbox.runtime.docker_engine import docker_client

        for cid in containers.split():
            assert not docker_client().containers.list(all=True, filters={"id": cid})
