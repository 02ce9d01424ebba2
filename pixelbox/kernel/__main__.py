"""Kernel entry point: ``python -m pixelbox.kernel --ipc-dir DIR``.

The host writes ``DIR/kernel.json`` (a Jupyter connection file using the ``ipc`` transport,
so no network interface is needed) and ``DIR/config.json`` (see :mod:`pixelbox.contract.config`).
This module starts ipykernel on those sockets, installs the in-kernel layers (policy, image
I/O, recorder) that the config enables, then writes ``DIR/ready.json`` so the host knows the
kernel is listening and which pixelbox version it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from pathlib import Path

from pixelbox import __version__
from pixelbox.contract.config import load_config
from pixelbox.contract.wire import CONFIG_FILE, CONNECTION_FILE, KERNEL_PROTOCOL, READY_FILE
from pixelbox.kernel.plugins import install_plugins


def _write_ready(ipc_dir: Path, problems: list[str]) -> None:
    """Atomically publish the readiness record the host polls for."""
    record = {
        "version": __version__,
        "protocol": KERNEL_PROTOCOL,
        "pid": os.getpid(),
        "uid": os.getuid(),
        "python": sys.version.split()[0],
        "interfaces": sorted(name for _, name in socket.if_nameindex()),
        "problems": problems,
    }
    tmp = ipc_dir / f"{READY_FILE}.tmp"
    tmp.write_text(json.dumps(record))
    tmp.replace(ipc_dir / READY_FILE)


def _without_debugger() -> None:
    """Keep ipykernel from loading debugpy, so the kernel offers no debugger.

    The host never sends debug requests, a debugger is one more way into the kernel's
    internals, and importing debugpy is about a fifth of kernel start (0.25-0.3 s under
    gVisor). ipykernel treats the failed import as "debugpy not installed".
    """
    sys.modules["debugpy"] = None  # type: ignore[assignment]


def main(argv: list[str] | None = None) -> None:
    """Start the kernel described by the files in ``--ipc-dir`` and serve until shutdown."""
    parser = argparse.ArgumentParser(prog="python -m pixelbox.kernel")
    parser.add_argument("--ipc-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    ipc_dir: Path = args.ipc_dir
    config = load_config(ipc_dir / CONFIG_FILE)
    os.chdir(config.workspace)
    _without_debugger()

    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize(
        [
            "-f",
            str(ipc_dir / CONNECTION_FILE),
            "--IPKernelApp.no_stdout=False",
            "--InteractiveShell.colors=nocolor",
            "--InteractiveShell.xmode=Plain",
            "--HistoryManager.enabled=False",
            "--Session.packer=pixelbox.kernel.channel.pack_message",
        ]
    )
    problems = install_plugins(app.shell, config)
    _write_ready(ipc_dir, problems)
    app.start()


if __name__ == "__main__":
    main()
