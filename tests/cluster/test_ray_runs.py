"""``run_tasks`` on a real three-node Ray cluster with the Docker backend (runc): the same scores as on
one host, every episode exactly once when a node dies mid-run, and a killed driver that resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pixelbox.harness.demo.build import write_demo
from pixelbox.harness.demo.run import JUDGES
from pixelbox.harness.runner import ThreadExecutor, run_tasks
from pixelbox.harness.scoring.run import score_run
from pixelbox.harness.tasks import load_tasks
from pixelbox.harness.traces import read_trace
from pixelbox.ray import RayExecutor
from pixelbox.runtime.options import SandboxOptions
from tests.cluster.conftest import ROOT, remove_worker_leftovers
from tests.cluster.helpers import GatedFactory, RecordingReplay

RUNC = SandboxOptions(backend="docker", runtime="runc", memory="1g")
SCORE_KEYS = ("acc", "s", "v", "v_tool", "v_true", "calls", "overthink")


def scores_by_task(run_dir: Path) -> dict[str, Any]:
    """Each episode's score without the fields that name a run (ids, paths, timings)."""
    scores = score_run(run_dir, list(JUDGES), progress=False)
    found = {}
    for entry in scores["episodes"]:
        score = entry["score"]
        checkpoints = [(c["checkpoint_id"], c["passed"], c["tool"], c["true"]) for c in score["checkpoints"]]
        found[score["task_id"]] = ({k: score[k] for k in SCORE_KEYS}, checkpoints)
    return found


def trace_files(run_dir: Path) -> list[str]:
    return sorted(p.name for p in (run_dir / "episodes").glob("*.jsonl"))


def test_a_ray_run_scores_like_a_single_host_run(cluster: Any, tmp_path: Path) -> None:
    files = write_demo(tmp_path / "demo")
    tasks = load_tasks(files.tasks)
    factory = RecordingReplay(files.recordings["gen"])
    common: dict[str, Any] = {"agent_factory": factory, "mode": "gen", "sandbox_options": RUNC, "progress": False}
    here = run_tasks(tasks, out_dir=tmp_path / "here", executor=ThreadExecutor(1), **common)
    spread = run_tasks(tasks, out_dir=tmp_path / "ray", executor=RayExecutor(tmp_path / "store"), **common)
    assert here.counts == spread.counts == {"answered": len(tasks)} and not spread.failed
    assert scores_by_task(tmp_path / "ray") == scores_by_task(tmp_path / "here")
    for task in tasks:  # the images the traces name were landed from the store, byte for byte
        trace = read_trace(tmp_path / "ray" / "episodes" / f"{task.task_id}.jsonl")
        stored = [i for o in trace.of_kind("observation") for i in o.get("images") or []]
        assert stored, task.task_id
        for image in stored:
            assert (tmp_path / "ray" / image["stored"]).is_file()


def test_a_node_killed_mid_run_leaves_every_episode_exactly_once(cluster: Any, tmp_path: Path) -> None:
    import ray

    files = write_demo(tmp_path / "demo")
    tasks = load_tasks(files.tasks)
    gate = tmp_path / "gate"
    (gate / "started").mkdir(parents=True)
    factory = GatedFactory(files.recordings["gen"], gate)
    executor = RayExecutor(tmp_path / "store", attempts=3)
    result: dict[str, Any] = {}

    import threading

    def drive() -> None:
        result["summary"] = run_tasks(
            tasks,
            agent_factory=factory,
            mode="gen",
            out_dir=tmp_path / "run",
            sandbox_options=RUNC,
            executor=executor,
            progress=False,
        )

    driver = threading.Thread(target=drive)
    driver.start()
    victim = wait_for_busy_node(cluster, gate)
    cluster.remove_node(victim, allow_graceful=False)
    (gate / "open").touch()
    driver.join(timeout=600)
    assert not driver.is_alive()
    summary = result["summary"]
    assert summary.counts == {"answered": len(tasks)} and not summary.failed
    assert trace_files(tmp_path / "run") == sorted(f"{t.task_id}.jsonl" for t in tasks)
    for task in tasks:  # one trace per task, one start and one end in it, no partial set aside
        trace = read_trace(tmp_path / "run" / "episodes" / f"{task.task_id}.jsonl")
        assert len(trace.of_kind("episode_start")) == len(trace.of_kind("episode_end")) == 1
        assert not list((tmp_path / "run" / "episodes").glob(f"{task.task_id}.jsonl.partial-*"))
    starts = [p.name.split(".") for p in (gate / "started").iterdir()]
    killed = {task for task, node, _ in starts if node == victim.node_id}
    assert killed, "no episode was running on the node that was killed"
    replayed = {task for task, node, _ in starts if node != victim.node_id}
    assert killed <= replayed  # each episode of the dead node was played again elsewhere
    assert ray.is_initialized()


def wait_for_busy_node(cluster: Any, gate: Path, limit: float = 240) -> Any:
    """The first sandbox node (not the head) with an episode waiting at the gate."""
    deadline = time.monotonic() + limit
    workers = {node.node_id: node for node in cluster.worker_nodes}
    while time.monotonic() < deadline:
        for marker in (gate / "started").iterdir():
            node = marker.name.split(".")[1]
            if node in workers:
                return workers[node]
        time.sleep(0.1)
    pytest.fail(f"no episode reached the gate on a sandbox node within {limit} s")


DRIVER = """
import sys
from pathlib import Path
from pixelbox.harness.runner import run_tasks
from pixelbox.harness.tasks import load_tasks
from pixelbox.ray import RayExecutor, connect
from pixelbox.runtime.options import SandboxOptions
from tests.cluster.helpers import GatedFactory
address, tasks_file, recordings, gate, out = sys.argv[1:6]
connect(address)
run_tasks(load_tasks(tasks_file), agent_factory=GatedFactory(Path(recordings), Path(gate)), mode="gen",
          out_dir=out, sandbox_options=SandboxOptions(backend="docker", runtime="runc", memory="1g"),
          executor=RayExecutor(Path(out).parent / "store", in_flight=1), progress=False)
"""


def test_a_killed_driver_resumes_without_redoing_finished_episodes(cluster: Any, tmp_path: Path) -> None:
    files = write_demo(tmp_path / "demo")
    tasks = load_tasks(files.tasks)
    gate, out = tmp_path / "gate", tmp_path / "run"
    (gate / "started").mkdir(parents=True)
    (gate / "open").touch()  # episodes run straight through; in_flight=1 keeps them one at a time
    argv = [sys.executable, "-c", DRIVER, cluster.address, str(files.tasks), str(files.recordings["gen"]), str(gate)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen([*argv, str(out)], env=env, cwd=ROOT)
    try:
        wait_for_summaries(out, 2, first)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    done = {p.name: p.stat().st_mtime_ns for p in (out / "episodes").glob("*.summary.json")}
    assert 2 <= len(done) < len(tasks)
    subprocess.run([*argv, str(out)], env=env, cwd=ROOT, check=True, timeout=600)
    for name, mtime in done.items():  # finished episodes were neither replayed nor rewritten
        assert (out / "episodes" / name).stat().st_mtime_ns == mtime
    assert trace_files(out) == sorted(f"{t.task_id}.jsonl" for t in tasks)
    summaries = [json.loads(p.read_text()) for p in (out / "episodes").glob("*.summary.json")]
    assert sorted(s["status"] for s in summaries) == ["answered"] * len(tasks)
    starts = [p.name.split(".")[0] for p in (gate / "started").iterdir()]
    for name in done:
        assert starts.count(name.removesuffix(".summary.json")) == 1
    remove_worker_leftovers(Path(os.environ["PIXELBOX_TEST_PIDS"]))


def wait_for_summaries(out: Path, count: int, process: subprocess.Popen[bytes], limit: float = 300) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if len(list((out / "episodes").glob("*.summary.json"))) >= count:
            return
        if process.poll() is not None:
            pytest.fail(f"the driver ended (code {process.returncode}) before {count} episodes landed")
        time.sleep(0.1)
    pytest.fail(f"{count} episodes did not land within {limit} s")
