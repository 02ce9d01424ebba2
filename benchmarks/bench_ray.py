"""Ray benchmark (issue 16): one run, same tasks, same cores, side by side.

Run on demand (never as a timed test), from the repository root:

    .venv/bin/python benchmarks/bench_ray.py [--copies 4] [--pairs 200] [--runtime runc]

Episodes: the demo's five tasks, each repeated ``--copies`` times under new ids, replayed in code mode
(recorded model turns, so the model costs nothing and the figures are the harness's and the
sandboxes') with the Docker backend, played three ways: sequentially, with ``--concurrency 4``, and
with ``--ray`` on a local Ray cluster of three nodes (a head without sandbox capacity and two nodes
with two ``pixelbox_sandbox`` units each: four at a time, as the thread pool). Figures: episodes per
minute, and the overhead per episode (wall time x parallel slots / episodes, minus the mean episode
duration its trace records).

Remote execute: ``execute("x = 1")`` through ``pixelbox.ray.RemoteSandbox`` (a sandbox actor on one
node) against a local ``Sandbox`` on the same engine, in alternating pairs; the added p50 is the
remote hop (target: under 2 ms). Results go to ``results/ray.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import RESULTS, format_table, machine_facts, summarize, write_json  # noqa: E402

STORE_BYTES = 80 * 1024 * 1024
SLOTS = 4


class CopiedReplay:
    """Replays the recording of the task a copy was made from (``<task>--<k>``); picklable by value."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __call__(self, task: Any) -> Any:
        from pixelbox.harness.agents import ReplayAgent

        return ReplayAgent.from_file(self.folder, task.task_id.rsplit("--", 1)[0], model="replay")


def episodes(root: Path, copies: int) -> tuple[list[Any], Path]:
    from pixelbox.harness.demo.build import write_demo
    from pixelbox.harness.tasks import load_tasks

    files = write_demo(root / "demo")
    tasks = [
        dataclasses.replace(t, task_id=f"{t.task_id}--{k}") for k in range(copies) for t in load_tasks(files.tasks)
    ]
    return tasks, files.recordings["gen"]


def play(label: str, tasks: list[Any], recordings: Path, out: Path, runtime: str, executor: Any) -> dict[str, Any]:
    from pixelbox.harness.runner import run_tasks
    from pixelbox.runtime.options import SandboxOptions

    started = time.perf_counter()
    summary = run_tasks(
        tasks,
        agent_factory=CopiedReplay(recordings),
        mode="gen",
        out_dir=out,
        sandbox_options=SandboxOptions(backend="docker", runtime=runtime, memory="1g"),
        executor=executor,
        progress=False,
    )
    wall = time.perf_counter() - started
    durations = [float(e.get("duration") or 0) for e in summary.episodes]
    slots = getattr(executor, "concurrency", SLOTS)
    mean = sum(durations) / len(durations)
    return {
        "label": label,
        "episodes": len(tasks),
        "finished": summary.finished,
        "counts": summary.counts,
        "wall_s": round(wall, 2),
        "episodes_per_min": round(60 * len(tasks) / wall, 1),
        "mean_episode_s": round(mean, 3),
        "slots": slots,
        "overhead_per_episode_s": round(wall * slots / len(tasks) - mean, 3),
    }


def start_cluster() -> Any:
    import ray
    from ray.cluster_utils import Cluster

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "object_store_memory": STORE_BYTES, "include_dashboard": False},
    )
    for _ in range(2):
        cluster.add_node(num_cpus=1, resources={"pixelbox_sandbox": SLOTS // 2}, object_store_memory=STORE_BYTES)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    return cluster


def remote_execute(pairs: int, runtime: str) -> dict[str, Any]:
    """Alternating pairs of local and remote ``execute("x = 1")`` on one node; milliseconds."""
    from pixelbox.ray import RemoteSandbox
    from pixelbox.runtime.options import SandboxOptions
    from pixelbox.runtime.sandbox import Sandbox

    options = SandboxOptions(backend="docker", runtime=runtime, memory="1g")
    local, remote = Sandbox(options), RemoteSandbox.start(options)
    times: dict[str, list[float]] = {"local": [], "remote": []}
    try:
        for _ in range(20):  # warm-up: kernels, instrumentation cache, Ray's worker connection
            local.execute("x = 1")
            remote.execute("x = 1")
        for k in range(pairs):
            order = [("local", local), ("remote", remote)][:: 1 if k % 2 == 0 else -1]
            for name, sandbox in order:
                started = time.perf_counter()
                assert sandbox.execute("x = 1").status == "ok"
                times[name].append(1000 * (time.perf_counter() - started))
    finally:
        local.close()
        remote.close()
    result = {name: summarize(values) for name, values in times.items()}
    result["added_p50_ms"] = result["remote"]["p50"] - result["local"]["p50"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4, help="copies of each of the five demo tasks")
    parser.add_argument("--pairs", type=int, default=200, help="timed local/remote execute pairs")
    parser.add_argument("--runtime", default="runc", choices=("runc", "runsc"))
    parser.add_argument("--out", type=Path, default=RESULTS / "ray.json")
    args = parser.parse_args()
    import ray

    from pixelbox.harness.runner import ThreadExecutor
    from pixelbox.ray import RayExecutor

    facts = machine_facts()
    scratch = Path(tempfile.mkdtemp(prefix="pixelbox-bench-ray-"))
    cluster = None
    try:
        tasks, recordings = episodes(scratch, args.copies)
        runs = [
            play("sequential", tasks, recordings, scratch / "seq", args.runtime, ThreadExecutor(1)),
            play(f"--concurrency {SLOTS}", tasks, recordings, scratch / "threads", args.runtime, ThreadExecutor(SLOTS)),
        ]
        cluster = start_cluster()
        executor = RayExecutor(scratch / "store")
        runs.append(play("--ray (3-node local cluster)", tasks, recordings, scratch / "ray", args.runtime, executor))
        hop = remote_execute(args.pairs, args.runtime)
    finally:
        if cluster is not None:
            ray.shutdown()
            cluster.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)
    facts["load_average_end"] = os.getloadavg()
    write_json(args.out, {"machine": facts, "runtime": args.runtime, "runs": runs, "remote_execute": hop})
    headers = ["how", "episodes", "wall s", "episodes/min", "mean episode s", "overhead/episode s"]
    rows = [
        [
            r["label"],
            r["finished"],
            r["wall_s"],
            r["episodes_per_min"],
            r["mean_episode_s"],
            r["overhead_per_episode_s"],
        ]
        for r in runs
    ]
    print(format_table(headers, rows))
    local, remote = hop["local"], hop["remote"]
    print(
        f"\nexecute('x = 1'), {args.pairs} pairs: local p50 {local['p50']:.2f} ms p90 {local['p90']:.2f} ms; "
        f"remote p50 {remote['p50']:.2f} ms p90 {remote['p90']:.2f} ms; added p50 {hop['added_p50_ms']:.2f} ms"
    )
    print(f"results: {args.out}")
    print(json.dumps(facts["load_average"]))


if __name__ == "__main__":
    main()
