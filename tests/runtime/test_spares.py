"""Spares: a restored container parked ahead per option set serves the next sandbox (runsc and runc).

Real containers throughout, as in tests/runtime/test_restore.py. A sandbox served from a spare is as
clean as any restored one (nothing of the sandbox before it, its own random state and key), a spare
that died is replaced rather than handed out, and spares go with the process's close and, for a
SIGKILLed owner, with `pixelbox cleanup`. Waits are on events, with deadlines derived from the
start timeout; nothing is timed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pixelbox.runtime import Sandbox
from pixelbox.runtime.backends import choose_backend, criu, spares
from pixelbox.runtime.backends.docker import DockerBackend
from pixelbox.runtime.cleanup import leftovers_of, remove_leftovers_of
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.workspace import process_start
from tests.conftest import prepare_fresh
from tests.hardening.support import container_fault
from tests.runtime.test_fresh import DIRTY, PROBE, RANDOMS, _clean, _run
from tests.runtime.test_restore import PATHS, restored  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 240.0
"""A spare's restore is a few tenths of a second on a quiet machine; this covers a checkpoint made
first and a machine loaded many times over."""


@pytest.fixture
def spare_options(restored: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:  # noqa: F811
    """Options with a spare key of this module's own (no other test's spare is handed out here), spares on."""
    monkeypatch.setenv(spares.ENABLE_VARIABLE, "1")
    yield {**restored, "pids": 200}
    spares.close_all()


def _backend(options: dict[str, Any]) -> DockerBackend:
    backend = choose_backend(SandboxOptions(**options))[0]
    assert isinstance(backend, DockerBackend)
    return backend


def _spare(options: dict[str, Any]) -> spares.Spare:
    """The spare parked for ``options``, once restored (prepared ahead as a pool does)."""
    prepare_fresh(options)
    spare = _backend(options).spare(SandboxOptions(**options), WAIT_S)
    assert spare is not None and spare.handle.alive(), "no spare was restored"
    return spare


def test_sandboxes_served_from_spares_share_nothing(spare_options: dict[str, Any]) -> None:
    """Two sandboxes in a row each take a parked spare (the second restored while the first ran): each
    works in the spare's layout as its own, reports the fast start from a spare, and the second sees
    nothing of the first (variables, files, /tmp, /dev/shm, environment, patches); every random source
    and the connection key differ."""
    draws, keys = [], []
    for name in ("A", "B"):
        spare = _spare(spare_options)
        with Sandbox(**{**spare_options, "env": {"ONLY_A": "secret-of-a"} if name == "A" else {}}) as sb:
            assert sb.start_path == "fast" and sb.info.kernel["spare"] is True, sb.info.kernel
            assert sb.layout.root == spare.layout.root
            assert sb.info.isolation["container_id"].startswith(sb.layout.root.name)
            if name == "A":
                _run(sb, DIRTY)
                assert _run(sb, "import os\nprint(os.environ['ONLY_A'])") == "secret-of-a\n"
            else:
                _clean(json.loads(_run(sb, PROBE)))
            draws.append(json.loads(_run(sb, RANDOMS)))
            keys.append(sb.connection_info["key"])
    for source in draws[0]:
        assert draws[0][source] != draws[1][source], f"{source} repeated across spares"
    assert keys[0] != keys[1]


def test_a_dead_spare_is_replaced_not_handed_out(spare_options: dict[str, Any]) -> None:
    """A spare whose container died is not handed out: the sandbox restores on demand (and works), the
    dead spare's container and layout are removed, and a new spare is restored for the next sandbox.
    The kill is reported as such even when asked the moment the kernel is seen dead (runc: the init is
    seen dead before ``runc restore``, its parent, has exited with its status)."""
    spare = _spare(spare_options)
    container = _container_of(spare, spare_options)
    container_fault(container, "kill")  # what a crash or an operator would do
    deadline = time.monotonic() + WAIT_S
    while spare.handle.alive():
        assert time.monotonic() < deadline, f"the spare's container did not end: {_described(spare.handle)}"
        time.sleep(0.001)
    assert "SIGKILL" in spare.handle.exit_reason()
    with Sandbox(**spare_options) as sb:
        assert sb.start_path == "fast" and sb.info.kernel["spare"] is False, sb.info.kernel
        assert sb.layout.root != spare.layout.root
        assert _run(sb, "print(6 * 7)") == "42\n"
    _wait_for(lambda: not spare.layout.root.exists(), "the dead spare's layout was not removed")
    _wait_for(lambda: container not in PATHS[spare_options["runtime"]].restore_ids(), f"{container} was left")
    assert _backend(spare_options).spare(SandboxOptions(**spare_options), WAIT_S) is not None, "no new spare"


def test_spares_go_with_the_close_and_with_a_killed_owner(spare_options: dict[str, Any]) -> None:
    """Closing every sandbox (as at exit) removes the parked spare's container and layout; a spare of a
    SIGKILLed host is that dead owner's leftover (its container and layout), which `pixelbox cleanup`
    removes."""
    spare = _spare(spare_options)
    container = _container_of(spare, spare_options)
    assert not leftovers_of(os.getpid()).get("containers"), "a live spare counts as a leftover"
    spares.close_all()
    assert not spare.layout.root.exists() and container not in PATHS[spare_options["runtime"]].restore_ids()

    script = f"""
        import time
        from pixelbox.runtime.backends import choose_backend
        from pixelbox.runtime.options import SandboxOptions
        options = SandboxOptions(**{spare_options!r})
        backend = choose_backend(options)[0]
        backend.prepare_fresh(options)
        spare = backend.spare(options, {WAIT_S!r})
        print(spare.layout.root if spare else "none", flush=True)
        time.sleep(600)
    """
    env = {**os.environ, PATHS[spare_options["runtime"]].ENABLE_VARIABLE: "1", spares.ENABLE_VARIABLE: "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env
    )
    try:
        assert proc.stdout is not None
        root = Path(proc.stdout.readline().strip())
        start = process_start(proc.pid)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert root.is_dir(), f"the killed host had no spare: {root}"
    left = leftovers_of(proc.pid, start)
    assert any(c.startswith(root.name) for c in left.get("containers", [])), left
    report = remove_leftovers_of(proc.pid)  # scoped: never another test session's dead hosts
    assert str(root) in report.directories
    assert not root.exists() and leftovers_of(proc.pid, start) == {}


def test_spares_are_on_by_default_and_off_with_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """The switch, as the restore paths' own: on unless ``PIXELBOX_RESTORE_SPARES=0``."""
    monkeypatch.delenv(spares.ENABLE_VARIABLE, raising=False)
    assert spares.enabled()
    monkeypatch.setenv(spares.ENABLE_VARIABLE, "0")
    assert not spares.enabled()


def test_spares_past_the_cap_go_longest_unused_first(
    spare_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for one parked spare, parking a spare for a second option set removes the first one's
    (its container and layout), and the second one serves its sandbox."""
    monkeypatch.setenv(spares.MAX_PARKED_VARIABLE, "1")
    first = _spare(spare_options)
    container = _container_of(first, spare_options)
    other = {**spare_options, "pids": 210}
    second = _spare(other)
    _wait_for(lambda: not first.layout.root.exists(), "the spare past the cap was not removed")
    assert container not in PATHS[spare_options["runtime"]].restore_ids()
    assert _backend(spare_options).spare(SandboxOptions(**spare_options), 0.0) is None
    with Sandbox(**other) as sb:
        assert sb.layout.root == second.layout.root
        assert _run(sb, "print(6 * 7)") == "42\n"
    monkeypatch.setenv(spares.MAX_PARKED_VARIABLE, "many")
    with pytest.raises(ValueError, match="PIXELBOX_RESTORE_SPARES_MAX='many' is not a whole number"):
        spares.max_parked()


def _until_one_finds_no_spare(options: dict[str, Any]) -> None:
    """Sandboxes asked for back to back, each held open, until one finds no spare parked (each hit refills
    only after its kernel is ready, so one of the first few misses)."""
    held: list[Sandbox] = []
    try:
        while not held or held[-1].from_spare:
            assert len(held) < 6, "every sandbox asked for back to back found a spare parked"
            held.append(Sandbox(**options))
    finally:
        for sandbox in held:
            sandbox.close()


def test_an_option_set_keeps_as_many_spares_as_its_demand(spare_options: dict[str, Any]) -> None:
    """Sandboxes asked for faster than one refill (held open back to back) find no spare once; from then on
    the option set keeps two parked, and two sandboxes asked for at once are both served from spares."""
    _spare(spare_options)
    _until_one_finds_no_spare(spare_options)
    backend = _backend(spare_options)
    parked = backend.parked_spares(SandboxOptions(**spare_options), WAIT_S, count=2)
    assert len(parked) == 2 and len({s.layout.root for s in parked}) == 2, parked
    with Sandbox(**spare_options) as first, Sandbox(**spare_options) as second:
        assert first.from_spare and second.from_spare
        assert {first.layout.root, second.layout.root} == {s.layout.root for s in parked}
        assert _run(first, "print(6 * 7)") == _run(second, "print(6 * 7)") == "42\n"


def test_option_sets_share_the_cap_without_evicting_each_other(
    spare_options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for two spares, an option set that kept two gives one up to a second option set, and then
    keeps one: its sandboxes finding no spare no longer take the other set's spare from it."""
    monkeypatch.setenv(spares.MAX_PARKED_VARIABLE, "2")
    backend = _backend(spare_options)
    first, other = SandboxOptions(**spare_options), {**spare_options, "pids": 210}
    _spare(spare_options)
    _until_one_finds_no_spare(spare_options)
    assert len(backend.parked_spares(first, WAIT_S, count=2)) == 2
    kept = _spare(other)
    _wait_for(lambda: len(backend.parked_spares(first)) == 1, "the first option set kept both spares past the cap")
    _until_one_finds_no_spare(spare_options)
    assert len(backend.parked_spares(first, WAIT_S, count=2)) == 1
    assert [s.layout.root for s in backend.parked_spares(SandboxOptions(**other))] == [kept.layout.root]


def _described(handle: Any) -> str:
    """A handle's state and its init process's (diagnostics for a failed wait)."""
    init = getattr(handle, "init_pid", None)
    status = Path(f"/proc/{init}/status").read_text() if init and Path(f"/proc/{init}").exists() else "gone"
    fields = [line for line in status.splitlines() if line.split(":")[0] in ("State", "TracerPid", "ShdPnd", "SigBlk")]
    state = criu.runc("state", handle.container).stdout if init else ""
    return f"{vars(handle)}; init: {fields}; runc state: {state}"


def _wait_for(condition: Callable[[], bool], failure: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.05)


def _container_of(spare: spares.Spare, options: dict[str, Any]) -> str:
    found = [c for c in PATHS[options["runtime"]].restore_ids() if c.startswith(spare.layout.root.name)]
    assert len(found) == 1, found
    return found[0]


def test_cleanup_stops_runtime_processes_still_working_for_a_dead_owner() -> None:
    """A restore in flight when its host died (a spare's, in the background) must not finish after the
    cleanup: runtime processes naming a dead owner's bundle are killed first; a live owner's are not."""
    from pixelbox.runtime.backends import restore
    from pixelbox.runtime.backends.base import CleanupReport

    code = "import time; time.sleep(600)"
    dead = subprocess.Popen(["runsc", "-c", code, "--bundle", "/tmp/pbx-999999.1-dead-x/b"], executable=sys.executable)
    live = subprocess.Popen(["runc", "-c", code, "--bundle", "/tmp/pbx-1.1-live-x/b"], executable=sys.executable)
    try:
        report = CleanupReport()
        restore.kill_runtime_processes(lambda owner: owner.pid == 999999, report)
        assert report.processes == [dead.pid]
        assert dead.wait(WAIT_S) == -signal.SIGKILL and live.poll() is None
    finally:
        for process in (dead, live):
            process.kill()
            process.wait()
