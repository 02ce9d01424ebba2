"""Spares: restored containers kept parked ahead per option set, so a fresh sandbox skips the restore.

The container analogue of the zygote's spare fork (:mod:`.zygote`). Once an option set's checkpoint
template exists (``prepare_fresh``, or the checkpoint made on demand), a background thread restores
one kernel from it into a sandbox layout of its own (``Layout.create``, as a sandbox makes it: the
same directories, owner, modes and disk cap) and leaves it parked before its phase two: the restored
process waits for ``env.json``, holding nothing of any sandbox. A sandbox asking for that option set
takes the spare (:meth:`Spares.take`): it adopts the layout as its own, writes its connection and
configuration files, and wakes the kernel with its environment (phase two: reseeded random sources,
its own HMAC key). Taking one starts the next restore in the background, after the taker's kernel
is ready, so the two do not compete for the CPU; a sandbox that finds no spare ready restores on
demand as before (it never waits for a spare).

How many spares an option set keeps follows its demand: one at first, one more each time a sandbox
finds none parked (requests came faster than one refill: concurrent episodes, a pool refilling
several at once) while the option sets with spares keep fewer than the cap below in all, and one
fewer once no sandbox has found none for :data:`DEPTH_DECAY_S`. In bench_fresh's churn (two workers,
a loaded machine), one spare per option set served 6 of 16 episodes; following the demand, 10 to 14.

Isolation is the on-demand restore's: each spare has its own layout, container and cgroup, named
like a sandbox's (``pbx-<owner>-...``), so ``pixelbox cleanup`` removes those of a dead owner. The
spares of this process are no leftovers while it runs (:func:`roots`; the leak checks skip them);
they are removed when every sandbox is closed (``live.close_all``, at exit) or by :meth:`Spares.close`.
A spare that died is stopped and replaced, never handed out. A spare is not free: its restore costs
what an on-demand restore costs (CPU), paid ahead, and its memory while parked (the container's
cgroup: about 40 MB on runc, 145 MB on runsc), so one restore path keeps at most
``PIXELBOX_RESTORE_SPARES_MAX`` (4) parked: the spare of the option set used longest ago goes first.
On by default wherever the restore paths run (measured: benchmarks/README.md, bench_fresh's
``restore, a spare ready`` column); off with ``PIXELBOX_RESTORE_SPARES=0``.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import socket
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Protocol

from pixelbox.runtime import live
from pixelbox.runtime.backends import restore
from pixelbox.runtime.backends.base import KernelHandle, ParkedKernel
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.protocol import READY_FILE
from pixelbox.runtime.workspace import Layout

logger = logging.getLogger(__name__)
ENABLE_VARIABLE = "PIXELBOX_RESTORE_SPARES"
"""Host environment variable: ``0`` keeps no spare (every fast start restores on demand); on by default
wherever a restore path runs."""
MAX_FAILURES = 3
"""Spare restores of one option set that may fail in a row before no more are tried for it."""
MAX_PARKED_VARIABLE = "PIXELBOX_RESTORE_SPARES_MAX"
"""Host environment variable: how many spares one restore path keeps parked at most (default
:data:`DEFAULT_MAX_PARKED`); past it, the spare of the option set used longest ago is removed."""
DEFAULT_MAX_PARKED = 4
WAKE_SOCKET = restore.WAKE_FILE
DEPTH_DECAY_S = 60.0
"""An option set keeps its extra spares while a sandbox found none parked within this long; after that,
one fewer each time it is refilled (the spares already parked stay until used or evicted)."""
REFILL_AFTER_S = 5.0
"""How long a refill waits at most for the kernel just handed out to become ready before it restores."""
Key = tuple[Any, ...]


def enabled() -> bool:
    """Whether restore paths keep spares: by default, not with ``PIXELBOX_RESTORE_SPARES=0``
    (:func:`.restore.switched_on`; the restore paths' own switches and checks still apply)."""
    return restore.switched_on(ENABLE_VARIABLE, lambda: True)


class Template(Protocol):
    """What a spare is restored from (:class:`.restore.Template`)."""

    key: str

    def ready(self, timeout: float) -> bool: ...


class Restorer(Protocol):
    """The restore path a spare comes from (:class:`.restore.RestorePath` or runc's)."""

    def restore_parked(self, template: Any, layout: Layout, options: SandboxOptions) -> KernelHandle: ...

    def wake(self, layout: Layout, env: dict[str, str]) -> None: ...


def max_parked() -> int:
    """The cap on parked spares per restore path (``PIXELBOX_RESTORE_SPARES_MAX``; at least 1)."""
    text = os.environ.get(MAX_PARKED_VARIABLE, "").strip()
    try:
        return max(1, int(text)) if text else DEFAULT_MAX_PARKED
    except ValueError:
        raise ValueError(
            f"{MAX_PARKED_VARIABLE}={text!r} is not a whole number: give how many spares to keep, e.g. 4"
        ) from None


def spare_key(template_key: str, options: SandboxOptions) -> Key:
    """What a parked kernel fixes beyond its template: the limits its container and cgroup were made with
    and its layout's disk cap (everything else of a sandbox reaches the kernel in its phase two)."""
    return (template_key, options.pids, options.cpus, options.workspace_size)


@dataclass
class Spare:
    """One parked kernel in its own layout."""

    layout: Layout
    handle: KernelHandle
    template: Template
    waker: socket.socket


class Spares:
    """The spares of one restore path: per key, as many parked or being restored as its depth (its demand)."""

    def __init__(self, path: Restorer, kernel_uid: int | None) -> None:
        self._path = path
        self._uid = kernel_uid
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._ready: dict[Key, list[Spare]] = {}
        """Parked spares per key, the longest parked first."""
        self._making: dict[Key, list[threading.Thread]] = {}
        self._depth: dict[Key, int] = {}
        """How many spares each key keeps (1, raised by each request that found none parked)."""
        self._missed: dict[Key, float] = {}
        """When a request last found no spare parked for each key (an extra spare is kept while recent)."""
        self._roots: set[str] = set()
        """Layout roots of spares ready or being made (not leftovers while this process runs)."""
        self._failures: dict[Key, int] = {}
        self._used: dict[Key, float] = {}
        """When each option set last asked for a spare (which parked spare goes first past the cap)."""
        self._generation = 0
        _ALL.add(self)
        atexit.register(self.close)  # before the templates' removal (registered earlier): no restore in flight

    def keep(self, template: Template, options: SandboxOptions, after: Layout | None = None) -> None:
        """Make sure a spare for ``options`` is parked or being restored (in a thread, once ``template`` is
        ready; after ``after``'s kernel is ready, when given). Cheap when one is."""
        if not enabled():
            return
        key = spare_key(template.key, options)
        limit = max_parked()  # a bad value is the caller's error here, not a restore thread's
        with self._lock:
            now = self._used[key] = time.monotonic()
            if self._failures.get(key, 0) >= MAX_FAILURES:
                return
            depth = self._depth.get(key, 1)
            if depth > 1 and now - self._missed.get(key, 0.0) > DEPTH_DECAY_S:
                depth = self._depth[key] = depth - 1
            making = self._making.setdefault(key, [])
            for _ in range(depth - len(self._ready.get(key, ())) - len(making)):
                thread = threading.Thread(
                    target=self._make,
                    args=(key, template, options, after, self._generation, limit),
                    name=f"pbx-spare-{template.key}",
                    daemon=True,
                )
                thread.start()  # under the lock: close() joins only started threads
                making.append(thread)

    def take(self, template_key: str, options: SandboxOptions, env: dict[str, str]) -> ParkedKernel | None:
        """The parked kernel for ``options`` if one is ready and alive (a dead one is removed), else None;
        woken with ``env`` (the sandbox's whole environment)."""
        key = spare_key(template_key, options)
        with self._lock:
            parked = self._ready.get(key)
            spare = parked.pop(0) if parked else None
            if spare is None and key in self._used:  # demand outran the refills: keep one more from now on
                self._missed[key] = time.monotonic()
                if self._kept() < max_parked():
                    self._depth[key] = self._depth.get(key, 1) + 1
        if spare is None:
            return None
        alive = spare.handle.alive()
        if alive:  # the sandbox's from here on
            self._forget_root(spare.layout)
        else:  # replaced, never handed out (removed in the background: the requester does not wait)
            threading.Thread(target=self._remove, args=(spare,), daemon=True).start()
        self.keep(spare.template, options, after=spare.layout if alive else None)
        if not alive:
            return None

        def wake() -> None:
            self._path.wake(spare.layout, env)
            _close_waker(spare)

        return ParkedKernel(spare.layout, spare.handle, wake)

    def _remove(self, spare: Spare) -> None:
        """Remove a spare that is no sandbox's; its layout counts as this process's spare until it is gone."""
        _discard(spare.layout, spare.handle, spare.waker)
        self._forget_root(spare.layout)

    def _forget_root(self, layout: Layout) -> None:
        with self._lock:
            self._roots.discard(str(layout.root))

    def parked(self, template_key: str, options: SandboxOptions, timeout: float, count: int = 1) -> list[Spare]:
        """The spares parked for ``options`` (not taken: for benchmarks, diagnostics and tests), waiting up to
        ``timeout`` while fewer than ``count`` are parked and more are being restored."""
        key = spare_key(template_key, options)
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self._ready.get(key, ())) < count and self._making.get(key) and time.monotonic() < deadline:
                self._changed.wait(max(0.0, deadline - time.monotonic()))
            return list(self._ready.get(key, ()))

    def _kept(self) -> int:
        """Under the lock: how many spares the option sets with one parked or being restored keep in all."""
        keys = {k for k, parked in self._ready.items() if parked} | {k for k, making in self._making.items() if making}
        return sum(self._depth.get(k, 1) for k in keys)

    def _make(
        self,
        key: Key,
        template: Template,
        options: SandboxOptions,
        after: Layout | None,
        generation: int,
        limit: int,
    ) -> None:
        spare: Spare | None = None
        evicted: list[Spare] = []
        try:
            if after is not None:
                _wait_ready(after)
            if template.ready(options.start_timeout):
                spare = self._restore(template, options)
        finally:
            with self._lock:
                with contextlib.suppress(ValueError):
                    self._making.get(key, []).remove(threading.current_thread())
                if generation == self._generation:  # (else closed meanwhile: neither parked nor counted)
                    self._failures[key] = 0 if spare else self._failures.get(key, 0) + 1
                    if spare is not None:
                        evicted = self._evict_for(key, limit)
                        self._ready.setdefault(key, []).append(spare)
                        spare = None
                self._changed.notify_all()
        if spare is not None:  # closed meanwhile
            self._remove(spare)
        for old in evicted:
            self._remove(old)

    def _evict_for(self, key: Key, limit: int) -> list[Spare]:
        """Under the lock: take out spares of the option sets used longest ago, so that parking one for
        ``key`` keeps at most ``limit`` (:func:`max_parked`: a host serving many option sets holds no more
        memory); each set that loses one keeps one fewer from then on."""
        evicted: list[Spare] = []
        while sum(map(len, self._ready.values())) >= limit:
            others = (k for k, parked in self._ready.items() if k != key and parked)
            oldest = min(others, key=lambda k: self._used.get(k, 0.0), default=None)
            if oldest is None:
                break
            evicted.append(self._ready[oldest].pop(0))
            self._depth[oldest] = max(1, self._depth.get(oldest, 1) - 1)
        return evicted

    def _restore(self, template: Template, options: SandboxOptions) -> Spare | None:
        size = options.workspace_size
        layout = Layout.create(self._uid, disk_cap=None if size is None else int(size))
        with self._lock:
            self._roots.add(str(layout.root))
        handle: KernelHandle | None = None
        waker: socket.socket | None = None
        try:
            waker = _waker(layout, self._uid)
            handle = self._path.restore_parked(template, layout, options)
            if handle.alive():
                return Spare(layout, handle, template, waker)
        except Exception as exc:  # a spare is an optimisation: the next sandbox restores on demand
            logger.warning("a spare kernel could not be restored (%s); sandboxes restore on demand", exc)
        _discard(layout, handle, waker)
        with self._lock:
            self._roots.discard(str(layout.root))
        return None

    def close(self) -> None:
        """Remove every spare, waiting for restores in flight (later calls to :meth:`keep` start anew)."""
        with self._lock:
            self._generation += 1
            spares = [spare for parked in self._ready.values() for spare in parked]
            self._ready = {}
            threads = [thread for making in self._making.values() for thread in making]
            self._failures.clear()
            self._depth.clear()
            self._missed.clear()
        for spare in spares:
            self._remove(spare)
        for thread in threads:
            thread.join(120.0)

    def roots(self) -> set[str]:
        """Layout roots of this path's spares (parked or being restored)."""
        with self._lock:
            return set(self._roots)


def _wait_ready(layout: Layout, limit: float = REFILL_AFTER_S) -> None:
    """Wait (at most ``limit``) until the kernel of ``layout`` wrote its ready file, or its layout is gone."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and layout.root.exists() and not (layout.ipc / READY_FILE).exists():
        time.sleep(0.01)


def _waker(layout: Layout, kernel_uid: int | None) -> socket.socket:
    """The wake socket a spare will block on, listening in its IPC directory (the kernel may connect)."""
    waker = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    path = layout.ipc / WAKE_SOCKET
    try:
        waker.bind(str(path))
        waker.listen(1)
        if kernel_uid is not None and os.geteuid() == 0:
            os.chown(path, kernel_uid, kernel_uid)
    except BaseException:
        waker.close()
        raise
    return waker


def _close_waker(spare: Spare) -> None:
    """Wake the parked kernel (its connection ends) and remove the socket from its IPC directory."""
    spare.waker.close()
    with contextlib.suppress(OSError):
        (spare.layout.ipc / WAKE_SOCKET).unlink()


def _discard(layout: Layout, handle: KernelHandle | None, waker: socket.socket | None = None) -> None:
    """Stop a spare's kernel (if it got one), close its wake socket and remove its layout; never raises."""
    if waker is not None:
        waker.close()
    with contextlib.suppress(Exception):
        if handle is not None:
            handle.kill()
    with contextlib.suppress(Exception):
        layout.remove()


_ALL: weakref.WeakSet[Spares] = weakref.WeakSet()


def close_all() -> None:
    """Remove the spares of every restore path in this process (after every sandbox is closed, at exit)."""
    for spares in list(_ALL):
        spares.close()


def roots() -> set[str]:
    """Layout roots of this process's spares: not leftovers while it runs (``cleanup.leftovers_of``)."""
    return {root for spares in list(_ALL) for root in spares.roots()}


live.on_close_all(close_all)
