"""The wheel of this checkout, built from a copy of its sources (shared by the packaging tests).

Building from a copy keeps concurrent test runs from sharing setuptools' ``build/`` directory in
the checkout, and builds exactly what pyproject's package-dir maps, as an embedder's wheel would be.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIRS = {
    "pixelbox": "pixelbox",
    "runtime": "pixelbox/runtime",
    "tracer": "pixelbox/tracer",
    "harness": "pixelbox/harness",
    "images": "pixelbox/images",
}
COPIED_FILES = ("pyproject.toml", "README.md", "LICENSE")


def build_wheel(work: Path) -> Path:
    """Copy the sources under ``work`` and build their wheel there (no dependencies); its path."""
    source = work / "source"
    source.mkdir(parents=True)
    for name in COPIED_FILES:
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for directory in SOURCE_DIRS:
        shutil.copytree(ROOT / directory, source / directory, ignore=ignore)
    out = work / "wheel"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out)]
    result = subprocess.run([*command, str(source)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"building the wheel failed:\n{result.stdout}\n{result.stderr}"
    (built,) = out.glob("pixelbox-*.whl")
    return built
