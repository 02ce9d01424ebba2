"""``AsyncSandbox``: the asyncio twin of :class:`~pixelbox.runtime.sandbox.Sandbox`.

Each call runs the synchronous implementation in a worker thread, so event loops driving
hundreds of episodes (RL rollouts, concurrent evaluations) never block on a kernel. Every public
method and property of ``Sandbox`` has its twin here with the same parameters
(``tests/runtime/test_api.py`` compares them); actions are coroutines, data are properties.
``execute``'s callbacks are called from the worker thread running the cell; :meth:`stream` hands
the same output to the event loop as an async iterator.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pixelbox.runtime.backends.base import KernelPaths
from pixelbox.runtime.commands import CommandResult
from pixelbox.runtime.execution import Execution
from pixelbox.runtime.files import FileInfo, SandboxFiles
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.sandbox import Sandbox, SandboxInfo
from pixelbox.runtime.streaming import OutputCallback, OutputEvent, TextCallback, stream_async


class AsyncSandboxFiles:
    """The asyncio twin of :class:`~pixelbox.runtime.files.SandboxFiles` (``AsyncSandbox.files``)."""

    def __init__(self, files: SandboxFiles) -> None:
        self.sync = files

    async def list(self, path: str = "", *, recursive: bool = False) -> list[FileInfo]:
        """See :meth:`SandboxFiles.list`."""
        return await asyncio.to_thread(self.sync.list, path, recursive=recursive)

    async def read(self, path: str) -> bytes:
        """See :meth:`SandboxFiles.read`."""
        return await asyncio.to_thread(self.sync.read, path)

    async def write(self, path: str, data: bytes | str) -> str:
        """See :meth:`SandboxFiles.write`."""
        return await asyncio.to_thread(self.sync.write, path, data)

    async def remove(self, path: str) -> None:
        """See :meth:`SandboxFiles.remove`."""
        await asyncio.to_thread(self.sync.remove, path)

    async def exists(self, path: str) -> bool:
        """See :meth:`SandboxFiles.exists`."""
        return await asyncio.to_thread(self.sync.exists, path)


class AsyncSandbox:
    """Create with ``await AsyncSandbox.create(...)`` or ``async with await AsyncSandbox.create(...)``."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sync = sandbox

    @classmethod
    async def create(
        cls, options: SandboxOptions | None = None, *, inputs: Sequence[str | Path] = (), **overrides: Any
    ) -> AsyncSandbox:
        """Start a sandbox without blocking the event loop."""
        return cls(await asyncio.to_thread(Sandbox, options, inputs=inputs, **overrides))

    @property
    def options(self) -> SandboxOptions:
        """See :attr:`Sandbox.options`."""
        return self.sync.options

    async def execute(
        self,
        code: str,
        *,
        timeout: float | None = None,
        save_as: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        on_stdout: TextCallback | None = None,
        on_stderr: TextCallback | None = None,
        on_output: OutputCallback | None = None,
    ) -> Execution:
        """See :meth:`Sandbox.execute` (the callbacks run in the worker thread)."""
        return await asyncio.to_thread(
            self.sync.execute,
            code,
            timeout=timeout,
            save_as=save_as,
            env=env,
            on_stdout=on_stdout,
            on_stderr=on_stderr,
            on_output=on_output,
        )

    def stream(
        self, code: str, *, timeout: float | None = None, env: Mapping[str, str] | None = None
    ) -> AsyncIterator[OutputEvent]:
        """See :meth:`Sandbox.stream`: ``async for event in sb.stream(code)``, the ``result`` event last."""
        return stream_async(lambda **callbacks: self.sync.execute(code, timeout=timeout, env=env, **callbacks))

    async def call_tool(self, name: str, arguments: Mapping[str, Any], *, timeout: float | None = None) -> Execution:
        """See :meth:`Sandbox.call_tool`."""
        return await asyncio.to_thread(self.sync.call_tool, name, arguments, timeout=timeout)

    async def run_command(
        self, argv: Sequence[str], *, timeout: float | None = None, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        """See :meth:`Sandbox.run_command`."""
        return await asyncio.to_thread(self.sync.run_command, argv, timeout=timeout, env=env)

    async def audit(self, result: Execution) -> dict[str, Any]:
        """See :meth:`Sandbox.audit`."""
        return await asyncio.to_thread(self.sync.audit, result)

    async def kernel_cpu_seconds(self) -> float | None:
        """See :meth:`Sandbox.kernel_cpu_seconds`."""
        return await asyncio.to_thread(self.sync.kernel_cpu_seconds)

    async def restart(self) -> None:
        """See :meth:`Sandbox.restart`."""
        await asyncio.to_thread(self.sync.restart)

    async def upload(self, src: str | Path | bytes, dest: str) -> str:
        """See :meth:`Sandbox.upload`."""
        return await asyncio.to_thread(self.sync.upload, src, dest)

    async def download(self, path: str) -> bytes:
        """See :meth:`Sandbox.download`."""
        return await asyncio.to_thread(self.sync.download, path)

    @property
    def files(self) -> AsyncSandboxFiles:
        """See :attr:`Sandbox.files`."""
        return AsyncSandboxFiles(self.sync.files)

    @property
    def inputs(self) -> list[str]:
        """See :attr:`Sandbox.inputs`."""
        return self.sync.inputs

    @property
    def paths(self) -> KernelPaths:
        """See :attr:`Sandbox.paths`."""
        return self.sync.paths

    @property
    def info(self) -> SandboxInfo:
        """See :attr:`Sandbox.info`."""
        return self.sync.info

    @property
    def alive(self) -> bool:
        """See :attr:`Sandbox.alive`."""
        return self.sync.alive

    @property
    def closed(self) -> bool:
        """See :attr:`Sandbox.closed`."""
        return self.sync.closed

    @property
    def connection_info(self) -> dict[str, Any]:
        """See :attr:`Sandbox.connection_info`."""
        return self.sync.connection_info

    async def close(self) -> None:
        """See :meth:`Sandbox.close`."""
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
