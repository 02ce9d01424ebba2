"""Fresh-sandbox benchmark (issue 20): what a clean, isolated, ready kernel costs, cold and fast.

Run on demand (never in CI), from the repository root:

    .venv/bin/python benchmarks/bench_fresh.py [--backends local,runc,runsc] [--quick] [--out PATH]

Side by side in one run and one process, per backend:

1. fresh sandbox to first result: ``Sandbox(**opts)`` + ``execute("1")``, cold
   (``fast_start=False``) beside the fast path (``fast_start=True``, after
   ``Backend.prepare_fresh``), and for the container backends beside a bare ``docker run --rm
   --network none [--runtime R] IMAGE python -c 'print(1)'`` of the same kernel image on the same
   runtime; all variants interleaved round by round, so load on this shared machine hits them alike;
2. CPU-seconds per fresh sandbox: the kernel's (the container's, with the runtime's processes in
   it) from cgroup accounting (``Sandbox.kernel_cpu_seconds``), and the host's: this process's
   own CPU (``getrusage``; the docker CLI of a bare run included) plus the fork server's (the zygote's own time, not
   its children's, which the kernel's cgroup already counts), plus for containers the engine's
   (dockerd and containerd; shared with everyone on the machine, so noisy);
3. churn: short episodes (three cells of the W3 kind: open the input, crop, save) each on a fresh
   sandbox, ``--workers`` at a time (2: the machine's cores), episodes per minute, cold beside fast
   in alternating blocks.

Variants are the keys of :data:`KINDS`; a backend whose fast path is a different mechanism
plugs it in through ``Backend.prepare_fresh`` / ``Backend.start_fresh`` and is measured by the
``fast`` variant without a change here (each sample records which path the sandbox really took,
``Sandbox.start_path``). A new kind of column is one entry in :data:`KINDS`.

Prints Markdown tables and writes ``benchmarks/results/fresh.json`` with the machine facts.
Targets (issue 20): fast path p50 <= 0.05 s local, <= 0.15 s runc, <= 0.3 s and <= 0.6x the bare
``docker run`` on runsc; churn >= 3x cold on runsc.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _common import RESULTS, format_table, machine_facts, progress, summarize, write_json
from PIL import Image

from pixelbox.runtime import Sandbox
from pixelbox.runtime.backends import choose_backend, restore, spares
from pixelbox.runtime.backends import zygote as zygotes
from pixelbox.runtime.backends.cgroups import KernelCgroup, cgroups_usable
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.workspace import ROOT_PREFIX, this_owner

BACKENDS: dict[str, dict[str, str]] = {
    "local": {"backend": "local"},
    "runc": {"backend": "docker", "runtime": "runc"},
    "runsc": {"backend": "docker", "runtime": "runsc"},
}
FAST_TARGET_S = {"local": 0.05, "runc": 0.15, "runsc": 0.3}
BARE_RATIO_TARGET = {"runsc": 0.6}
CHURN_TARGET = {"runsc": 3.0}
ENGINE_PROCESSES = ("dockerd", "containerd")
CHURN_CELLS = (
    "import os\nfrom PIL import Image\nimg = Image.open(os.environ['ORIGINAL_IMAGE_PATH'])\nprint(img.size)",
    "crop = img.crop((40, 30, 360, 270))\nprint(crop.size)",
    "crop.save('/mnt/data/crop.png')",
)
"""A W3-like episode: open the task image, crop it, save the crop (a made-up path, as models write)."""
EPISODE_IO = {"enabled": True, "profile": "agentic-mme"}


@dataclass
class Sample:
    """One fresh sandbox (or one bare ``docker run``): wall time to first result and CPU it cost."""

    seconds: float
    host_cpu: float
    kernel_cpu: float | None
    engine_cpu: float | None
    path: str


def _proc_cpu(pid: int) -> float:
    """A process's own user+system CPU seconds (not its reaped children's)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _self_cpu(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _host_cpu() -> float:
    """This process (not its children: a cold local kernel is one, counted by its cgroup), plus the
    zygotes' own time (not their children's, the forked kernels)."""
    return _self_cpu() + sum(_proc_cpu(z["pid"]) for z in zygotes.running())


def _engine_pids() -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if Path(entry.path, "comm").read_text().strip() in ENGINE_PROCESSES:
                    found.append(int(entry.name))
    return found


def _engine_cpu(pids: list[int]) -> float:
    return sum(_proc_cpu(pid) for pid in pids)


def _runtime_commands_cpu() -> float:
    """CPU of the runtime commands a restored container sandbox runs: ``runsc``/``runc`` children of this
    process (wait, kill, delete) and the ``runsc restore`` / ``runsc run`` the subreaper ran."""
    return _self_cpu(resource.RUSAGE_CHILDREN) + restore.subreaper_command_cpu()


def fresh_once(opts: dict[str, Any], engine: list[int]) -> Sample:
    """``Sandbox(**opts)`` to its first result, then close; CPU read around it (kernel's before close).
    A container kernel restored from a checkpoint adds its runtime commands' CPU to the host's."""
    host0, engine0, commands0 = _host_cpu(), _engine_cpu(engine), _runtime_commands_cpu()
    started = time.monotonic()
    sandbox = Sandbox(**opts)
    try:
        result = sandbox.execute("1")
        seconds = time.monotonic() - started
        if result.status != "ok":
            raise RuntimeError(f"first execute failed: {result.status} {result.error}")
        kernel = sandbox.kernel_cpu_seconds()
        path = sandbox.start_path
    finally:
        sandbox.close()
    engine_cpu = _engine_cpu(engine) - engine0 if engine else None
    host = _host_cpu() - host0
    if path == "fast" and opts.get("backend") == "docker":
        time.sleep(0.05)  # the waiter's ``runsc wait`` is reaped once the container is gone
        host += _runtime_commands_cpu() - commands0
    return Sample(seconds, host, kernel, engine_cpu, path)


SPARE_WAIT_S = 300.0
"""How long a sample waits for the spare it needs (made ahead, outside the timed part)."""


def _spare_ready(opts: dict[str, Any]) -> None:
    """Wait until the backend's spare for ``opts`` is parked (:mod:`pixelbox.runtime.backends.spares`)."""
    options = SandboxOptions(**opts)
    backend = choose_backend(options)[0]
    backend.prepare_fresh(options)  # a spare is being restored (or parked) from here on
    if getattr(backend, "spare", lambda *_: None)(options, SPARE_WAIT_S) is None:
        raise RuntimeError(f"no spare was restored for {opts} in {SPARE_WAIT_S:g} s")


def spare_once(opts: dict[str, Any], engine: list[int]) -> Sample:
    """:func:`fresh_once` served by a spare restored ahead, then the wait for the next spare (untimed).

    A spare is not free: the sample's host CPU includes the restore of the spare that replaces the one
    it took (this process's thread, and runsc's command; runc's is counted when it is reaped, at the
    close of the sandbox that used it), and its kernel CPU is the container's whole life: its restore,
    the time it was parked, and the sandbox's use."""
    _spare_ready(opts)
    host0, commands0 = _host_cpu(), _runtime_commands_cpu()
    sample = fresh_once(opts, engine)
    _spare_ready(opts)  # the replacement is restored before any other variant runs
    sample.host_cpu = _host_cpu() - host0 + _runtime_commands_cpu() - commands0
    return sample


def bare_once(opts: dict[str, Any], engine: list[int]) -> Sample:
    """``docker run --rm --network none [--runtime R] IMAGE python -c 'print(1)'`` under a pixelbox cgroup
    parent (cgroupfs driver), whose accounting outlives the removed container."""
    backend, _ = choose_backend(SandboxOptions(**opts))
    image = getattr(backend, "image", None)
    group = KernelCgroup(f"{ROOT_PREFIX}{this_owner().tag}-bare-{time.monotonic_ns()}", 2 * 1024**3)
    parent = ["--cgroup-parent", group.path] if cgroups_usable() and group.create() else []
    command = ["docker", "run", "--rm", "--network", "none", "--runtime", opts["runtime"], *parent]
    host0, engine0 = _self_cpu() + _self_cpu(resource.RUSAGE_CHILDREN), _engine_cpu(engine)
    started = time.monotonic()
    try:
        done = subprocess.run([*command, str(image), "python", "-c", "print(1)"], capture_output=True, check=False)
        seconds = time.monotonic() - started
        if done.returncode != 0 or done.stdout.strip() != b"1":
            raise RuntimeError(f"bare docker run failed: {done.stderr.decode(errors='replace')[-400:]}")
        kernel = group.cpu_seconds() if parent else None
    finally:
        group.remove()
    host = _self_cpu() + _self_cpu(resource.RUSAGE_CHILDREN) - host0  # the docker CLI is a child
    return Sample(seconds, host, kernel, _engine_cpu(engine) - engine0, "bare")


@dataclass(frozen=True)
class Kind:
    """One column of the fresh-sandbox table: how one sample is taken, and on which backends."""

    label: str
    run: Callable[[dict[str, Any], list[int]], Sample]
    containers_only: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    only: tuple[str, ...] = ()
    """The backends this column applies to (empty: all)."""
    env: dict[str, str] = field(default_factory=dict)
    """Host environment variables set while a sample (or a churn block) of this column runs."""


KINDS: dict[str, Kind] = {
    "cold": Kind("cold start (today)", fresh_once, overrides={"fast_start": False}),
    "fast": Kind(
        "fast path (containers: restore on demand)",
        fresh_once,
        overrides={"fast_start": True},
        env={spares.ENABLE_VARIABLE: "0"},
    ),
    "spare": Kind(
        "restore, a spare ready",
        spare_once,
        overrides={"fast_start": True},
        only=("runc", "runsc"),
        env={spares.ENABLE_VARIABLE: "1"},
    ),
    "bare": Kind("bare docker run", bare_once, containers_only=True),
}
CHURN_KINDS = ("cold", "fast", "spare")


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Any:
    """``values`` set in this process's environment for the duration (the restore paths read it per start)."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _kinds_for(name: str) -> list[str]:
    return [
        k
        for k, kind in KINDS.items()
        if not (kind.containers_only and name == "local") and (not kind.only or name in kind.only)
    ]


def _prepare(name: str) -> str | None:
    """Make the backend's fast path ready (and wait for it); None, or why the backend is skipped."""
    opts = SandboxOptions(**BACKENDS[name])
    try:
        backend, _ = choose_backend(opts)
        backend.prepare_fresh(opts)
        Sandbox(opts).close()  # waits for the fast path, or starts cold when there is none
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def bench_fresh(names: list[str], rounds: int, engine: list[int], bar: Any) -> dict[str, Any]:
    """Every (backend, kind) once per round, round-robin; the first round is warm-up."""
    samples: dict[str, dict[str, list[Sample]]] = {n: {k: [] for k in _kinds_for(n)} for n in names}
    for round_ in range(rounds + 1):
        for name in names:
            for kind_name in _kinds_for(name):
                kind = KINDS[kind_name]
                opts = {**BACKENDS[name], **kind.overrides}
                with environment(kind.env):
                    sample = kind.run(opts, engine if name != "local" else [])
                if round_ > 0:
                    samples[name][kind_name].append(sample)
                bar.update(1)
    return {name: {k: _fresh_summary(v) for k, v in by_kind.items()} for name, by_kind in samples.items()}


def _fresh_summary(samples: list[Sample]) -> dict[str, Any]:
    def mean(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if known else None

    return {
        "seconds": summarize([s.seconds for s in samples]),
        "host_cpu_s": mean([s.host_cpu for s in samples]),
        "kernel_cpu_s": mean([s.kernel_cpu for s in samples]),
        "engine_cpu_s": mean([s.engine_cpu for s in samples]),
        "paths": {p: sum(1 for s in samples if s.path == p) for p in sorted({s.path for s in samples})},
        "samples": [asdict(s) for s in samples],
    }


def _episode(opts: dict[str, Any], image: Path) -> None:
    with Sandbox(**opts, inputs=[image], io=EPISODE_IO) as sandbox:
        for cell in CHURN_CELLS:
            result = sandbox.execute(cell)
            if result.status != "ok":
                raise RuntimeError(f"churn cell failed: {result.status} {result.error}")


def churn_block(opts: dict[str, Any], image: Path, workers: int, episodes: int) -> tuple[int, float]:
    """``episodes`` episodes on fresh sandboxes, ``workers`` at a time; (episodes done, seconds)."""
    left = [episodes]
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        while True:
            with lock:
                if left[0] <= 0 or errors:
                    return
                left[0] -= 1
            try:
                _episode(opts, image)
            except BaseException as exc:
                errors.append(exc)
                return

    started = time.monotonic()
    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return episodes, time.monotonic() - started


def bench_churn(names: list[str], blocks: int, episodes: int, workers: int, image: Path, bar: Any) -> dict[str, Any]:
    """Cold and fast in alternating blocks per backend; episodes per minute over all blocks of each."""
    out: dict[str, Any] = {}
    for name in names:
        kinds = [k for k in CHURN_KINDS if k in _kinds_for(name)]
        totals: dict[str, list[Any]] = {k: [0, 0.0] for k in kinds}
        for _ in range(blocks):
            for kind_name in kinds:
                opts = {**BACKENDS[name], **KINDS[kind_name].overrides}
                with environment(KINDS[kind_name].env):
                    done, seconds = churn_block(opts, image, workers, episodes)
                totals[kind_name][0] += done
                totals[kind_name][1] += seconds
                bar.update(1)
        rates = {k: 60.0 * n / s for k, (n, s) in totals.items()}
        ratios = {k: rates[k] / rates["cold"] for k in kinds if k != "cold"}
        out[name] = {
            "episodes_per_min": rates,
            "ratio": rates["fast"] / rates["cold"],
            "ratios": ratios,
            "totals": totals,
        }
    return out


def _task_image(folder: Path) -> Path:
    path = folder / "task.png"
    Image.new("RGB", (640, 480), (120, 90, 60)).save(path)
    return path


def _fmt(value: float | None, unit: str = "s", digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def fresh_table(results: dict[str, Any]) -> str:
    """Markdown: per backend and kind, p50 (p90) to first result and CPU-seconds per fresh sandbox."""
    rows = []
    for name, by_kind in results.items():
        for kind_name, summary in by_kind.items():
            seconds = summary["seconds"]
            rows.append(
                [
                    name,
                    KINDS[kind_name].label,
                    f"{seconds['p50']:.3f} s ({seconds['p90']:.3f})",
                    _fmt(summary["kernel_cpu_s"]),
                    _fmt(summary["host_cpu_s"]),
                    _fmt(summary["engine_cpu_s"]),
                    ", ".join(f"{p} {n}" for p, n in summary["paths"].items()),
                ]
            )
    headers = ["backend", "variant", "first result p50 (p90)", "kernel CPU", "host CPU", "engine CPU", "path taken"]
    return format_table(headers, rows)


def churn_table(churn: dict[str, Any]) -> str:
    """Markdown: episodes per minute per backend and variant, and each against cold."""
    rows = []
    for name, figures in churn.items():
        for kind_name, rate in figures["episodes_per_min"].items():
            ratio = figures.get("ratios", {}).get(kind_name)
            rows.append([name, KINDS[kind_name].label, f"{rate:.0f}", "-" if ratio is None else f"{ratio:.2f}x"])
    return format_table(["backend", "variant", "churn (episodes/min)", "vs cold"], rows)


def verdicts(fresh: dict[str, Any], churn: dict[str, Any]) -> list[str]:
    """Each target, met or missed, with the figures behind it."""
    lines = []
    for name, by_kind in fresh.items():
        lines += _speed_verdicts(name, by_kind, "fast")
        lines += _speed_verdicts(name, by_kind, "spare") if "spare" in by_kind else []
    for name, figures in churn.items():
        target = CHURN_TARGET.get(name)
        for kind_name, ratio in figures.get("ratios", {}).items() if target is not None else ():
            verdict = "met" if ratio >= target else "MISSED"
            lines.append(f"{name}: churn {kind_name} / cold {ratio:.2f}x vs target {target}x: {verdict}")
    return lines


def _speed_verdicts(name: str, by_kind: dict[str, Any], kind_name: str) -> list[str]:
    """The first-result targets of one variant of one backend."""
    lines = []
    fast = by_kind.get(kind_name, {}).get("seconds", {}).get("p50")
    target = FAST_TARGET_S.get(name)
    if fast is not None and target is not None:
        lines.append(
            f"{name}: {kind_name} p50 {fast:.3f} s vs target {target} s: {'met' if fast <= target else 'MISSED'}"
        )
    bare = by_kind.get("bare", {}).get("seconds", {}).get("p50")
    ratio_target = BARE_RATIO_TARGET.get(name)
    if fast is not None and bare and ratio_target is not None:
        ratio = fast / bare
        verdict = "met" if ratio <= ratio_target else "MISSED"
        lines.append(f"{name}: {kind_name} / bare docker run {ratio:.2f} vs target {ratio_target}: {verdict}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=["local,runc,runsc"], help="names, by spaces or commas")
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds of fresh sandboxes per variant")
    parser.add_argument("--churn-blocks", type=int, default=2, help="alternating cold/fast blocks per backend")
    parser.add_argument("--churn-episodes", type=int, default=20, help="episodes per churn block")
    parser.add_argument("--workers", type=int, default=2, help="concurrent episodes in churn (the machine's cores)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 rounds, 1 block of 4 episodes")
    parser.add_argument("--out", type=Path, default=RESULTS / "fresh.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.churn_blocks, args.churn_episodes = 3, 1, 4
    names = [n.strip() for given in args.backends for n in given.split(",") if n.strip()]
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        parser.error(f"unknown backend(s) {unknown}; choose from {sorted(BACKENDS)}")
    facts = machine_facts()
    skipped = {n: why for n in names if (why := _prepare(n)) is not None}
    names = [n for n in names if n not in skipped]
    engine = _engine_pids()
    steps = sum((args.rounds + 1) * len(_kinds_for(n)) for n in names) + sum(
        args.churn_blocks * len(set(CHURN_KINDS) & set(_kinds_for(n))) for n in names
    )
    with progress(steps, "fresh sandboxes") as bar, tempfile.TemporaryDirectory() as folder:
        fresh = bench_fresh(names, args.rounds, engine, bar)
        churn = bench_churn(names, args.churn_blocks, args.churn_episodes, args.workers, _task_image(Path(folder)), bar)
    facts["load_average_end"] = os.getloadavg()
    lines = verdicts(fresh, churn)
    print(fresh_table(fresh))
    print()
    print(churn_table(churn))
    print()
    print("\n".join(lines))
    for name, why in skipped.items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    write_json(
        args.out,
        {
            "machine": facts,
            "args": vars(args) | {"out": str(args.out)},
            "fresh": fresh,
            "churn": churn,
            "verdicts": lines,
            "skipped": skipped,
        },
    )
    return 1 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
