"""Faults around a sandbox's life: what a hostile kernel leaves behind for close() and the
pool to clean (deep trees, daemons, a wedged output channel), checked for leaks each time.
"""

from __future__ import annotations

import pytest

from pixelbox.runtime import Sandbox, SandboxPool
from tests.hardening.conftest import assert_gone, leftovers_of
from tests.hardening.support import LIMITS, Target, message


def test_deeply_nested_workspace_is_removed_on_close(backend: dict[str, object]) -> None:
    """shutil.rmtree recurses per level; 3,000 levels used to leave the workspace behind."""
    sb = Sandbox(**{**LIMITS, **backend})
    try:
        made = sb.execute("import os\nfor i in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\nos.chdir('/tmp')")
        assert made.status == "ok", made.error
        evidence = leftovers_of(sb)
    finally:
        sb.close()
    assert_gone(evidence)


def test_daemon_started_by_the_kernel_dies_with_the_sandbox(backend: dict[str, object]) -> None:
    """A double-forked, setsid'ed sleeper must not outlive close() (container or uid sweep)."""
    sb = Sandbox(**{**LIMITS, **backend, "policy": False})
    try:
        code = (
            "import os, time\n"
            "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(600)\n    os._exit(0)\n"
            "time.sleep(0.3)\nprint('daemon started')"
        )
        result = sb.execute(code)
        assert result.stdout == "daemon started\n", result
        evidence = leftovers_of(sb)
    finally:
        sb.close()
    assert_gone(evidence)


def test_pool_recycles_crashed_and_poisoned_sandboxes(backend: dict[str, object]) -> None:
    seen = []
    with SandboxPool(1, **{**LIMITS, **backend}) as pool:
        for code in ("import os\nos.abort()", "import numpy as np\nb = np.ones((1024, 1024, 1024), dtype=np.uint8)"):
            with pool.sandbox(timeout=120) as sb:
                seen.append(leftovers_of(sb))
                result = sb.execute(code, timeout=60)  # the deadline is not under test (a busy host is slow)
                assert result.status in ("crashed", "error"), result
            with pool.sandbox(timeout=120) as sb:
                fresh = sb.execute("print('fresh')")
                assert fresh.status == "ok" and not fresh.state_lost, fresh
                seen.append(leftovers_of(sb))
    for evidence in seen:
        assert_gone(evidence)


def test_closing_the_kernels_own_stdout(target: Target, request: pytest.FixtureRequest) -> None:
    """``sys.stdout.close()`` must not wedge the kernel: before the next cell the kernel's own
    output streams are restored (``pixelbox/kernel/streams.py``) and the agent is told."""
    try:
        result = target.run("import sys\nsys.stdout.close()\nsys.stderr.close()")
        if target.policy:
            assert result.error is not None and "denied-module" in result.error.evalue
        after = target.run("print('still talking')")
        assert after.stdout == "still talking\n" or after.state_lost, message(after)
    finally:
        if not target.policy:
            target.sb.restart()
