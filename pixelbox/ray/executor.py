"""``pixelbox run --ray``: episodes as Ray tasks on the nodes that hold sandbox capacity.

Each episode is one Ray task needing one ``pixelbox_sandbox`` unit; it plays on its node into an
in-memory trace (:func:`~pixelbox.harness.runner.play_detached`), puts its images in the run store and
returns the records. The driver lands each result as it arrives (:meth:`Player.land`): images from
the store, then the trace, then the summary, so it stays the only writer of the run directory and
resume, ``--retry-failed`` and sharding mean what they mean on one host.

Faults: a worker or node that dies takes its in-flight episodes with it; Ray runs them again
elsewhere up to ``attempts`` times in all. Whatever arrives, the task's identity decides: a task whose
trace is already finished is never written twice. A task out of attempts is a harness failure, left
unfinished, and the next resume plays it. A killed driver loses only what had not landed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import deque
from functools import partial
from pathlib import Path
from typing import Any

import ray

from pixelbox.harness.episode import EpisodeOutcome
from pixelbox.harness.runner import DetachedEpisode, EpisodeExecutor, EpisodeSpec, Player, Settle, play_detached
from pixelbox.harness.suites import SuiteTask
from pixelbox.ray.cluster import RESOURCE, sandbox_capacity
from pixelbox.ray.store import ArtifactStore


def play_on_node(spec: EpisodeSpec, task: SuiteTask, store_url: str) -> tuple[DetachedEpisode, dict[str, str]]:
    """Play one episode here (a Ray worker), put its images in the store; the records and the image keys."""
    store = ArtifactStore(store_url)
    scratch = Path(tempfile.mkdtemp(prefix="pixelbox-ray-episode-"))
    try:
        episode = play_detached(spec, task, scratch)
        keys = {relative: store.put(scratch / relative) for relative in episode.images}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    episode.staging = Path(store_url)
    return episode, keys


class RayExecutor(EpisodeExecutor):
    """Plays episodes on a Ray cluster (``connect`` first). ``store`` is the run store's URL;
    ``attempts`` the tries per episode when workers or nodes die; ``in_flight`` bounds the episodes
    submitted and not yet landed (default: twice the cluster's sandbox capacity), so a run of
    thousands of tasks keeps the driver's memory and the object store small."""

    def __init__(self, store: str | Path, *, attempts: int = 3, in_flight: int | None = None) -> None:
        if attempts < 1:
            raise ValueError(f"--ray-attempts must be at least 1, got {attempts}")
        if in_flight is not None and in_flight < 1:
            raise ValueError(f"--ray-in-flight must be at least 1, got {in_flight}")
        self.store = ArtifactStore(str(store))
        self.attempts = attempts
        self.in_flight = in_flight

    def play_all(self, player: Player, tasks: list[SuiteTask], settle: Settle) -> None:
        limit = self.in_flight or 2 * sandbox_capacity()
        remote = ray.remote(play_on_node).options(
            num_cpus=0, resources={RESOURCE: 1}, max_retries=self.attempts - 1, retry_exceptions=False
        )
        spec = ray.put(player.spec)
        waiting = deque(tasks)
        running: dict[Any, SuiteTask] = {}
        try:
            while waiting or running:
                while waiting and len(running) < limit and not player.stopping():
                    task = waiting.popleft()
                    running[remote.remote(spec, task, self.store.url)] = task
                if player.stopping():
                    while waiting:
                        settle(waiting.popleft(), lambda: None)
                if not running:
                    continue
                ready, _ = ray.wait(list(running), num_returns=1)
                for ref in ready:
                    settle(running.pop(ref), partial(self._land, player, ref))
        except KeyboardInterrupt:
            player.stop.set()
            for ref in running:
                ray.cancel(ref, force=True)
            raise

    def _land(self, player: Player, ref: Any) -> EpisodeOutcome | None:
        episode, keys = ray.get(ref)
        return player.land(episode, lambda relative, target: self.store.get(keys[relative], target))


def default_store(out_dir: str | Path) -> str:
    """The store when none is given: ``OUT/.store``, right for a cluster on one machine or a shared disk."""
    return os.fspath(Path(out_dir).resolve() / ".store")
