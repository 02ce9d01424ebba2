"""Concurrency and the warm pool."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pixelbox.runtime import Sandbox
from pixelbox.runtime.pool import SandboxPool


def test_eight_sandboxes_execute_concurrently(backend: dict[str, Any]) -> None:
    def run(i: int) -> tuple[int, str]:
        with Sandbox(**backend) as sb:
            sb.execute(f"value = {i} * 3")
            return i, sb.execute("print(value)").stdout.strip()

    with ThreadPoolExecutor(max_workers=8) as workers:
        results = dict(workers.map(run, range(8)))
    assert results == {i: str(i * 3) for i in range(8)}


def test_pool_hands_out_ready_sandboxes_and_dirty_ones_come_back_clean(backend: dict[str, Any]) -> None:
    with SandboxPool(2, **backend) as pool:
        assert pool.wait_ready(timeout=120)
        first = pool.acquire()
        assert first.alive
        first.execute("secret = 'dirty'\nopen('left.txt', 'w').write('x')")
        pool.release(first)
        assert first.closed, "a released sandbox is discarded, never reused dirty"
        seen = []
        for _ in range(3):
            with pool.sandbox() as sb:
                seen.append(sb)
                assert sb.execute("secret").status == "error"
                listing = sb.execute("import os\nprint(sorted(os.listdir('.')))")
                assert "left.txt" not in listing.stdout
        assert len({id(s) for s in seen}) == 3
        stats = pool.stats()
        assert stats.failed_starts == 0 and stats.leased == 0
    assert all(s.closed for s in seen)


def test_pool_acquire_waits_for_refill_and_reports_broken_options() -> None:
    import pytest

    from pixelbox.runtime.pool import PoolExhausted

    with SandboxPool(1, backend="local", start_timeout=5) as pool:
        a = pool.acquire(timeout=60)
        started = time.monotonic()
        pool.release(a)
        b = pool.acquire(timeout=60)
        assert b is not a and b.alive
        assert time.monotonic() - started < 60
        pool.release(b)
    with (
        SandboxPool(1, backend="docker", image="pixelbox-kernel:does-not-exist") as broken,
        pytest.raises(PoolExhausted, match=r"not built|Docker|cannot start"),
    ):
        broken.acquire(timeout=30)
