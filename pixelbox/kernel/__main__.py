"""Kernel entry point: ``python -m pixelbox.kernel --ipc-dir DIR``.

The host writes ``DIR/kernel.json`` (a Jupyter connection file using the ``ipc`` transport,
so no network interface is needed) and ``DIR/config.json`` (see :mod:`pixelbox.contract.config`).
This module starts ipykernel on those sockets, installs the in-kernel layers (policy, image
I/O, recorder) that the config enables, then writes ``DIR/ready.json`` so the host knows the
kernel is listening and which pixelbox version it runs. The work is done by
:func:`pixelbox.kernel.fresh.serve`, which kernels forked from the zygote run too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pixelbox.kernel.fresh import serve, without_debugger


def main(argv: list[str] | None = None) -> None:
    """Start the kernel described by the files in ``--ipc-dir`` and serve until shutdown."""
    parser = argparse.ArgumentParser(prog="python -m pixelbox.kernel")
    parser.add_argument("--ipc-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    without_debugger()
    serve(args.ipc_dir)


if __name__ == "__main__":
    main()
