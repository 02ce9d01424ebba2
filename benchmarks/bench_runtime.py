"""Runtime benchmark: cold start, warm-pool acquire, execute round trip, idle memory.

Run on demand (never in CI), from the repository root:

    .venv/bin/python benchmarks/bench_runtime.py [--backends local,runc,runsc] [--quick] [--out PATH]

All four measurements run side by side in one process and one run, for each backend:

1. cold start: ``Sandbox(**opts)`` plus the first ``execute("1")``; also in the configuration
   an episode uses (image I/O layer on, agentic-mme profile, one input image);
2. warm-pool acquire: ``SandboxPool.acquire()`` / ``release()`` paced so the refill can keep up;
3. round trip: ``execute("x = 1")`` against a raw jupyter_client loop on the same kernel,
   interleaved (A/B, B/A) to cancel drift;
4. resident memory of an idle sandbox (kernel side) and the host-side cost per ``Sandbox``.

Prints Markdown tables and writes ``benchmarks/results/runtime.json`` with the machine facts.
Targets (issue 2): cold p50 <= 0.7 s local, 1.0 s runc, 2.0 s runsc; acquire p50 <= 5 ms;
ours/raw <= 1.2; idle sandbox <= 150 MB.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from _common import RESULTS, format_table, machine_facts, progress, summarize, write_json
from jupyter_client.blocking.client import BlockingKernelClient
from tqdm import tqdm

from pixelbox.runtime import PixelboxError, Sandbox, SandboxPool

BACKENDS: dict[str, dict[str, str]] = {
    "local": {"backend": "local"},
    "runc": {"backend": "docker", "runtime": "runc"},
    "runsc": {"backend": "docker", "runtime": "runsc"},
}
COLD_TARGET_S = {"local": 0.7, "runc": 1.0, "runsc": 2.0}
ACQUIRE_TARGET_S = 0.005
RATIO_TARGET = 1.2
MEMORY_TARGET_BYTES = 150 * 1024**2
MIB = 1024**2
CGROUP_MEMORY = Path("/sys/fs/cgroup/memory")
SETTLE_S = 1.0
PARALLEL_STARTS = 2
REFILL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Plan:
    """How many repetitions each measurement gets."""

    cold: dict[str, int]
    pool_cycles: dict[str, int]
    pool_size: int
    pairs: int
    warmup: int
    idle_sandboxes: int

    def steps(self, backend: str) -> int:
        """Progress-bar steps for one backend."""
        once = 2 * self.cold[backend] + 1 + self.pool_cycles[backend] + 1 + self.warmup + self.pairs
        return once + self.idle_sandboxes + self.cold[backend]


FULL = Plan(
    cold={"local": 10, "runc": 10, "runsc": 6},
    pool_cycles={"local": 200, "runc": 100, "runsc": 60},
    pool_size=4,
    pairs=300,
    warmup=20,
    idle_sandboxes=3,
)
QUICK = Plan(
    cold={"local": 3, "runc": 3, "runsc": 2},
    pool_cycles={"local": 20, "runc": 10, "runsc": 6},
    pool_size=2,
    pairs=40,
    warmup=5,
    idle_sandboxes=1,
)


class BenchError(RuntimeError):
    """A measurement could not be taken (the sandbox misbehaved)."""


# -- 1. cold start ------------------------------------------------------------------------------


class ColdSample(NamedTuple):
    start: float
    first_result: float
    close: float


EPISODE_IO = {"enabled": True, "profile": "agentic-mme"}
"""The image I/O layer as ``harness.runner.episode_options`` turns it on."""


def cold_once(opts: dict[str, str], inputs: list[Path] | None = None) -> ColdSample:
    """Start a sandbox, run ``1``, close it; time each part. With ``inputs``, start it as an
    episode does: those images and the image I/O layer."""
    episode: dict[str, Any] = {"io": EPISODE_IO, "inputs": inputs} if inputs else {}
    t0 = time.perf_counter()
    sandbox = Sandbox(**opts, **episode)
    t1 = time.perf_counter()
    result = sandbox.execute("1")
    t2 = time.perf_counter()
    sandbox.close()
    t3 = time.perf_counter()
    if result.status != "ok":
        raise BenchError(f"first execute returned {result.status}: {result.error}")
    return ColdSample(t1 - t0, t2 - t0, t3 - t2)


def bench_reset(opts: dict[str, str], reps: int, bar: tqdm) -> dict[str, Any]:
    """The pool's alternative: reset a used sandbox in place (fresh kernel, emptied workspace).

    Measured against the cold start above, this is the number behind the pool's choice to
    replace released sandboxes instead of scrubbing them.
    """
    import shutil

    samples: list[float] = []
    with Sandbox(**opts) as sandbox:
        for _ in range(reps):
            sandbox.execute("dirty = 1\nopen('left_behind.txt', 'w').write('x')")
            t0 = time.perf_counter()
            sandbox.restart()
            for entry in sandbox.layout.work.iterdir():
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            result = sandbox.execute("1")
            samples.append(time.perf_counter() - t0)
            if result.status != "ok":
                raise BenchError(f"execute after an in-place reset returned {result.status}")
            bar.update(1)
    return {"in_place_s": summarize(samples)}


def _cold_summary(first: ColdSample, samples: list[ColdSample], episodes: list[ColdSample]) -> dict[str, Any]:
    return {
        "first_in_process_s": first.first_result,
        "start_s": summarize([s.start for s in samples]),
        "first_result_s": summarize([s.first_result for s in samples]),
        "close_s": summarize([s.close for s in samples]),
        "episode_first_result_s": summarize([s.first_result for s in episodes]),
    }


def _task_image(folder: Path) -> Path:
    """A 640x480 photo-like PNG, the input of the episode-configuration starts."""
    from PIL import Image

    path = folder / "photo.png"
    Image.effect_mandelbrot((640, 480), (-2.0, -1.2, 1.0, 1.2), 64).convert("RGB").save(path)
    return path


def bench_cold(names: list[str], reps: dict[str, int], bar: tqdm, skipped: dict[str, str]) -> dict[str, Any]:
    """Cold start to first result, backends taken in turn so a burst of host load hits all alike.

    The first start of each backend in the process (one-time setup: Docker client, image
    check) is reported apart. A backend whose first start fails is moved to ``skipped``.
    """
    firsts: dict[str, ColdSample] = {}
    for name in names:
        try:
            firsts[name] = cold_once(BACKENDS[name])
        except (PixelboxError, BenchError) as exc:
            skipped[name] = f"{exc.__class__.__name__}: {exc}"
            tqdm.write(f"{name}: skipped ({skipped[name]})")
        bar.update(1 if name in firsts else 1 + 2 * reps[name])
    samples: dict[str, list[ColdSample]] = {name: [] for name in firsts}
    episodes: dict[str, list[ColdSample]] = {name: [] for name in firsts}
    with tempfile.TemporaryDirectory() as folder:
        inputs = [_task_image(Path(folder))]
        for rep in range(max(reps.values())):
            for name in firsts:
                if rep < reps[name]:
                    samples[name].append(cold_once(BACKENDS[name]))
                    episodes[name].append(cold_once(BACKENDS[name], inputs))
                    bar.update(2)
    return {name: _cold_summary(firsts[name], samples[name], episodes[name]) for name in firsts}


# -- 2. warm-pool acquire -------------------------------------------------------------------------


def _refilled(pool: SandboxPool, ready: int, timeout: float) -> float:
    """Wait (untimed for the result) until ``ready`` sandboxes are ready; return how long it took."""
    t0 = time.perf_counter()
    while pool.stats().ready < ready and time.perf_counter() - t0 < timeout:
        time.sleep(0.005)
    return time.perf_counter() - t0


def bench_pool(opts: dict[str, str], cycles: int, size: int, bar: tqdm) -> dict[str, Any]:
    """Time ``acquire()`` and ``release()``; before each cycle let the refill catch up to ``size - 1``.

    So one replacement is usually still starting in the background while ``acquire`` is timed
    (realistic contention), yet the pool is never drained by the benchmark itself; an acquire
    that still finds no ready sandbox is counted.
    """
    acquire: list[float] = []
    release: list[float] = []
    pauses: list[float] = []
    empty = 0
    with SandboxPool(size, parallel_starts=PARALLEL_STARTS, **opts) as pool:
        t0 = time.perf_counter()
        if not pool.wait_ready(timeout=120):
            raise BenchError(f"the pool did not fill: {pool.stats()}")
        fill = time.perf_counter() - t0
        bar.update()
        for _ in range(cycles):
            pauses.append(_refilled(pool, max(1, size - 1), REFILL_TIMEOUT_S))
            empty += pool.stats().ready == 0
            a = time.perf_counter()
            sandbox = pool.acquire()
            b = time.perf_counter()
            pool.release(sandbox)
            release.append(time.perf_counter() - b)
            acquire.append(b - a)
            bar.update()
        t1 = time.perf_counter()
    return {
        "pool_size": size,
        "parallel_starts": PARALLEL_STARTS,
        "fill_s": fill,
        "close_s": time.perf_counter() - t1,
        "acquire_s": summarize(acquire),
        "release_s": summarize(release),
        "refill_pause_s": summarize(pauses),
        "found_empty": empty,
        "over_target": sum(a > ACQUIRE_TARGET_S for a in acquire),
    }


# -- 3. execute round trip --------------------------------------------------------------------------


def raw_client(connection: dict[str, Any]) -> BlockingKernelClient:
    """A plain jupyter_client client on the sandbox's kernel (no heartbeat, like the runtime's)."""
    client = BlockingKernelClient()
    client.load_connection_info(connection)  # type: ignore[arg-type]
    client.start_channels(hb=False)
    return client


def raw_execute(client: BlockingKernelClient, code: str) -> float:
    """Send ``code`` and read iopub until this request's idle status; the reply is read untimed."""
    t0 = time.perf_counter()
    msg_id = client.execute(code)
    while True:
        msg = client.get_iopub_msg(timeout=30)
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "idle"
        ):
            break
    elapsed = time.perf_counter() - t0
    client.get_shell_msg(timeout=30)
    return elapsed


def ours_execute(sandbox: Sandbox, code: str) -> float:
    """Time one ``Sandbox.execute``."""
    t0 = time.perf_counter()
    result = sandbox.execute(code)
    elapsed = time.perf_counter() - t0
    if result.status != "ok":
        raise BenchError(f"execute returned {result.status}: {result.error}")
    return elapsed


def bench_roundtrip(opts: dict[str, str], pairs: int, warmup: int, bar: tqdm, code: str = "x = 1") -> dict[str, Any]:
    """Ours vs raw on one kernel, alternating which goes first in each pair."""
    ours: list[float] = []
    raw: list[float] = []
    with Sandbox(**opts) as sandbox:
        client = raw_client(sandbox.connection_info)
        try:
            for _ in range(warmup):
                ours_execute(sandbox, code)
                raw_execute(client, code)
                bar.update()
            for i in range(pairs):
                if i % 2:
                    raw.append(raw_execute(client, code))
                    ours.append(ours_execute(sandbox, code))
                else:
                    ours.append(ours_execute(sandbox, code))
                    raw.append(raw_execute(client, code))
                bar.update()
        finally:
            client.stop_channels()
    ours_s, raw_s = summarize(ours), summarize(raw)
    return {
        "code": code,
        "ours_s": ours_s,
        "raw_s": raw_s,
        "ratio_p50": ours_s["p50"] / raw_s["p50"],
        "overhead_p50_s": ours_s["p50"] - raw_s["p50"],
    }


def profile_ours(opts: dict[str, str], calls: int = 300, top: int = 25) -> str:
    """cProfile ``calls`` executes of ``x = 1``; the top functions by own time, as text."""
    with Sandbox(**opts) as sandbox:
        for _ in range(20):
            sandbox.execute("x = 1")
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(calls):
            sandbox.execute("x = 1")
        profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


# -- 4. idle memory -----------------------------------------------------------------------------------


def _proc_status_kib(pid: int | str, field: str, name: str = "status") -> int:
    try:
        for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _parents() -> dict[int, int]:
    """pid -> ppid for every process on the host."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            found[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants."""
    parents = _parents()
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier]
        tree.extend(frontier)
    return tree


def _cgroup_memory(path: Path) -> dict[str, int] | None:
    """cgroup v1 memory usage of ``path``: usage, cache, and the working set (usage - inactive file)."""
    try:
        usage = int((path / "memory.usage_in_bytes").read_text())
        stat = dict(line.split() for line in (path / "memory.stat").read_text().splitlines())
    except (OSError, ValueError):
        return None
    inactive = int(stat.get("total_inactive_file", 0))
    return {
        "usage": usage,
        "cache": int(stat.get("total_cache", 0)),
        "shmem": int(stat.get("total_shmem", 0)),
        "working_set": usage - inactive,
    }


def local_memory(sandbox: Sandbox) -> dict[str, Any]:
    """RSS and PSS of the kernel's process tree, and its own cgroup's usage when it has one."""
    pids = process_tree(int(sandbox.info.kernel["pid"]))
    return {
        "headline": sum(_proc_status_kib(p, "VmRSS") for p in pids) * 1024,
        "headline_is": "VmRSS of the kernel process tree",
        "processes": len(pids),
        "pss": sum(_proc_status_kib(p, "Pss", "smaps_rollup") for p in pids) * 1024,
        "cgroup": _cgroup_memory(CGROUP_MEMORY / "pixelbox" / sandbox.layout.root.name),
    }


def _mentioning(text: str, exclude: set[int]) -> list[int]:
    """Host pids whose command line contains ``text`` (the container's shim), minus ``exclude``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) not in exclude:
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def docker_memory(sandbox: Sandbox) -> dict[str, Any]:
    """The container's memory cgroup (everything inside it, gVisor's sentry and gofer included),
    plus the RSS of host processes serving it from outside the cgroup (containerd shim)."""
    isolation = sandbox.info.isolation
    cid = str(isolation["container_id"])
    parent = str(isolation["cgroup_parent"])
    group = CGROUP_MEMORY / (parent.strip("/") if parent.startswith("/") else "docker") / cid
    cgroup = _cgroup_memory(group)
    if cgroup is None:
        raise BenchError(f"no cgroup v1 memory group at {group}")
    inside = {int(p) for p in (group / "cgroup.procs").read_text().split()}
    outside = _mentioning(cid, inside)
    return {
        "headline": cgroup["working_set"],
        "headline_is": "container memory cgroup usage minus inactive file cache",
        "cgroup": cgroup,
        "outside_cgroup_rss": sum(_proc_status_kib(p, "VmRSS") for p in outside) * 1024,
    }


class HostUsage(NamedTuple):
    rss: int
    python_heap: int
    threads: int
    fds: int


def host_usage() -> HostUsage:
    """This process's resident memory, traced Python heap, threads and open descriptors."""
    gc.collect()
    return HostUsage(
        rss=_proc_status_kib("self", "VmRSS") * 1024,
        python_heap=tracemalloc.get_traced_memory()[0],
        threads=threading.active_count(),
        fds=len(os.listdir("/proc/self/fd")),
    )


def bench_memory(name: str, opts: dict[str, str], count: int, bar: tqdm) -> dict[str, Any]:
    """Open ``count`` idle sandboxes; measure each one and what each costs the host process.

    The host RSS delta can read zero when freed memory from earlier sections is reused, so the
    traced Python heap (tracemalloc), thread and descriptor deltas are reported beside it.
    """
    measure: Callable[[Sandbox], dict[str, Any]] = local_memory if name == "local" else docker_memory
    sandboxes: list[Sandbox] = []
    tracemalloc.start()
    before = host_usage()
    try:
        for _ in range(count):
            sandboxes.append(Sandbox(**opts))
            sandboxes[-1].execute("1")
            bar.update()
        time.sleep(SETTLE_S)
        after = host_usage()
        each = [measure(sandbox) for sandbox in sandboxes]
    finally:
        tracemalloc.stop()
        for sandbox in sandboxes:
            sandbox.close()
    host = {field: (getattr(after, field) - getattr(before, field)) / count for field in HostUsage._fields}
    return {"sandboxes": each, "headline": summarize([float(m["headline"]) for m in each]), "host_per_sandbox": host}


# -- facts, leaks, report --------------------------------------------------------------------------


def docker_facts() -> dict[str, Any]:
    """Docker and gVisor versions, the cgroup layout, and the kernel image in use."""
    facts: dict[str, Any] = {"cgroup": "v2" if Path("/sys/fs/cgroup/cgroup.controllers").exists() else "v1"}
    try:
        from pixelbox.runtime.docker_engine import docker_client
        from pixelbox.runtime.image import kernel_image_tag

        client = docker_client()
        facts["docker"] = client.version().get("Version")
        facts["image"] = kernel_image_tag()
        facts["image_id"] = client.images.get(facts["image"]).id
    except Exception as exc:
        facts["docker"] = f"unavailable: {exc}"
    try:
        done = subprocess.run(["runsc", "--version"], capture_output=True, text=True, timeout=10, check=False)
        facts["runsc"] = done.stdout.splitlines()[0] if done.stdout else None
    except OSError:
        facts["runsc"] = None
    return facts


def leftovers() -> dict[str, Any]:
    """Anything this run left behind: its pixelbox containers, kernel children, workspaces.

    Containers are matched on the owner-pid label, so sandboxes of other processes sharing the
    engine (a test run, another benchmark) are not mistaken for leaks.
    """
    from pixelbox.runtime.backends import zygote

    zygote.stop_all()  # the local fork server lives until exit by design; what remains after it is a leak
    found: dict[str, Any] = {"containers": [], "children": [], "workspaces": []}
    try:
        from pixelbox.runtime.backends.docker import LABEL, OWNER_LABEL
        from pixelbox.runtime.docker_engine import docker_client

        mine = {"label": [LABEL, f"{OWNER_LABEL}={os.getpid()}"]}
        found["containers"] = [c.name for c in docker_client().containers.list(all=True, filters=mine)]
    except Exception as exc:
        found["containers"] = f"could not check: {exc}"
    found["children"] = [p for p in process_tree(os.getpid()) if p != os.getpid()]
    found["workspaces"] = sorted(str(p) for p in Path("/tmp").glob(f"pbx-{os.getpid()}.*"))
    return found


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def _mb(value: float) -> str:
    return f"{value / MIB:.1f}"


def _host(per: dict[str, float]) -> str:
    memory = f"{per['rss'] / MIB:.1f} RSS, {per['python_heap'] / MIB:.2f} heap"
    return f"{memory}, {per['threads']:.0f} thr, {per['fds']:.0f} fd"


def _verdict(ok: bool) -> str:
    return "yes" if ok else "NO"


def report(results: dict[str, dict[str, Any]]) -> str:
    """The four Markdown tables of a run."""
    cold = [
        [
            n,
            r["cold"]["first_result_s"]["n"],
            f"{r['cold']['start_s']['p50']:.3f}",
            f"{r['cold']['first_result_s']['p50']:.3f}",
            f"{r['cold']['first_result_s']['p90']:.3f}",
            f"{r['cold']['episode_first_result_s']['p50']:.3f}",
            f"{COLD_TARGET_S[n]:.1f}",
            _verdict(r["cold"]["first_result_s"]["p50"] <= COLD_TARGET_S[n]),
        ]
        for n, r in results.items()
    ]
    pool = [
        [
            n,
            r["pool"]["acquire_s"]["n"],
            _ms(r["pool"]["acquire_s"]["p50"]),
            _ms(r["pool"]["acquire_s"]["p99"]),
            r["pool"]["found_empty"],
            r["pool"]["over_target"],
            _ms(r["pool"]["release_s"]["p50"]),
            f"{r['pool']['refill_pause_s']['p50']:.2f}",
            _verdict(r["pool"]["acquire_s"]["p50"] <= ACQUIRE_TARGET_S),
        ]
        for n, r in results.items()
    ]
    trip = [
        [
            n,
            r["roundtrip"]["ours_s"]["n"],
            _ms(r["roundtrip"]["ours_s"]["p50"]),
            _ms(r["roundtrip"]["raw_s"]["p50"]),
            f"{r['roundtrip']['ratio_p50']:.2f}",
            _ms(r["roundtrip"]["ours_s"]["p90"]),
            _ms(r["roundtrip"]["raw_s"]["p90"]),
            _verdict(r["roundtrip"]["ratio_p50"] <= RATIO_TARGET),
        ]
        for n, r in results.items()
    ]
    memory = [
        [
            n,
            r["memory"]["headline"]["n"],
            _mb(r["memory"]["headline"]["p50"]),
            r["memory"]["sandboxes"][0]["headline_is"],
            _host(r["memory"]["host_per_sandbox"]),
            _verdict(r["memory"]["headline"]["p50"] <= MEMORY_TARGET_BYTES),
        ]
        for n, r in results.items()
    ]
    reset = [
        [
            n,
            r["reset"]["in_place_s"]["n"],
            f"{r['reset']['in_place_s']['p50']:.3f}",
            f"{r['cold']['first_result_s']['p50']:.3f}",
        ]
        for n, r in results.items()
    ]
    return "\n\n".join(
        [
            "Reset of a used sandbox to first result (s): in place vs a fresh sandbox\n"
            + format_table(["backend", "n", "in place p50", "fresh (cold start) p50"], reset),
            "Cold start to first result (s)\n"
            + format_table(
                ["backend", "n", "start p50", "first result p50", "p90", "episode config p50", "target p50", "met"],
                cold,
            ),
            "Warm-pool acquire (ms)\n"
            + format_table(
                [
                    "backend",
                    "cycles",
                    "acquire p50",
                    "p99",
                    "found empty",
                    "> 5 ms",
                    "release p50",
                    "refill wait p50 (s)",
                    "met",
                ],
                pool,
            ),
            "Trivial execute round trip, same kernel (ms)\n"
            + format_table(
                ["backend", "pairs", "ours p50", "raw p50", "ours/raw", "ours p90", "raw p90", "met (<= 1.2)"], trip
            ),
            "Idle sandbox memory (MB)\n"
            + format_table(["backend", "n", "resident p50", "measured as", "host per Sandbox", "met (<= 150)"], memory),
        ]
    )


def run_backend(name: str, plan: Plan, bar: tqdm) -> dict[str, Any]:
    """Pool, round trip and memory for one backend."""
    opts = BACKENDS[name]
    bar.set_description(f"{name}: pool")
    pool = bench_pool(opts, plan.pool_cycles[name], plan.pool_size, bar)
    bar.set_description(f"{name}: round trip")
    trip = bench_roundtrip(opts, plan.pairs, plan.warmup, bar)
    bar.set_description(f"{name}: memory")
    memory = bench_memory(name, opts, plan.idle_sandboxes, bar)
    bar.set_description(f"{name}: reset in place")
    reset = bench_reset(opts, plan.cold[name], bar)
    return {"options": opts, "pool": pool, "roundtrip": trip, "memory": memory, "reset": reset}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--backends", default="local,runc,runsc", help="comma-separated subset of local,runc,runsc (default: all three)"
    )
    parser.add_argument("--quick", action="store_true", help="few repetitions: a smoke run, not a measurement")
    parser.add_argument("--out", type=Path, default=RESULTS / "runtime.json", help="where to write the JSON results")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also cProfile 300 trivial executes per backend and print the top functions",
    )
    args = parser.parse_args(argv)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in args.backends if b not in BACKENDS]
    if unknown or not args.backends:
        parser.error(f"unknown backend(s) {unknown}; choose from {sorted(BACKENDS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = QUICK if args.quick else FULL
    facts = {"machine": machine_facts(), **docker_facts()}  # before the run: the sources it started from
    results: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    with progress(sum(plan.steps(b) for b in args.backends), "runtime") as bar:
        bar.set_description("cold start")
        cold = bench_cold(args.backends, plan.cold, bar, skipped)
        for name in cold:
            try:
                results[name] = {"cold": cold[name], **run_backend(name, plan, bar)}
            except (PixelboxError, BenchError) as exc:
                skipped[name] = f"{exc.__class__.__name__}: {exc}"
                tqdm.write(f"{name}: skipped ({skipped[name]})")
    profiles = {name: profile_ours(BACKENDS[name]) for name in results} if args.profile else {}
    gc.collect()
    leaks = leftovers()
    data = {
        "benchmark": "runtime",
        "mode": "quick" if args.quick else "full",
        "load_average_at_end": os.getloadavg(),  # the one at the start is in "machine"
        **facts,
        "results": results,
        "skipped": skipped,
        "leftovers": leaks,
    }
    write_json(args.out, data)
    if results:
        print(report(results))
    for name, text in profiles.items():
        print(f"\ncProfile of Sandbox.execute('x = 1') on {name}:\n{text}")
    print(f"\nskipped: {skipped or 'none'}; leftovers: {leaks}; results written to {args.out}")
    return 1 if skipped or any(leaks.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
