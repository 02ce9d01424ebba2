"""The host's waits at kernel start: woken by events (the ready file landing, the kernel's iopub
greeting), with the slower ways kept for when no event comes.

Real parts: a real directory and inotify, real kernels (local backend) and real jupyter_client
connections to them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pixelbox.runtime import Sandbox
from pixelbox.runtime.dirwatch import DirectoryWatch
from pixelbox.runtime.protocol import KernelChannel, wait_for_ready_file


def test_a_watch_wakes_when_a_file_is_renamed_into_the_directory(tmp_path: Path) -> None:
    """The kernel writes its ready file under a temporary name and renames it: the waiter wakes then,
    long before its timeout; with nothing happening it waits the timeout out."""
    with DirectoryWatch(tmp_path) as watch:
        assert watch.fd >= 0
        started = time.monotonic()
        watch.wait(0.2)
        assert time.monotonic() - started >= 0.19
        (tmp_path / "ready.json.tmp").write_text("{}")
        (tmp_path / "ready.json.tmp").replace(tmp_path / "ready.json")
        started = time.monotonic()
        watch.wait(30)
        assert time.monotonic() - started < 29
    assert watch.fd == -1


def _inotify_descriptors() -> int:
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            count += os.readlink(fd) == "anon_inode:inotify"
        except OSError:
            continue
    return count


def test_closed_watches_release_their_descriptors_in_the_background(tmp_path: Path) -> None:
    """Closing an inotify descriptor waits for an SRCU grace period, so a watch's close leaves it to a
    background thread: the caller returns at once, and the descriptors are all released soon after."""
    before = _inotify_descriptors()
    for _ in range(20):
        with DirectoryWatch(tmp_path) as watch:
            assert watch.fd >= 0
    deadline = time.monotonic() + 30
    while _inotify_descriptors() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _inotify_descriptors() <= before  # (a watch closed before this test may have gone meanwhile)


def test_the_ready_wait_returns_the_record_written_while_it_waits(tmp_path: Path) -> None:
    """A ready file that appears during the wait is read and returned (whether the watch or the
    periodic look sees it first). Written the way the kernel writes it, under a temporary name and
    renamed: written in place, a look between the truncation and the write would see an empty file."""

    def land() -> None:
        (tmp_path / "ready.json.tmp").write_text('{"pid": 7}')
        (tmp_path / "ready.json.tmp").replace(tmp_path / "ready.json")

    writer = threading.Timer(0.3, land)
    writer.start()
    try:
        assert wait_for_ready_file(tmp_path, time.monotonic() + 60, lambda: True) == {"pid": 7}
    finally:
        writer.cancel()


def test_kernels_are_greeted_and_need_no_kernel_info_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forked and cold kernels alike greet the host on iopub as its subscription joins, so the start
    takes no ``kernel_info`` round trip (the fallback is watched, not replaced)."""
    round_trips: list[float] = []
    original = KernelChannel._kernel_info_round_trip

    def watched(self: KernelChannel, deadline: float, alive: Callable[[], bool]) -> None:
        round_trips.append(deadline)
        original(self, deadline, alive)

    monkeypatch.setattr(KernelChannel, "_kernel_info_round_trip", watched)
    for fast in (True, False):
        with Sandbox(backend="local", policy=False, fast_start=fast) as sb:
            assert sb.start_path == ("fast" if fast else "cold")
            assert sb.execute("print('greeted')").stdout == "greeted\n"
    assert round_trips == []


def test_a_client_that_is_not_greeted_gets_the_kernel_info_round_trip() -> None:
    """The kernel's iopub greets a subscription only when it is new to it, so a second client of the
    same kernel is not greeted: the ``kernel_info`` round trip serves it, and the kernel runs on."""
    with Sandbox(backend="local", policy=False) as sb:
        channel = KernelChannel(sb.connection_info)
        try:
            channel._kernel_info_round_trip(time.monotonic() + 60, sb._handle.alive)  # type: ignore[union-attr]
        finally:
            channel.close()
        assert sb.execute("print('after')").stdout == "after\n"
