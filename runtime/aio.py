"""``AsyncSandbox``: the asyncio twin of :class:`~pixelbox.runtime.sandbox.Sandbox`.

Each call runs the synchronous implementation in a worker thread, so event loops driving
hundreds of episodes (RL rollouts, concurrent evaluations) never block on a kernel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pixelbox.runtime.execution import Execution
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.sandbox import Sandbox, SandboxInfo


class AsyncSandbox:
    """Create with ``await AsyncSandbox.create(...)`` or ``async with AsyncSandbox.create(...)``."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sync = sandbox

    @classmethod
    async def create(
        cls, options: SandboxOptions | None = None, *, inputs: Sequence[str | Path] = (), **overrides: Any
    ) -> AsyncSandbox:
        """Start a sandbox without blocking the event loop."""
        return cls(await asyncio.to_thread(Sandbox, options, inputs=inputs, **overrides))

    async def execute(
        self, code: str, *, timeout: float | None = None, save_as: Mapping[str, Any] | None = None
    ) -> Execution:
        """See :meth:`Sandbox.execute`."""
        return await asyncio.to_thread(self.sync.execute, code, timeout=timeout, save_as=save_as)

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
    def info(self) -> SandboxInfo:
        """See :attr:`Sandbox.info`."""
        return self.sync.info

    async def close(self) -> None:
        """See :meth:`Sandbox.close`."""
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
