"""Kernels restored from a runsc checkpoint (``PIXELBOX_RUNSC_RESTORE=1``) are as clean and isolated as cold ones.

Real gVisor containers throughout, driven by runsc directly from a checkpoint this process takes
after the kernel's imports. The probes are the local fast path's (tests/runtime/test_fresh.py):
what one sandbox did is never visible to the next, every random source differs, the host's
environment never arrives; and the restored kernel behaves as a container kernel must (interrupt,
crash reasons, limits, cleanup of everything it ran).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pixelbox.runtime import Sandbox
from pixelbox.runtime.backends import restore
from pixelbox.runtime.errors import BackendUnavailable
from tests.conftest import require_backend
from tests.runtime.test_fresh import DIRTY, PROBE, RANDOMS, _clean, _run


@pytest.fixture(scope="module")
def runsc_restore() -> Iterator[dict[str, Any]]:
    """Options of a runsc sandbox with the restore path switched on for this module."""
    options = {**require_backend("runsc"), "policy": False, "timeout": 60}
    try:
        restore.check_available()
    except BackendUnavailable as exc:
        pytest.skip(str(exc))
    with pytest.MonkeyPatch.context() as env:
        env.setenv(restore.ENABLE_VARIABLE, "1")
        yield options


def _fresh(options: dict[str, Any], **extra: Any) -> Sandbox:
    sb = Sandbox(**{**options, **extra})
    assert sb.start_path == "fast", sb.info.kernel
    return sb


def test_a_restored_kernel_is_a_confined_container(runsc_restore: dict[str, Any]) -> None:
    """The fast path is taken, the kernel runs as uid 1000 with no network interface but loopback,
    and its container is gone from runsc (and its cgroup from the host) once the sandbox closes."""
    with _fresh(runsc_restore) as sb:
        info = sb.info
        container = info.isolation["container_id"]
        assert container.startswith(sb.layout.root.name)
        assert container in restore.restore_ids()
        assert info.isolation["network_isolated"] is True
        assert info.kernel["uid"] == 1000
        probe = "import os, socket\nprint(os.getuid(), sorted(n for _, n in socket.if_nameindex()), os.getcwd())"
        assert _run(sb, probe).split(" ", 1)[0] == "1000"
        assert "/workspace" in _run(sb, "import os\nprint(os.getcwd())")
        assert float(sb.kernel_cpu_seconds() or 0) > 0
    assert container not in restore.restore_ids()


def test_nothing_of_one_restored_sandbox_reaches_the_next(
    runsc_restore: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Variables, workspace, /tmp and /dev/shm files, environment and patched modules of A are
    invisible to B (while A runs and after it closed); the host's environment never arrives."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-of-the-restore-tests")
    first = _fresh(runsc_restore, env={"ONLY_A": "sandbox-a-option-secret"})
    try:
        _run(first, DIRTY)
        assert _run(first, "import os\nprint(os.environ['ONLY_A'])").strip() == "sandbox-a-option-secret"
        with _fresh(runsc_restore) as during:
            _clean(json.loads(_run(during, PROBE)))
    finally:
        first.close()
    with _fresh(runsc_restore) as after:
        _clean(json.loads(_run(after, PROBE)))
        assert _run(after, "import os\nprint(os.environ.get('OPENAI_API_KEY'))") == "None\n"


def test_random_state_and_keys_differ_between_restored_sandboxes(runsc_restore: dict[str, Any]) -> None:
    """Every random source is reseeded after the restore, and each sandbox has its own HMAC key."""
    draws, keys = [], []
    for _ in range(3):
        with _fresh(runsc_restore) as sb:
            draws.append(json.loads(_run(sb, RANDOMS)))
            keys.append(sb.connection_info["key"])
    for source in draws[0]:
        values = [d[source] for d in draws]
        assert len(set(values)) == len(values), f"{source} repeated across restored sandboxes: {values}"
    assert len(set(keys)) == len(keys)


def test_interrupt_and_crash_reasons_of_a_restored_kernel(runsc_restore: dict[str, Any]) -> None:
    """A runaway cell is interrupted at its deadline (state kept); a kernel that exits or dies of a
    signal is reported as a cold container kernel is, and the next execution gets a fresh one."""
    with _fresh(runsc_restore) as sb:
        _run(sb, "kept = 41")
        spin = sb.execute("while True:\n    pass", timeout=3)
        assert spin.status == "timeout", (spin.status, spin.stderr)
        assert _run(sb, "print(kept + 1)").strip() == "42"
        exited = sb.execute("import os\nos._exit(3)")
        assert exited.status == "crashed" and exited.crash_reason == "exited with code 3", exited.crash_reason
        assert _run(sb, "print('again')").strip() == "again"
        assert sb.start_path == "fast"
        killed = sb.execute("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
        assert killed.status == "crashed" and "signal 11" in str(killed.crash_reason), killed.crash_reason


def test_memory_limit_holds_in_a_restored_kernel(runsc_restore: dict[str, Any]) -> None:
    """The restore bundle's memory limit is in force: a cell that allocates past it does not finish."""
    with _fresh(runsc_restore, memory="256m") as sb:
        bomb = sb.execute("b = bytearray(1024 * 1024 * 1024)\nprint('allocated')", timeout=60)
        assert "allocated" not in bomb.stdout, (bomb.status, bomb.crash_reason, bomb.error)
