"""The subreaper supervisor adopts what its commands leave running, reaps it at once, and kills only that.

A real supervisor process throughout: a command that leaves a detached grandchild behind (as
``runsc restore --detach`` leaves its sandbox) must find it adopted by the supervisor, not by PID 1;
the supervisor kills and reaps it on request, and refuses a pid that is not its adopted child with
the given tag (another process, or a pid reused since).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pixelbox.runtime.backends.subreaper import Subreaper


@pytest.fixture
def reaper() -> Iterator[Subreaper]:
    subreaper = Subreaper()
    yield subreaper
    pid = subreaper.pid()
    if pid is not None:
        os.kill(pid, 9)


def _parent(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next(int(line.split()[1]) for line in text.splitlines() if line.startswith("PPid:"))


def _detached(reaper: Subreaper, tmp_path: Path, tag: str) -> int:
    """Run a command that leaves ``sleep`` running with ``tag`` in its command line; the sleeper's pid."""
    pid_file = tmp_path / f"{tag}.pid"
    script = f"sh -c 'while :; do sleep 1; done' {tag} & echo $! > {pid_file}"
    assert reaper.run(["/bin/sh", "-c", script], str(tmp_path / "log"), timeout=30) == 0
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while tag not in _command(pid) and time.monotonic() < deadline:  # the sleeper's shell has exec'd
        time.sleep(0.01)
    return pid


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_a_detached_grandchild_is_adopted_and_reaped_on_request(reaper: Subreaper, tmp_path: Path) -> None:
    orphan = _detached(reaper, tmp_path, "pbx-subreaper-test-a")
    assert _parent(orphan) == reaper.pid()
    assert reaper.kill_children([orphan], "pbx-subreaper-test-a", timeout=30) is True
    assert _parent(orphan) is None  # killed and reaped: no zombie left


def test_only_adopted_children_with_the_tag_are_killed(reaper: Subreaper, tmp_path: Path) -> None:
    orphan = _detached(reaper, tmp_path, "pbx-subreaper-test-b")
    stranger = subprocess.Popen(["sleep", "300"])
    try:
        assert reaper.kill_children([orphan], "pbx-subreaper-test-other", timeout=30) is False
        assert reaper.kill_children([stranger.pid], "sleep", timeout=30) is False
        assert reaper.kill_children([orphan, stranger.pid], "pbx-subreaper-test-b", timeout=30) is False
        assert stranger.poll() is None and _parent(orphan) == reaper.pid()
    finally:
        stranger.kill()
        stranger.wait()
    assert reaper.kill_children([orphan], "pbx-subreaper-test-b", timeout=30) is True


def test_exit_codes_logs_and_timeouts(reaper: Subreaper, tmp_path: Path) -> None:
    log = tmp_path / "log"
    assert reaper.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], str(log), timeout=30) == 3
    assert log.read_text().split() == ["out", "err"]
    assert reaper.run(["/bin/sh", "-c", "kill -9 $$"], str(log), timeout=30) == -9
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        reaper.run(["/bin/sleep", "300"], str(log), timeout=0.5)
    assert time.monotonic() - started < 60
    with pytest.raises(OSError, match="could not run"):
        reaper.run(["/nonexistent/program"], str(log), timeout=30)


def test_no_supervisor_is_started_just_to_kill(tmp_path: Path) -> None:
    reaper = Subreaper()
    assert reaper.kill_children([os.getpid()], "anything", timeout=5) is False
    assert reaper.pid() is None


def test_the_exit_code_of_an_adopted_child_is_kept(reaper: Subreaper, tmp_path: Path) -> None:
    """A sandbox process exits with its container's status: the supervisor keeps it for the host."""
    pid_file = tmp_path / "pid"
    script = f"sh -c 'sleep 0.2; exit 139' & echo $! > {pid_file}"
    assert reaper.run(["/bin/sh", "-c", script], str(tmp_path / "log"), timeout=30) == 0
    orphan = int(pid_file.read_text())
    deadline = time.monotonic() + 30
    while Path(f"/proc/{orphan}").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert reaper.exit_status(orphan, timeout=30) == 139
    assert reaper.exit_status(os.getpid(), timeout=30) is None
