"""Kernel faults: the kernel exits, crashes, stops, ignores signals, recurses or waits for
input. Each ends as a clear status (``crashed`` with its reason, ``timeout`` with what the
deadline did, or ``error``), and the next cell runs, on a fresh kernel when the old one was
lost, with ``state_lost`` said out loud. Host-side faults (the container killed or paused,
the kernel process killed) are injected from the test while a cell runs.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time

from tests.hardening.support import BUSY_S, Target, assert_contained, assert_replaced, container_fault, message

DENIED_OS = r"PolicyViolation|denied-os-function|denied-module|no-native-code"


def _crash_case(target: Target, code: str, reason: str) -> None:
    target.run("before = 1")
    result = target.run(code, timeout=30)
    if target.policy:
        assert_contained(result, DENIED_OS)
        assert target.run("print(before)").stdout == "1\n", "a refused cell must not cost the state"
        return
    assert result.status == "crashed", message(result)
    assert result.crash_reason == reason, message(result)
    assert "state was lost" in result.notices[0]
    assert_replaced(result, target)
    assert target.run("before").status == "error", "variables cannot survive a crash"


def test_kernel_kills_itself_with_sigkill(target: Target) -> None:
    _crash_case(target, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "killed by signal 9 (SIGKILL)")


def test_kernel_aborts(target: Target) -> None:
    _crash_case(target, "import os\nos.abort()", "killed by signal 6 (SIGABRT)")


def test_segfault_through_ctypes(target: Target) -> None:
    _crash_case(target, "import ctypes\nctypes.string_at(0)", "killed by signal 11 (SIGSEGV)")


def test_native_crash_the_policy_cannot_see(target: Target) -> None:
    """numpy's as_strided reads wild memory from an allowed library: the OS contains it."""
    code = (
        "import numpy as np\n"
        "v = np.lib.stride_tricks.as_strided(np.zeros(1), shape=(10**9,), strides=(10**7,))\nv.sum()"
    )
    result = target.run(code, timeout=BUSY_S)
    assert result.status == "crashed", message(result)
    assert result.crash_reason == "killed by signal 11 (SIGSEGV)"
    assert_replaced(result, target)


def test_c_stack_overflow(target: Target) -> None:
    code = "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1)\nf(0)"
    result = target.run(code, timeout=30)
    if target.policy:
        assert_contained(result, r"denied-module")
        return
    assert result.status == "crashed", message(result)
    # 3.11 keeps Python frames on the heap, so the memory limit may strike before the C stack
    assert result.crash_reason and re.search(r"SIGSEGV|OOM-killed", result.crash_reason), message(result)
    assert_replaced(result, target)


def test_signal_handlers_ignore_sigint_and_sigterm_and_block_them(target: Target) -> None:
    code = """
    import signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    time.sleep(600)
    """
    result = target.run(code)
    if target.policy:
        assert_contained(result, r"denied-module")
        return
    assert result.status == "timeout", message(result)
    assert "ignored the interrupt" in result.notices[0]
    assert_replaced(result, target)


def test_kernel_stops_itself(target: Target) -> None:
    result = target.run("import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)")
    if target.policy:
        assert_contained(result, DENIED_OS)
        return
    assert result.status == "timeout", message(result)
    assert_replaced(result, target)


def test_sys_exit_and_system_exit(target: Target) -> None:
    target.run("kept = 5")
    raised = target.run("raise SystemExit(3)")
    assert raised.status == "error" and raised.error is not None and raised.error.ename == "SystemExit"
    exited = target.run("import sys\nsys.exit('bye')")
    if target.policy:
        assert_contained(exited, r"denied-module")
    else:
        assert exited.status == "error" and exited.error is not None and exited.error.ename == "SystemExit"
    assert target.run("print(kept)").stdout == "5\n", "SystemExit must not end the kernel"


def test_swallowed_interrupt_and_endless_finally(target: Target) -> None:
    for code in (
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
        "try:\n    while True:\n        pass\nfinally:\n    while True:\n        pass",
    ):
        result = target.run(code)
        assert result.status == "timeout", message(result)
        assert "all variables were lost" in result.notices[0]
        assert_replaced(result, target)


def test_infinite_recursion_and_deep_structures(target: Target) -> None:
    target.run("kept = 'yes'")
    recursion = target.run("def f(n):\n    return f(n + 1)\nf(0)", timeout=BUSY_S)
    assert recursion.status == "error" and recursion.error is not None
    assert recursion.error.ename == "RecursionError"
    nested = target.run("a = []\nfor i in range(1000000):\n    a = [a]\nprint(len(repr(a)))", timeout=BUSY_S)
    assert nested.status == "error" and nested.error is not None and nested.error.ename == "RecursionError"
    assert target.run("print(kept)").stdout == "yes\n"


def test_waiting_for_input(target: Target) -> None:
    cases = ["input('name? ')", "import getpass\ngetpass.getpass()", "import sys\nprint(repr(sys.stdin.readline()))"]
    for code in cases:
        result = target.run(code)
        assert result.status in ("error", "ok"), message(result)
        if result.status == "ok":  # stdin is empty, never a terminal: reads end at once
            assert result.stdout == "''\n", message(result)
        else:
            assert result.error is not None
            assert result.error.ename in ("StdinNotImplementedError", "PolicyViolation", "EOFError", "OSError"), (
                message(result)
            )


def test_exception_whose_message_never_ends(target: Target) -> None:
    code = "class Endless(Exception):\n    def __str__(self):\n        while True:\n            pass\nraise Endless()"
    result = target.run(code)
    assert result.status == "timeout", message(result)
    if result.state_lost:
        assert_replaced(result, target)


def _inject(after: float, action: object) -> threading.Thread:
    def run() -> None:
        time.sleep(after)
        action()  # type: ignore[operator]

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_kernel_killed_from_the_host_mid_execution(target: Target) -> None:
    """Fault injection: the container (``docker kill``) or kernel process dies under a cell."""
    target.run("before = 1")
    if target.docker:
        container = target.sb.info.isolation["container_id"]
        thread = _inject(1.0, lambda: container_fault(container, "kill"))
    else:
        pid = target.sb.info.kernel["pid"]
        thread = _inject(1.0, lambda: os.kill(pid, signal.SIGKILL))
    result = target.run("import time\ntime.sleep(20)", timeout=30)
    thread.join()
    assert result.status == "crashed", message(result)
    assert result.crash_reason and "SIGKILL" in result.crash_reason, message(result)
    assert_replaced(result, target)


def test_kernel_frozen_from_the_host_mid_execution(target: Target) -> None:
    """Fault injection: ``docker pause`` (cgroup freezer) or SIGSTOP on the kernel process."""
    if target.docker:
        container = target.sb.info.isolation["container_id"]
        thread = _inject(0.5, lambda: container_fault(container, "pause"))
    else:
        pid = target.sb.info.kernel["pid"]
        thread = _inject(0.5, lambda: os.kill(pid, signal.SIGSTOP))
    result = target.run("import time\nfor i in range(100):\n    time.sleep(0.1)")
    thread.join()
    assert result.status == "timeout", message(result)
    assert "deadline" in result.notices[0], message(result)
    if result.state_lost:  # still frozen after the grace: replaced
        assert "ignored the interrupt" in result.notices[0]
        assert_replaced(result, target)
    else:  # the engine thawed it to deliver the interrupt (docker kill on a paused container)
        assert result.error is not None and result.error.ename == "KeyboardInterrupt", message(result)
