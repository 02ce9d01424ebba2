"""Sandboxes as Ray actors, for RL rollouts: a worker on any node runs agent code in a sandbox held
elsewhere on the cluster and gets back the :class:`~pixelbox.runtime.execution.Execution` with its events.

``SandboxActor`` owns one :class:`~pixelbox.runtime.sandbox.Sandbox` on its node and takes one
``pixelbox_sandbox`` unit there. :class:`RemoteSandbox` is the handle callers use (blocking calls,
the same names as ``Sandbox``). :class:`SandboxActorPool` starts actors spread over the nodes ahead of
time, hands them out, starts a fresh sandbox in each one given back, and replaces an actor whose
process or node died (Ray also restarts a crashed actor up to ``max_restarts`` times).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ray

from pixelbox.ray.cluster import RESOURCE
from pixelbox.runtime.execution import Execution
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.sandbox import Sandbox


class SandboxActor:
    """The actor's body (wrapped with ``ray.remote`` by :func:`actor_class`): one sandbox at a time."""

    def __init__(self, options: SandboxOptions | None = None, inputs: Sequence[str] = ()) -> None:
        self._options = options or SandboxOptions()
        self._inputs = list(inputs)
        self._sandbox: Sandbox | None = None
        self._start()

    def _start(self) -> None:
        self._sandbox = Sandbox(self._options, inputs=[Path(p) for p in self._inputs])

    def _open(self) -> Sandbox:
        if self._sandbox is None or self._sandbox.closed:
            self._start()
        assert self._sandbox is not None
        return self._sandbox

    def where(self) -> dict[str, Any]:
        """The node and process holding this sandbox."""
        import os

        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}

    def execute(
        self, code: str, timeout: float | None = None, save_as: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """``Sandbox.execute`` as a JSON-ready dict (rebuilt into an ``Execution`` by the caller)."""
        return self._open().execute(code, timeout=timeout, save_as=save_as).to_dict()

    def call_tool(self, name: str, arguments: Mapping[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """``Sandbox.call_tool`` (atomic mode) as a dict."""
        return self._open().call_tool(name, arguments, timeout=timeout).to_dict()

    def upload(self, data: bytes, dest: str) -> str:
        """Write ``data`` into the workspace; the in-sandbox path."""
        return self._open().upload(data, dest)

    def download(self, path: str) -> bytes:
        """A workspace file's bytes."""
        return self._open().download(path)

    def artifact(self, artifact: Mapping[str, Any]) -> bytes:
        """The bytes of one artifact of an ``Execution`` this sandbox returned (read from its host copy)."""
        return Path(str(artifact["host_path"])).read_bytes()

    def reset(self) -> None:
        """Close the sandbox and start a fresh one (what the pool does with a sandbox given back)."""
        if self._sandbox is not None:
            self._sandbox.close()
        self._start()

    def close(self) -> None:
        """Close the sandbox (the actor stays until it is killed)."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


def actor_class(max_restarts: int = 3) -> Any:
    """``SandboxActor`` as a Ray actor class needing one sandbox unit and no CPU of Ray's own count."""
    return ray.remote(num_cpus=0, resources={RESOURCE: 1}, max_restarts=max_restarts)(SandboxActor)


class RemoteSandbox:
    """A sandbox held by a :class:`SandboxActor` somewhere on the cluster; blocking calls like ``Sandbox``'s."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    @classmethod
    def start(
        cls, options: SandboxOptions | None = None, inputs: Sequence[str] = (), *, strategy: str = "DEFAULT"
    ) -> RemoteSandbox:
        """Start one actor (``strategy="SPREAD"`` prefers a node holding fewer of them)."""
        return cls(actor_class().options(scheduling_strategy=strategy).remote(options, list(inputs)))

    def execute(
        self, code: str, *, timeout: float | None = None, save_as: Mapping[str, Any] | None = None
    ) -> Execution:
        """Run ``code`` as the sandbox's next cell; the ``Execution`` with its events and artifact records."""
        return Execution.from_dict(
            ray.get(self.actor.execute.remote(code, timeout, dict(save_as) if save_as else None))
        )

    def call_tool(self, name: str, arguments: Mapping[str, Any], *, timeout: float | None = None) -> Execution:
        """Run one atomic tool."""
        return Execution.from_dict(ray.get(self.actor.call_tool.remote(name, dict(arguments), timeout)))

    def upload(self, src: str | Path | bytes, dest: str) -> str:
        """Copy bytes (or a file of this machine) into the sandbox's workspace."""
        data = src if isinstance(src, bytes) else Path(src).read_bytes()
        return str(ray.get(self.actor.upload.remote(data, dest)))

    def download(self, path: str) -> bytes:
        """A workspace file's bytes."""
        return bytes(ray.get(self.actor.download.remote(path)))

    def artifacts(self, execution: Execution) -> dict[str, bytes]:
        """The image files of ``execution``'s artifacts, by artifact name."""
        refs = {a["name"]: self.actor.artifact.remote(a) for a in execution.artifacts}
        return {name: bytes(ray.get(ref)) for name, ref in refs.items()}

    def where(self) -> dict[str, Any]:
        """The node id and pid of the actor."""
        return dict(ray.get(self.actor.where.remote()))

    def reset(self) -> None:
        """A fresh sandbox in the same actor."""
        ray.get(self.actor.reset.remote())

    def close(self) -> None:
        """Close the sandbox and end the actor."""
        with contextlib.suppress(ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            ray.get(self.actor.close.remote(), timeout=120)
        ray.kill(self.actor)


class SandboxActorPool:
    """``size`` sandbox actors spread over the nodes, started ahead of time; :meth:`acquire` hands one out,
    :meth:`release` gives it back (a fresh sandbox is started in it), a dead one is replaced."""

    def __init__(self, size: int, options: SandboxOptions | None = None) -> None:
        if size < 1:
            raise ValueError(f"pool size must be at least 1, got {size}")
        self.options = options or SandboxOptions()
        self._free: queue.Queue[RemoteSandbox] = queue.Queue()
        self._lock = threading.Lock()
        self._all: list[RemoteSandbox] = []
        for _ in range(size):
            self._free.put(self._new())

    def _new(self) -> RemoteSandbox:
        sandbox = RemoteSandbox.start(self.options, strategy="SPREAD")
        with self._lock:
            self._all.append(sandbox)
        return sandbox

    def acquire(self, timeout: float | None = 120.0) -> RemoteSandbox:
        """A sandbox nobody else holds (waits up to ``timeout`` seconds)."""
        try:
            return self._free.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no pooled sandbox was given back within {timeout} s") from None

    def release(self, sandbox: RemoteSandbox) -> None:
        """Give ``sandbox`` back: its state is wiped (fresh sandbox); an actor that died is replaced."""
        try:
            sandbox.reset()
        except ray.exceptions.RayActorError:  # out of restarts, or its node died
            with self._lock:
                self._all.remove(sandbox)
            sandbox = self._new()
        self._free.put(sandbox)

    def nodes(self) -> list[str]:
        """The node of every actor of the pool (for placement checks)."""
        with self._lock:
            members = list(self._all)
        return [m.where()["node_id"] for m in members]

    def close(self) -> None:
        """End every actor of the pool."""
        with self._lock:
            members, self._all = list(self._all), []
        for member in members:
            member.close()
