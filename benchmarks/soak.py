"""Soak test (on demand, never in CI): many sandbox lifecycles and pool cycles with random
faults, then a strict leak audit.

What it does, by default: 50 sandbox lifecycles spread over the backends (local with the
policy, docker runc, docker runsc), each running 20 executions (1,000 in all) where about one
in four is a fault drawn at random (crash, OOM, timeout that ignores the interrupt, output
flood, fd exhaustion, fork, error); then 200 SandboxPool acquire/release cycles with a random
fault in some of the leased sandboxes. Afterwards it checks that no pixelbox container,
kernel process, cgroup, workspace directory or host file descriptor was left behind, and
reports how much the host process's resident memory grew.

    .venv/bin/python benchmarks/soak.py            # writes benchmarks/results/soak.json
    .venv/bin/python benchmarks/soak.py --quick    # 6 lifecycles x 10, 20 pool cycles

It stops by itself: every execution has a deadline and the run has an overall time budget
(``--budget`` seconds) after which remaining work is skipped and reported as such.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import RESULTS, machine_facts, write_json

from pixelbox.runtime import Sandbox, SandboxPool, live
from pixelbox.runtime.cleanup import leftovers_of

BACKENDS: dict[str, dict[str, Any]] = {
    "local": {"backend": "local"},
    "runc": {"backend": "docker", "runtime": "runc"},
    "runsc": {"backend": "docker", "runtime": "runsc"},
}
LIMITS: dict[str, Any] = {"memory": "512m", "pids": 64, "timeout": 3.0, "grace": 1.0, "max_open_files": 256}
WORK = [
    "x = sum(range(10000))\nprint(x)",
    "import numpy as np\na = np.random.rand(200, 200)\nprint(round(float(a.mean()), 1))",
    "from PIL import Image\nimg = Image.new('RGB', (64, 64))\nimg.crop((0, 0, 32, 32)).save('c.png')\nprint('saved')",
    "print('hello')",
]
FAULTS: dict[str, str] = {
    "error": "1 / 0",
    "crash": "import numpy as np\nnp.lib.stride_tricks.as_strided(np.zeros(1), shape=(10**9,), strides=(10**7,)).sum()",
    "oom": "import numpy as np\nblock = np.ones((1024, 1024, 1024), dtype=np.uint8)",
    "stuck": "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
    "interruptible": "while True:\n    pass",
    "flood": "print('z' * 5_000_000)",
    "fds": "held = []\ntry:\n    while True:\n        held.append(open('/dev/null'))\nexcept OSError:\n    held = []",
    "displays": "from IPython.display import display\nfor i in range(500):\n    display(i)",
}


def rss_bytes() -> int:
    """Resident memory of this (host) process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def open_fds() -> int:
    """Open file descriptors of this process."""
    return len(os.listdir("/proc/self/fd"))


def leaks() -> dict[str, list[str]]:
    """Containers, kernel processes, cgroups and workspaces owned by this process."""
    return leftovers_of(os.getpid())


class Tally:
    """Counts of outcomes, by what was run and how it ended."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self.unexpected: list[str] = []
        self.executions = 0

    def check(self, kind: str, status: str, ok: bool, detail: str) -> None:
        """Record one execution; remember it if the outcome was not the expected one."""
        self.executions += 1
        self.outcomes[f"{kind}:{status}"] += 1
        if not ok and len(self.unexpected) < 50:
            self.unexpected.append(f"{kind} -> {status}: {detail[:200]}")


def run_cell(sb: Sandbox, rng: random.Random, tally: Tally, fault_rate: float) -> None:
    """One execution: ordinary work, or a random fault followed by a check that the sandbox works."""
    if rng.random() < fault_rate:
        kind = rng.choice(sorted(FAULTS))
        result = sb.execute(FAULTS[kind])
        expected = {
            "error": ("error",),
            "crash": ("crashed",),
            "oom": ("crashed", "error"),
            "stuck": ("timeout",),
            "interruptible": ("timeout",),
            "flood": ("ok",),
            "fds": ("ok", "error"),
            "displays": ("ok",),
        }[kind]
        tally.check(kind, result.status, result.status in expected, repr(result.error or result.notices))
        return
    result = sb.execute(rng.choice(WORK))
    tally.check("work", result.status, result.status == "ok" and bool(result.stdout), repr(result.error))


def soak(lifecycles: int, per_lifecycle: int, pool_cycles: int, budget: float, seed: int) -> dict[str, Any]:
    """Run the soak and return its report (see the module docstring)."""
    rng = random.Random(seed)
    names = list(BACKENDS)
    tally = Tally()
    gc.collect()
    start_rss, start_fds = rss_bytes(), open_fds()
    started = time.monotonic()
    skipped = 0
    for i in range(lifecycles):
        if time.monotonic() - started > budget:
            skipped += lifecycles - i
            break
        name = names[i % len(names)]
        with Sandbox(**LIMITS, **BACKENDS[name]) as sb:
            for _ in range(per_lifecycle):
                run_cell(sb, rng, tally, fault_rate=0.25)
        print(f"lifecycle {i + 1}/{lifecycles} ({name}): {tally.executions} executions so far", flush=True)
    pool_done = 0
    for name in names:
        share = pool_cycles // len(names) + (1 if names.index(name) < pool_cycles % len(names) else 0)
        with SandboxPool(2, **LIMITS, **BACKENDS[name]) as pool:
            for _ in range(share):
                if time.monotonic() - started > budget:
                    skipped += share - _
                    break
                with pool.sandbox(timeout=120) as sb:
                    run_cell(sb, rng, tally, fault_rate=0.3)
                pool_done += 1
        print(f"pool cycles on {name} done ({pool_done} in all)", flush=True)
    live.close_all()
    gc.collect()
    time.sleep(1.0)
    left = leaks()
    return {
        "machine": machine_facts(),
        "seed": seed,
        "planned": {"lifecycles": lifecycles, "executions_per_lifecycle": per_lifecycle, "pool_cycles": pool_cycles},
        "executions": tally.executions,
        "pool_cycles": pool_done,
        "skipped_for_budget": skipped,
        "outcomes": dict(sorted(tally.outcomes.items())),
        "unexpected_outcomes": tally.unexpected,
        "leaks": left,
        "leak_free": not {k: v for k, v in left.items() if k != "notes"},
        "host_fds": {"before": start_fds, "after": open_fds()},
        "host_rss_mib": {"before": round(start_rss / 2**20, 1), "after": round(rss_bytes() / 2**20, 1)},
        "wall_seconds": round(time.monotonic() - started, 1),
    }


def main() -> None:
    """Parse arguments, run the soak, write and print the report."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a small run (6 lifecycles x 10, 20 pool cycles)")
    parser.add_argument("--budget", type=float, default=3600.0, help="stop starting new work after this many seconds")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS / "soak.json")
    args = parser.parse_args()
    sizes = (6, 10, 20) if args.quick else (50, 20, 200)
    report = soak(*sizes, budget=args.budget, seed=args.seed)
    write_json(args.out, report)
    print(
        f"{report['executions']} executions, {report['pool_cycles']} pool cycles, "
        f"leak-free: {report['leak_free']}, fds {report['host_fds']}, rss MiB {report['host_rss_mib']}"
    )
    if not report["leak_free"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
