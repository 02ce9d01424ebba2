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
from pixelbox.runtime.cleanup import remove_orphans
from pixelbox.runtime.workspace import ROOT_PREFIX

ROOT = Path(__file__).resolve().parents[2]


def _run_python(code: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})}, cwd=ROOT,
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
    sb.close()
    sb.close()
    assert not root.exists()
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
        assert root.name.startswith(f"{ROOT_PREFIX}{proc.pid}-")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert root.exists(), "a SIGKILLed host cannot clean up after itself"
    report = remove_orphans()
    assert str(root) in report.directories
    assert not root.exists()
    if backend["backend"] == "docker":
        assert len(report.containers) >= 1
    else:
        assert len(report.processes) >= 1
    assert remove_orphans().total() == 0
