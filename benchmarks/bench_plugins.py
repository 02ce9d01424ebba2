"""Plug-in benchmark: what a command costs through the inspect_ai provider, beside what it is made of.

Run on demand (never as a timed test), from the repository root:

    .venv/bin/python benchmarks/bench_plugins.py [--rounds 40] [--runtime runc]

In one sandbox on the Docker backend, alternating rounds of: the provider's ``exec(["true"])``
(``Sandbox.run_command`` through the ``/bin/sh`` wrapper that sets the directory and standard input),
its ``exec(["bash", "--login", "-c", "echo hi"])`` (what inspect's ``bash()`` tool sends), a bare
``Sandbox.run_command(["true"])`` (the Docker engine's exec API), and the ``docker exec CONTAINER
true`` command line into the same container (what inspect's Docker provider runs per command).
Results go to ``results/plugins.json`` with the machine's facts.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import RESULTS, format_table, machine_facts, summarize, write_json  # noqa: E402


async def measure(rounds: int, runtime: str) -> dict[str, Any]:
    """Milliseconds per command, each way, in alternating rounds on one sandbox."""
    from pixelbox.plugins.inspect_sandbox import PixelboxConfig, PixelboxSandboxEnvironment

    config = PixelboxConfig(backend="docker", runtime=runtime)
    envs = await PixelboxSandboxEnvironment.sample_init("bench", config, {})
    env = envs["default"]
    assert isinstance(env, PixelboxSandboxEnvironment)
    container = str(env.sandbox.info.isolation["container_id"])

    async def docker_exec() -> object:
        return await asyncio.to_thread(subprocess.run, ["docker", "exec", container, "true"], check=True)

    ways: dict[str, Callable[[], Awaitable[object]]] = {
        "provider exec true": lambda: env.exec(["true"]),
        "provider exec bash --login -c 'echo hi'": lambda: env.exec(["bash", "--login", "-c", "echo hi"]),
        "Sandbox.run_command(['true'])": lambda: asyncio.to_thread(env.sandbox.run_command, ["true"]),
        "docker exec true (same container)": docker_exec,
    }
    samples: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for call in ways.values():
            await call()  # warm: first use of each path
        for _ in range(rounds):
            for name, call in ways.items():
                started = time.perf_counter()
                await call()
                samples[name].append((time.perf_counter() - started) * 1000)
    finally:
        await PixelboxSandboxEnvironment.sample_cleanup("bench", config, envs, False)
    return {name: summarize(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--runtime", default="runc", choices=("runc", "runsc"))
    args = parser.parse_args()
    figures = asyncio.run(measure(args.rounds, args.runtime))
    rows = [[name, f"{f['p50']:.1f}", f"{f['p90']:.1f}"] for name, f in figures.items()]
    print(format_table(["command", "p50 ms", "p90 ms"], rows))
    write_json(RESULTS / "plugins.json", {"machine": machine_facts(), "runtime": args.runtime, "ms": figures})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
