"""Helpers shared by the benchmarks: summaries of samples, plain-text tables, machine facts.

Benchmarks run on demand (never in CI) and write their latest results as JSON under
``benchmarks/results/``, so every figure in the README can be traced to a run and a machine.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values``, linearly interpolated between ranks."""
    if not values:
        raise ValueError("percentile of no samples")
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Count, p50, p90, p99, mean, min and max of a list of samples (same unit as the samples)."""
    return {
        "n": len(values),
        "p50": percentile(values, 0.5),
        "p90": percentile(values, 0.9),
        "p99": percentile(values, 0.99),
        "mean": statistics.fmean(values),
        "min": min(values),
        "max": max(values),
    }


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (also readable in a terminal)."""
    cells = [[str(c) for c in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def progress(total: int, desc: str) -> tqdm:
    """A progress bar on stderr that leaves the terminal clean when done."""
    return tqdm(total=total, desc=desc, unit="step", dynamic_ncols=True, leave=False, file=sys.stderr)


def _command_output(*command: str) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_total() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def machine_facts() -> dict[str, Any]:
    """The machine and checkout a result was measured on."""
    return {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_bytes": _memory_total(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "git_commit": _command_output("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"),
    }


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON, creating the directory if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
