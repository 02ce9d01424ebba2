"""What cluster tests run on Ray workers: agents that record their worker's pid (for cleanup) and
node, and a gate that holds episodes until the test has killed a node."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pixelbox.harness.agents import ReplayAgent
from pixelbox.harness.agents.base import AgentTurn


def note_worker() -> str:
    """Record this process's pid where the test cleans up after, and return the node it runs on."""
    import ray

    pids = os.environ.get("PIXELBOX_TEST_PIDS")
    if pids:
        (Path(pids) / str(os.getpid())).touch()
    return str(ray.get_runtime_context().get_node_id()) if ray.is_initialized() else "driver"


class RecordingReplay:
    """A replay agent factory that notes each worker it runs on (picklable)."""

    def __init__(self, folder: Path, model: str = "replay") -> None:
        self.folder, self.model = folder, model

    def __call__(self, task: Any) -> ReplayAgent:
        note_worker()
        return ReplayAgent.from_file(self.folder, task.task_id, model=self.model)


class GatedAgent:
    """Replays ``turns``; before its first turn it writes ``started/<task>.<node>.<pid>`` and waits until
    the file ``open`` exists in ``gate`` (so the test can kill a node while episodes are mid-flight)."""

    def __init__(self, inner: ReplayAgent, gate: Path, task_id: str, node: str) -> None:
        self.inner, self.gate, self.task_id, self.node = inner, gate, task_id, node
        self.first = True

    @property
    def model(self) -> str:
        return self.inner.model

    def next_turn(self, messages: Any, tools: Any) -> AgentTurn:
        if self.first:
            self.first = False
            (self.gate / "started" / f"{self.task_id}.{self.node}.{os.getpid()}").touch()
            deadline = time.monotonic() + 240
            while not (self.gate / "open").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return self.inner.next_turn(messages, tools)


class GatedFactory:
    """Makes a :class:`GatedAgent` per task from a recording folder (picklable)."""

    def __init__(self, folder: Path, gate: Path) -> None:
        self.folder, self.gate = folder, gate

    def __call__(self, task: Any) -> GatedAgent:
        node = note_worker()
        inner = ReplayAgent.from_file(self.folder, task.task_id, model="replay")
        return GatedAgent(inner, self.gate, task.task_id, node)
