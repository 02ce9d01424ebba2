"""Deadlines and crashes: nothing hangs past timeout + grace, and a dead kernel is replaced."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from pixelbox.runtime import Sandbox
from pixelbox.runtime.backends.docker import BACKSTOP_MARGIN, DockerBackend, DockerHandle

TIMEOUT = 1.5
GRACE = 1.0
SLACK = 1.0
"""Allowance for the host's own bookkeeping (reading the last messages, scheduling on a loaded
2-core machine); a stuck kernel is stopped in the background, so replacing it is not included."""

STUCK = {
    "busy_loop": "while True:\n    pass",
    "sleep": "import time\ntime.sleep(10**6)",
    "ignores_sigint": (
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.01)"
    ),
    "swallows_interrupt": (
        "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass"
    ),
    "long_numpy": "import numpy as np\na = np.random.rand(3000, 3000)\nfor _ in range(1000):\n    a = a @ a.T / 3000",
}


@pytest.mark.parametrize("case", list(STUCK))
def test_stuck_code_ends_within_deadline_and_next_execute_works(backend: dict[str, Any], case: str) -> None:
    with Sandbox(policy=False, timeout=TIMEOUT, grace=GRACE, **backend) as sb:
        sb.execute("marker = 'kept'")
        started = time.monotonic()
        result = sb.execute(STUCK[case])
        elapsed = time.monotonic() - started
        assert result.status == "timeout", result
        assert elapsed < TIMEOUT + GRACE + SLACK
        assert result.notices and "deadline" in result.notices[0]
        after = sb.execute("print('alive')")
        assert after.status == "ok" and after.stdout == "alive\n"
        survived = sb.execute("print(marker)")
        if result.state_lost:
            assert result.restarted and after.restarted and survived.status == "error"
            assert "next execution" in result.notices[0]
        else:
            assert survived.stdout == "kept\n"


def test_interruptible_code_keeps_state(backend: dict[str, Any]) -> None:
    with Sandbox(timeout=TIMEOUT, grace=GRACE, **backend) as sb:
        sb.execute("kept = 7")
        result = sb.execute("while True:\n    pass")
        assert result.status == "timeout" and not result.state_lost
        assert result.error is not None and result.error.ename == "KeyboardInterrupt"
        assert sb.execute("kept").text == "7"


def test_os_exit_is_a_crash_then_a_fresh_kernel(backend: dict[str, Any]) -> None:
    with Sandbox(policy=False, **backend) as sb:
        sb.execute("gone = 1")
        started = time.monotonic()
        result = sb.execute("import os\nos._exit(3)", timeout=60)
        assert time.monotonic() - started < 10, "death must be noticed at once, not at the deadline"
        assert result.status == "crashed"
        assert result.crash_reason == "exited with code 3"
        assert result.state_lost
        after = sb.execute("print('fresh')")
        assert after.status == "ok" and after.stdout == "fresh\n"
        assert after.restarted and after.state_lost
        assert sb.execute("gone").status == "error"


def test_segfault_is_a_crash_with_its_signal(backend: dict[str, Any]) -> None:
    with Sandbox(policy=False, **backend) as sb:
        result = sb.execute("import ctypes\nctypes.string_at(0)", timeout=60)
        assert result.status == "crashed"
        assert result.crash_reason is not None and "SIGSEGV" in result.crash_reason
        assert sb.execute("1").status == "ok"


def test_memory_bomb_is_contained(backend: dict[str, Any]) -> None:
    with Sandbox(policy=False, memory="400m", **backend) as sb:
        result = sb.execute("chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))", timeout=60)
        if backend["backend"] == "docker" or sb.info.isolation["memory_limit"].startswith("cgroup"):
            assert result.status == "crashed", result
            assert result.crash_reason is not None and result.crash_reason.startswith("OOM-killed")
        else:  # a host without cgroups: the address-space rlimit turns the bomb into MemoryError
            assert result.status == "error" and result.error is not None
            assert result.error.ename == "MemoryError"
        assert sb.execute("print('after bomb')").stdout == "after bomb\n"


def test_container_oom_kill_is_recorded_by_pixelbox_group(docker_backend: dict[str, Any]) -> None:
    """The engine's OOMKilled flag can miss a kill (gVisor on a busy host); pixelbox's group cannot.

    The container runs inside a pixelbox cgroup that holds the memory limit and outlives it,
    so the kill is read from there, even when the engine says there was none; a plain SIGKILL
    in the same setup is not taken for one.
    """
    if not DockerBackend(docker_backend["runtime"]).memory_groups:
        pytest.skip("pixelbox groups need root, Docker's cgroupfs driver and an engine on this host")
    # a Docker container (fast_start off: under runsc the fast path restores outside Docker)
    with Sandbox(policy=False, memory="400m", fast_start=False, **docker_backend) as sb:
        assert sb.info.isolation["memory_limit"].startswith("pixelbox cgroup"), sb.info.isolation
        handle = sb._handle
        assert isinstance(handle, DockerHandle) and handle.group is not None
        assert handle.container.attrs["HostConfig"]["Memory"] == 400 * 1024**2 + BACKSTOP_MARGIN
        result = sb.execute("import numpy as np\nblock = np.ones((1024, 1024, 1024), dtype=np.uint8)", timeout=60)
        assert result.status == "crashed" and (result.crash_reason or "").startswith("OOM-killed"), result
        handle._reason, handle.container = None, _EngineMissedTheKill(handle.container)
        reason = handle.exit_reason()
        assert reason.startswith("OOM-killed") and "(memory limit 400 MiB)" in reason, reason
        killed = sb.execute("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", timeout=60)
        assert killed.crash_reason == "killed by signal 9 (SIGKILL)", killed
        assert sb.execute("print('after')").stdout == "after\n"


class _EngineMissedTheKill:
    """A real container whose engine state says "not OOM-killed", as the shim sometimes reports."""

    def __init__(self, container: Any) -> None:
        self._container = container
        self.attrs: dict[str, Any] = {}

    def reload(self) -> None:
        self._container.reload()
        self.attrs = {**self._container.attrs, "State": {**self._container.attrs["State"], "OOMKilled": False}}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._container, name)


def _cpu_stat(sb: Sandbox) -> Path:
    """The host-side cpu.stat of the sandbox's CPU cgroup (cgroup v1 layout)."""
    isolation = sb.info.isolation
    if isolation["container"]:
        parent = isolation["cgroup_parent"] if isolation["cgroup_parent"].startswith("/") else "/docker"
        return Path(f"/sys/fs/cgroup/cpu{parent}", isolation["container_id"], "cpu.stat")
    return Path("/sys/fs/cgroup/cpu/pixelbox", sb.layout.root.name, "cpu.stat")


def test_cpu_limit_applies(backend: dict[str, Any]) -> None:
    """Checked from the host and from inside: the kernel's CPU cgroup holds a quota of half a CPU
    (``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``), and a busy loop gets at most about that share.

    The share is an upper bound, so it holds on a busy host too (where the loop gets even less);
    counting throttled periods would not, since a group starved by others never reaches its quota.
    """
    with Sandbox(cpus=0.5, **backend) as sb:
        stat = _cpu_stat(sb)
        if not stat.exists():
            pytest.skip(f"no cgroup v1 cpu controller for this sandbox at {stat}")
        quota = int((stat.parent / "cpu.cfs_quota_us").read_text())
        period = int((stat.parent / "cpu.cfs_period_us").read_text())
        assert quota / period == pytest.approx(0.5), (quota, period)
        usage = Path(str(stat.parent).replace("/sys/fs/cgroup/cpu/", "/sys/fs/cgroup/cpuacct/", 1), "cpuacct.usage")
        share = _busy_share(sb, usage)
        assert share <= 0.5 * 1.3, f"the sandbox used {share:.2f} of a CPU under a 0.5 limit"


def _busy_share(sb: Sandbox, usage: Path) -> float:
    """The share of a CPU a 2 s busy loop got: from the group's ``cpuacct.usage`` on the host where the
    group has one (gVisor's own clocks do not see the host's throttling), else the kernel's CPU time."""
    code = (
        "import time\nw, c = time.monotonic(), time.process_time()\n"
        "while time.monotonic() - w < 2.0:\n    pass\n"
        "print((time.process_time() - c) / (time.monotonic() - w))"
    )
    if not usage.exists():
        spin = sb.execute(code, timeout=120)
        assert spin.status == "ok", spin
        return float(spin.stdout)
    used, began = int(usage.read_text()), time.monotonic()
    spin = sb.execute(code, timeout=120)
    assert spin.status == "ok", spin
    return (int(usage.read_text()) - used) / 1e9 / (time.monotonic() - began)


def test_fork_bomb_is_contained_by_pids_limit(backend: dict[str, Any]) -> None:
    code = (
        "import os\nstarted = 0\nerror = None\n"
        "try:\n    for _ in range(2000):\n        if os.fork() == 0:\n            import time\n"
        "            time.sleep(30)\n            os._exit(0)\n        started += 1\n"
        "except OSError as exc:\n    error = type(exc).__name__\n"
        "print(started, error)"
    )
    with Sandbox(policy=False, pids=64, **backend) as sb:
        result = sb.execute(code, timeout=60)
        if backend.get("runtime") == "runsc" and result.status == "crashed":
            # gVisor maps guest tasks onto host threads of its sentry: hitting the pids limit
            # takes the whole sandbox down rather than failing fork() (see docs/security.md).
            assert result.crash_reason
        else:
            assert result.status == "ok", result
            started, error = result.stdout.split()
            assert int(started) < 64
            assert error in ("BlockingIOError", "OSError", "PermissionError")
        assert sb.execute("print('usable')").stdout == "usable\n"
    # closing the sandbox must also reap the sleeping children (checked by the session leak test)
