"""Cost of ending collection on the host's own marker instead of the execute's own ``idle``.

Since issue 12 ``Sandbox.execute`` sends a marker request behind each cell and collects until the
marker comes back idle (a cell can publish an ``idle`` of its own; it cannot know the marker's id).
This runs ``execute("x = 1")`` on one kernel, interleaved (A/B, B/A), as landed and with collection
ending on the execute's own idle (the old way, patched in for the measurement only), and prints
p10 and p50 of each:

    .venv/bin/python benchmarks/bench_marker.py [local|runc|runsc] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from pixelbox.runtime import Sandbox, protocol
from pixelbox.runtime.protocol import Collected, KernelChannel, RunEnd, receive

LANDED = (KernelChannel.send_execute, KernelChannel.collect)


def send_plain(self: KernelChannel, code: str, metadata: dict[str, Any] | None = None) -> str:
    """The execute request alone, no marker behind it."""
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
    msg = self.client.session.msg("execute_request", dict(content, stop_on_error=False), metadata=metadata or {})
    self.client.shell_channel.send(msg)
    return str(msg["header"]["msg_id"])


def collect_plain(self: KernelChannel, msg_id: str, into: Collected, until: float, alive: Any) -> RunEnd:
    """Collect until the execute's own ``idle`` (what a faked idle could end)."""
    while time.monotonic() < until:
        msg = receive(self.client.iopub_channel, protocol.POLL_SLICE_S, into)
        if msg is None or msg["parent_header"].get("msg_id") != msg_id:
            continue
        if protocol._is_idle(msg):
            self._drain_shell()
            return "idle"
        into.handle(msg)
    return "deadline"


def timed(sb: Sandbox, marker: bool) -> float:
    """One trivial execute, with collection ending as landed (marker) or on the execute's idle."""
    KernelChannel.send_execute, KernelChannel.collect = LANDED if marker else (send_plain, collect_plain)  # type: ignore[method-assign]
    try:
        start = time.perf_counter()
        result = sb.execute("x = 1")
        elapsed = time.perf_counter() - start
    finally:
        KernelChannel.send_execute, KernelChannel.collect = LANDED  # type: ignore[method-assign]
    assert result.status == "ok", result
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("backend", nargs="?", default="local", choices=("local", "runc", "runsc"))
    parser.add_argument("--rounds", type=int, default=150)
    args = parser.parse_args()
    options: dict[str, Any] = (
        {"backend": "local"} if args.backend == "local" else {"backend": "docker", "runtime": args.backend}
    )
    times: dict[bool, list[float]] = {True: [], False: []}
    with Sandbox(**options) as sb:
        for _ in range(20):
            sb.execute("x = 1")
        for n in range(args.rounds):
            for marker in (True, False) if n % 2 else (False, True):
                times[marker].append(timed(sb, marker))
    for marker, label in ((True, "host marker"), (False, "own idle")):
        values = sorted(times[marker])
        print(
            f"{label:12} p10 {values[len(values) // 10] * 1e3:6.2f} ms  p50 {statistics.median(values) * 1e3:6.2f} ms"
        )


if __name__ == "__main__":
    main()
