"""Install size and time of each extra: a fresh virtualenv per extra, the wheel built from this checkout.

Usage (from the repository root, with the project's virtualenv)::

    .venv/bin/python benchmarks/bench_install.py                       # base and every extra
    .venv/bin/python benchmarks/bench_install.py --extras base,inspect  # a subset
    .venv/bin/python benchmarks/bench_install.py --out /tmp/install.json

Each install is ``pip install WHEEL[EXTRA]`` into a new venv made from the same interpreter as
``.venv``, with pip's cache as it is on this machine (so the time is resolving, unpacking and
byte-compiling, not downloading twice). Size is the venv's ``site-packages`` on disk (``du``), and
"added" subtracts the base install. Results go to ``results/install.json``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import format_table, machine_facts, write_json

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("base", "local", "harness", "parquet", "ray", "inspect", "mcp", "all")
WHAT = {
    "base": "Docker backend, traces, artifacts, static audits",
    "local": "kernels on the host (ipykernel, policy, NumPy, OpenCV, SciPy, scikit-image, Matplotlib, SymPy)",
    "harness": "agents, episodes, judges, reports (NumPy, OpenCV, openai, tqdm)",
    "parquet": "Parquet task files and run stores (pyarrow)",
    "ray": "pixelbox.ray and `--ray` (Ray, fsspec)",
    "inspect": "inspect_ai sandbox provider",
    "mcp": "`pixelbox mcp`",
    "all": "everything above",
}


def build_wheel(out: Path) -> Path:
    """The wheel of this checkout (no dependencies, no build isolation: the venv has setuptools)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True,
    )
    return next(out.glob("pixelbox-*.whl"))


def site_size(venv: Path) -> int:
    """Bytes under the venv's site-packages, as ``du`` counts them."""
    (site,) = venv.glob("lib/python*/site-packages")
    return int(subprocess.run(["du", "-sb", str(site)], capture_output=True, text=True, check=True).stdout.split()[0])


def measure(wheel: Path, extra: str, work: Path) -> dict[str, Any]:
    """One fresh venv with ``wheel[extra]``: seconds to install and bytes installed."""
    venv = work / extra
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    empty = site_size(venv)
    spec = str(wheel) if extra == "base" else f"{wheel}[{extra}]"
    started = time.monotonic()
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", spec], check=True)
    seconds = time.monotonic() - started
    return {"extra": extra, "seconds": round(seconds, 1), "bytes": site_size(venv) - empty}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default=",".join(EXTRAS), help="comma-separated subset of " + ",".join(EXTRAS))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "install.json")
    args = parser.parse_args()
    extras = [e for e in args.extras.split(",") if e]
    unknown = sorted(set(extras) - set(EXTRAS))
    if unknown:
        parser.error(f"unknown extras {unknown}; choose from {EXTRAS}")
    with tempfile.TemporaryDirectory(prefix="pbx-install-") as tmp:
        work = Path(tmp)
        wheel = build_wheel(work / "wheel")
        rows = [measure(wheel, extra, work) for extra in extras]
    base = next((r["bytes"] for r in rows if r["extra"] == "base"), None)
    table = [
        [
            "`pixelbox`" if r["extra"] == "base" else f"`pixelbox[{r['extra']}]`",
            WHAT[r["extra"]],
            f"{r['bytes'] / 1e6:.0f} MB",
            "" if base is None or r["extra"] == "base" else f"+{(r['bytes'] - base) / 1e6:.0f} MB",
            f"{r['seconds']} s",
        ]
        for r in rows
    ]
    print(format_table(["install", "adds", "site-packages", "beyond the base", "time"], table))
    write_json(args.out, {"machine": machine_facts(), "installs": rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
