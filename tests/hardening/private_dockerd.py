"""A Docker engine of the test's own, so that restarting "the engine" disturbs no neighbour.

The machine's dockerd is shared by every test session and sandbox on it; restarting it stops
everyone's containers. :class:`PrivateDockerd` runs a second ``dockerd`` with nothing shared:
its own socket, data root, exec root (and so its own containerd), pid file and config, and no
networking of its own (no iptables rules, no bridge, no IP forwarding), so starting, restarting
and stopping it touches only the containers it runs. The kernel image is copied in with
``docker save | docker load``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

START_WAIT_S = 120.0
STOP_WAIT_S = 60.0


class PrivateDockerd:
    """One private engine under a short directory of its own (Unix socket paths are capped at 108 bytes)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="pbxd-", dir="/tmp"))
        self.socket = self.root / "docker.sock"
        self.pidfile = self.root / "docker.pid"
        (self.root / "daemon.json").write_text(json.dumps({}))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def host(self) -> str:
        """The ``DOCKER_HOST`` that names this engine."""
        return f"unix://{self.socket}"

    def command(self) -> list[str]:
        return [
            shutil.which("dockerd") or "dockerd",
            f"--host={self.host}",
            f"--data-root={self.root / 'data'}",
            f"--exec-root={self.root / 'exec'}",
            f"--pidfile={self.pidfile}",
            f"--config-file={self.root / 'daemon.json'}",
            "--iptables=false",
            "--ip6tables=false",
            "--ip-forward=false",
            "--ip-masq=false",
            "--bridge=none",
            "--userland-proxy=false",
        ]

    def start(self) -> None:
        """Start the engine and wait until it answers on its socket."""
        log = open(self.root / "dockerd.log", "ab")  # noqa: SIM115 - the engine writes it while it runs
        self.process = subprocess.Popen(self.command(), stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_WAIT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the private dockerd exited: {self.log_tail()}")
            if self._answers():
                return
            time.sleep(0.2)
        raise RuntimeError(f"the private dockerd did not answer within {START_WAIT_S:g} s: {self.log_tail()}")

    def _answers(self) -> bool:
        done = subprocess.run(["docker", "-H", self.host, "version"], capture_output=True, timeout=30)
        return done.returncode == 0

    def stop(self) -> None:
        """Stop the engine as a host shutdown would (SIGTERM: it stops its containers on the way down)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_WAIT_S)

    def restart(self) -> None:
        """Stop the engine and start it again with the same configuration and data."""
        self.stop()
        self.start()

    def load_image(self, image: str) -> None:
        """Copy ``image`` from the machine's engine into this one."""
        save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        loaded = subprocess.run(
            ["docker", "-H", self.host, "load"], stdin=save.stdout, capture_output=True, timeout=600
        )
        assert save.stdout is not None
        save.stdout.close()
        assert save.wait(timeout=600) == 0 and loaded.returncode == 0, loaded.stderr.decode(errors="replace")

    def log_tail(self) -> str:
        path = self.root / "dockerd.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def remove(self) -> None:
        """Stop the engine (its containers with it) and delete its directory."""
        from pixelbox.runtime.mounts import mounts_under, unmount

        self.stop()
        for point in sorted(mounts_under(f"{self.root}/"), reverse=True):
            unmount(Path(point))
        shutil.rmtree(self.root, ignore_errors=True)
