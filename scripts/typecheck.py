"""Type-check pixelbox as it is installed, with mypy seeing the real modules.

pyproject's ``package-dir`` installs ``runtime/``, ``tracer/``, ``harness/`` and ``images/`` as
``pixelbox.runtime``, ``pixelbox.tracer``, ``pixelbox.harness`` and ``pixelbox.images``. mypy maps
module names to files by directory, so in this checkout (laid out as the design card asks) it
cannot find those subpackages, and with missing imports ignored every use of them would be
``Any``. This script builds a link tree laid out as installed (``.typecheck/pixelbox/``: every
entry of ``pixelbox/`` linked, and each mapped subpackage linked to its real directory), runs mypy
on it with pyproject's settings, and prints mypy's messages with the checkout's own paths.

Usage: ``python scripts/typecheck.py [EXTRA_FILE ...]`` (``make lint`` runs it). Extra files are
checked together with the package (``tests/test_typecheck.py`` passes one holding a wrong call).
Exit status: mypy's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / ".typecheck"
PACKAGE = "pixelbox"


def package_dirs() -> dict[str, str]:
    """Subpackage name -> checkout directory, from pyproject's ``package-dir`` (``runtime`` -> ``runtime``)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    prefix = f"{PACKAGE}."
    return {name.removeprefix(prefix): path for name, path in mapping.items() if name.startswith(prefix)}


def _link(target: Path, link: Path) -> None:
    if link.is_symlink() and os.readlink(link) == str(target):
        return
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def build_tree() -> Path:
    """``.typecheck/pixelbox`` as installed; stale links are replaced, nothing else is touched."""
    top = TREE / PACKAGE
    top.mkdir(parents=True, exist_ok=True)
    wanted = {entry.name: entry for entry in (ROOT / PACKAGE).iterdir() if entry.name != "__pycache__"}
    wanted.update({name: ROOT / path for name, path in package_dirs().items()})
    for existing in top.iterdir():
        if existing.name not in wanted:
            existing.unlink()
    for name, target in wanted.items():
        _link(target, top / name)
    return top


def real_path(line: str) -> str:
    """A mypy message with the link tree's path (``pixelbox/runtime/x.py``) as the checkout's (``runtime/x.py``)."""
    for name, path in package_dirs().items():
        line = re.sub(rf"^{PACKAGE}/{re.escape(name)}/", f"{path}/", line)
    return line


def run(extra: list[str]) -> int:
    """Run mypy over the tree (and ``extra`` files); print its report with real paths; return its status."""
    build_tree()
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), PACKAGE]
    command += [str(Path(f).resolve()) for f in extra]
    result = subprocess.run(command, cwd=TREE, capture_output=True, text=True, check=False)
    for line in (result.stdout + result.stderr).splitlines():
        print(real_path(line))
    return result.returncode


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
