"""Which host directories a local kernel runs from: its interpreter's prefixes, its virtualenv and
the pixelbox package.

A local kernel (as root) gets a private ``/tmp`` (:mod:`pixelbox.contract.confine`), which hides the
host's. A checkout or virtualenv under ``/tmp`` (CI may check out anywhere) would then vanish
under the kernel: its interpreter or ``pixelbox.kernel`` could not be found. The confinement binds
these directories back, read-only, and only these: nothing else of the host's ``/tmp`` shows.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pixelbox

VENV_CONFIG = "pyvenv.cfg"


@functools.lru_cache(maxsize=8)
def kernel_dirs(python: str) -> tuple[str, ...]:
    """The directories a kernel run by ``python`` reads its interpreter and ``pixelbox`` from.

    ``python``'s prefixes are read off its path (``<venv>/bin/python`` with ``<venv>/pyvenv.cfg``
    naming the base installation's ``home``, and the installation the resolved executable sits in).
    The package is this process's ``pixelbox`` (the kernel runs the host's version: the ready check
    refuses any other), and this process's own prefixes come too: another interpreter running the
    host's ``pixelbox`` finds it, and what it imports, through them.
    """
    dirs = {*_path_prefixes(python), str(Path(pixelbox.__file__).resolve().parent)}
    dirs |= {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    return tuple(sorted(dirs))


def _path_prefixes(python: str) -> set[str]:
    """The virtualenv and installation prefixes ``python``'s path implies."""
    executable = Path(python).absolute()
    prefixes = {str(executable.resolve().parent.parent)}
    venv = executable.parent.parent
    config = venv / VENV_CONFIG
    if config.is_file():
        prefixes.add(str(venv))
        home = _venv_home(config)
        if home is not None:
            prefixes.add(str(Path(home).resolve().parent))
    return prefixes


def _venv_home(config: Path) -> str | None:
    """The ``home`` (the base interpreter's directory) a ``pyvenv.cfg`` names, if any."""
    try:
        lines = config.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home" and value.strip():
            return value.strip()
    return None
