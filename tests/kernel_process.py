"""A pixelbox kernel started directly with ``python -m pixelbox.kernel``, for protocol-level tests.

No sandbox and no runtime: the test writes the connection file and the kernel config itself and
talks to the kernel over the Jupyter protocol, checking the host/kernel contract on its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.connect import write_connection_file

from pixelbox.contract.config import KernelConfig


@contextmanager
def running_kernel(ipc: Path, config: KernelConfig, log_path: Path) -> Iterator[BlockingKernelClient]:
    """Start a kernel on IPC sockets in ``ipc`` with ``config``; yield a ready client; shut it down."""
    write_connection_file(str(ipc / "kernel.json"), transport="ipc", ip=str(ipc / "k"))
    (ipc / "config.json").write_text(config.to_json())
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pixelbox.kernel", "--ipc-dir", str(ipc)], stdout=log, stderr=log
        )
        deadline = time.monotonic() + 60
        while not (ipc / "ready.json").exists():
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        assert json.loads((ipc / "ready.json").read_text())["problems"] == []
        client = BlockingKernelClient()
        client.load_connection_file(str(ipc / "kernel.json"))
        client.start_channels()
        client.wait_for_ready(timeout=60)
        try:
            yield client
        finally:
            client.shutdown()
            client.stop_channels()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
