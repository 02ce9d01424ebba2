"""Where a fresh runc sandbox's time goes (issue 20): Docker's container start against the kernel's own work.

Run on demand (never in CI), from the repository root:

    .venv/bin/python benchmarks/bench_runc_start.py [--rounds 10] [--out PATH]

Interleaved round by round in one process, on the kernel image of this checkout:

- a cold runc sandbox, with its phases: the Docker API call that creates and starts the container
  returned (``containers.run``; Docker's own ``StartedAt`` is recorded too), the kernel's
  ``ready.json`` written (its imports and phase two done), ``Sandbox()`` back (handshake), the
  first result of ``execute("1")``;
- a runc sandbox restored with CRIU (``PIXELBOX_RUNC_RESTORE=1``; skipped when the path cannot
  run here): ``ready.json`` and first result;
- a bare ``docker run --rm --network none --runtime runc IMAGE python -c 'print(1)'``.

All times are seconds from the start of the sample. Prints a Markdown table and writes
``benchmarks/results/runc-start.json`` with the machine facts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from _common import RESULTS, format_table, machine_facts, summarize, write_json

from pixelbox.runtime import Sandbox
from pixelbox.runtime.backends import criu
from pixelbox.runtime.backends import docker as docker_backend
from pixelbox.runtime.errors import BackendUnavailable

RUNC = {"backend": "docker", "runtime": "runc", "policy": False}
PHASES = {
    "cold": (
        "docker API run() returned",
        "container StartedAt (Docker)",
        "ready.json",
        "Sandbox() back",
        "first result",
    ),
    "restore": ("ready.json", "Sandbox() back", "first result"),
    "bare": ("docker run ... print(1) done",),
}


def _docker_marks() -> dict[str, Any]:
    """Record when the backend's ``containers.run`` returns, and the container it made."""
    marks: dict[str, Any] = {}
    original = docker_backend.DockerBackend._run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        container = original(self, *args, **kwargs)
        marks["returned"], marks["container"] = time.time(), container
        return container

    docker_backend.DockerBackend._run = run  # type: ignore[method-assign]
    return marks


def sandbox_once(fast: bool, marks: dict[str, Any]) -> list[float]:
    """One sandbox to its first result; the phase times of :data:`PHASES`."""
    started = time.time()
    with Sandbox(**RUNC, fast_start=fast) as sb:
        back = time.time()
        sb.execute("1")
        first = time.time()
        ready = (sb.layout.ipc / "ready.json").stat().st_mtime
        if fast:
            assert sb.start_path == "fast", sb.info.kernel
            return [ready - started, back - started, first - started]
        container = marks["container"]
        container.reload()
        begun = datetime.fromisoformat(container.attrs["State"]["StartedAt"][:26] + "+00:00").timestamp()
    return [marks["returned"] - started, begun - started, ready - started, back - started, first - started]


def bare_once(image: str) -> list[float]:
    started = time.time()
    command = ["docker", "run", "--rm", "--network", "none", "--runtime", "runc", image, "python", "-c", "print(1)"]
    done = subprocess.run(command, capture_output=True, check=False)
    if done.stdout.strip() != b"1":
        raise RuntimeError(f"bare docker run failed: {done.stderr.decode(errors='replace')[-300:]}")
    return [time.time() - started]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--out", type=Path, default=RESULTS / "runc-start.json")
    args = parser.parse_args(argv)
    facts = machine_facts()
    marks = _docker_marks()
    kinds = ["cold", "bare"]
    try:
        criu.check_available()
        os.environ[criu.ENABLE_VARIABLE] = "1"
        kinds.insert(1, "restore")
    except BackendUnavailable as exc:
        print(f"restore skipped: {exc}")
    with Sandbox(**RUNC) as warm:  # the image check, and the checkpoint template when restoring
        image = warm._backend.image  # type: ignore[attr-defined]
    samples: dict[str, list[list[float]]] = {kind: [] for kind in kinds}
    load = [os.getloadavg()[0]]
    for round_ in range(args.rounds + 1):  # the first round is warm-up
        for kind in kinds:
            sample = bare_once(image) if kind == "bare" else sandbox_once(kind == "restore", marks)
            if round_:
                samples[kind].append(sample)
    load.append(os.getloadavg()[0])
    results = {
        kind: {phase: summarize([s[i] for s in rows]) for i, phase in enumerate(PHASES[kind])}
        for kind, rows in samples.items()
    }
    rows = [
        [kind, phase, f"{figures['p50']:.3f}", f"{figures['p90']:.3f}"]
        for kind, by_phase in results.items()
        for phase, figures in by_phase.items()
    ]
    print(format_table(["sandbox", "phase (seconds from the start)", "p50", "p90"], rows))
    print(f"load average {load[0]:.1f} at the start, {load[1]:.1f} at the end")
    write_json(args.out, {"machine": facts, "rounds": args.rounds, "load": load, "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
