"""``SandboxPool``: sandboxes started ahead of time, handed out in microseconds.

Reset policy: a released sandbox is closed and replaced by a brand-new one rather than
scrubbed in place. A fresh container (or kernel process with a fresh workspace) is the only
reset that provably clears variables, files, background threads and child processes, and
its cost is paid by the background refill, not by the caller of :meth:`acquire`, and made small
by the backend's fast path (``Backend.prepare_fresh`` / ``start_fresh``: the local backend forks
each replacement from a zygote), which the pool prepares when it is made. It is also
no slower: ``benchmarks/bench_runtime.py`` times an in-place reset (restart the kernel, empty
the workspace, first result) beside a fresh sandbox's cold start, and the in-place reset is
the slower one on every backend: it must stop the old kernel (on docker, the old container's
kernel) before starting the new one (runc 0.49 s vs 0.41 s, runsc 1.77 s vs 1.60 s, local
0.38 s vs 0.30 s at the median).
Before a sandbox joins the ready queue its kernel has passed the Jupyter handshake (its iopub
greeted the host's subscription, or answered ``kernel_info`` on the shell and iopub channels), which
is the health check.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pixelbox.runtime.backends import choose_backend
from pixelbox.runtime.errors import PixelboxError, SandboxClosed
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.sandbox import Sandbox


class PoolExhausted(PixelboxError, TimeoutError):
    """No ready sandbox could be handed out before the acquire timeout."""


@dataclass
class PoolStats:
    """Counters for monitoring a pool."""

    size: int
    ready: int
    leased: int
    starting: int
    started_total: int
    failed_starts: int
    last_error: str | None


class SandboxPool:
    """Keeps ``size`` ready sandboxes; :meth:`acquire` takes one, :meth:`release` gives it back.

    Background threads start replacements (``parallel_starts`` at a time) and close released
    sandboxes. Closing the pool closes every sandbox it made, leased or not.
    """

    def __init__(
        self,
        size: int,
        options: SandboxOptions | None = None,
        *,
        parallel_starts: int = 2,
        **overrides: Any,
    ) -> None:
        if size < 1:
            raise ValueError(f"pool size must be >= 1, got {size}")
        base = options or SandboxOptions()
        self.options = base.with_(**overrides) if overrides else base
        self.size = size
        self._ready: queue.Queue[Sandbox] = queue.Queue()
        self._leased: set[Sandbox] = set()
        self._retiring: queue.Queue[Sandbox | None] = queue.Queue()
        self._cond = threading.Condition()
        self._starting = 0
        self._started_total = 0
        self._failed = 0
        self._consecutive_failures = 0
        self._last_error: BaseException | None = None
        self._closed = False
        self._prepare_fast_path()
        self._threads = [
            threading.Thread(target=self._refill_loop, name=f"pbx-pool-refill-{i}", daemon=True)
            for i in range(max(1, parallel_starts))
        ]
        self._threads.append(threading.Thread(target=self._retire_loop, name="pbx-pool-retire", daemon=True))
        for thread in self._threads:
            thread.start()

    # -- public API ---------------------------------------------------------------------------

    def acquire(self, timeout: float | None = 120.0) -> Sandbox:
        """Hand out a ready sandbox, waiting up to ``timeout`` seconds for one to start."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._closed:
                raise SandboxClosed("this pool is closed")
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                sandbox = self._ready.get(timeout=min(remaining, 0.25) if remaining is not None else 0.25)
            except queue.Empty:
                self._raise_if_hopeless(deadline)
                continue
            if sandbox.alive:
                with self._cond:
                    self._leased.add(sandbox)
                    self._cond.notify_all()
                return sandbox
            self._retiring.put(sandbox)

    def release(self, sandbox: Sandbox) -> None:
        """Return a sandbox; it is discarded and a clean one takes its place."""
        with self._cond:
            if sandbox not in self._leased:
                raise ValueError("this sandbox was not acquired from this pool (or was already released)")
            self._leased.discard(sandbox)
            self._cond.notify_all()
        sandbox.mark_closed()
        self._retiring.put(sandbox)

    @contextlib.contextmanager
    def sandbox(self, timeout: float | None = 120.0) -> Iterator[Sandbox]:
        """``with pool.sandbox() as sb:`` acquires and always releases."""
        sandbox = self.acquire(timeout)
        try:
            yield sandbox
        finally:
            self.release(sandbox)

    def wait_ready(self, timeout: float = 120.0) -> bool:
        """Block until ``size`` sandboxes are ready (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._ready.qsize() < self.size and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, 0.25))
            return not self._closed

    def stats(self) -> PoolStats:
        """A snapshot of the pool's counters."""
        with self._cond:
            return PoolStats(
                size=self.size,
                ready=self._ready.qsize(),
                leased=len(self._leased),
                starting=self._starting,
                started_total=self._started_total,
                failed_starts=self._failed,
                last_error=repr(self._last_error) if self._last_error else None,
            )

    def close(self) -> None:
        """Stop refilling and close every sandbox the pool made. Idempotent."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            leased = list(self._leased)
            self._leased.clear()
            self._cond.notify_all()
        for thread in self._threads[:-1]:
            thread.join(timeout=self.options.start_timeout + 5)
        while True:
            try:
                self._ready.get_nowait().close()
            except queue.Empty:
                break
        for sandbox in leased:
            sandbox.close()
        self._retiring.put(None)
        self._threads[-1].join(timeout=30)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- background work ------------------------------------------------------------------------

    def _prepare_fast_path(self) -> None:
        """Have the backend's fast path (``Backend.prepare_fresh``) warm up while the first sandboxes start.

        Refills are ordinary ``Sandbox(options)`` starts, so they take the fast path whenever
        ``options.fast_start`` is on and the backend has one ready; an unavailable backend is
        left to the refill, which reports it.
        """
        if not self.options.fast_start:
            return
        with contextlib.suppress(PixelboxError):
            choose_backend(self.options)[0].prepare_fresh(self.options)

    def _raise_if_hopeless(self, deadline: float | None) -> None:
        with self._cond:
            failing = self._consecutive_failures >= 3 and self._last_error is not None
            error = self._last_error
        if failing:
            raise PoolExhausted(f"the pool cannot start sandboxes: {error}") from error
        if deadline is not None and time.monotonic() >= deadline:
            raise PoolExhausted(f"no sandbox became ready in time ({self.stats()})")

    def _needs_more(self) -> bool:
        return self._ready.qsize() + self._starting < self.size

    def _refill_loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._needs_more():
                    self._cond.wait(0.5)
                if self._closed:
                    return
                self._starting += 1
            sandbox: Sandbox | None = None
            error: BaseException | None = None
            try:
                sandbox = Sandbox(self.options)
            except Exception as exc:
                error = exc
            with self._cond:
                self._starting -= 1
                self._record_start(error)
                if sandbox is not None and self._closed:
                    self._retiring.put(sandbox)
                elif sandbox is not None:
                    self._ready.put(sandbox)
                self._cond.notify_all()
            if error is not None:
                time.sleep(min(5.0, 0.2 * 2**self._consecutive_failures))

    def _record_start(self, error: BaseException | None) -> None:
        if error is None:
            self._started_total += 1
            self._consecutive_failures = 0
        else:
            self._failed += 1
            self._consecutive_failures += 1
            self._last_error = error

    def _retire_loop(self) -> None:
        while True:
            sandbox = self._retiring.get()
            if sandbox is None:
                return
            sandbox.mark_closed()
            with contextlib.suppress(Exception):
                sandbox.teardown()
