"""The restore cache's pruner keeps the cache within its budget and never breaks another process.

Real files in a temporary cache root (never the machine's), a real ``flock`` held by another real
process, real bind mounts (root), and Docker's real image ids where whether an image is present matters.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pixelbox.runtime.backends import cache_locks, cache_prune
from pixelbox.runtime.backends.cache_prune import prune, tree_bytes

HOLDER = (
    "import sys\n"
    "from pathlib import Path\n"
    "from pixelbox.runtime.backends import cache_locks\n"
    "cache_locks.hold(Path(sys.argv[1]), 'rootfs', sys.argv[2])\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)
"""Another process using an export: holds its lock until its stdin closes."""


def export(root: Path, name: str, used: float, size: int = 64 * 1024) -> Path:
    """A finished export of ``size`` bytes, last used at ``used`` (seconds since the epoch)."""
    path = root / "rootfs" / name
    (path / "usr" / "bin").mkdir(parents=True)
    (path / "usr" / "bin" / "python3").write_bytes(os.urandom(size))
    lock = cache_locks.lock_path(root, "rootfs", name)
    lock.parent.mkdir(exist_ok=True)
    lock.touch()
    os.utime(lock, (used, used))
    return path


def names(root: Path) -> set[str]:
    return {p.name for p in (root / "rootfs").iterdir()}


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A process holding a shared lock on export ``aaaaaaaaaaaa`` of the cache at ``tmp_path``."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path), "a" * 12],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    yield process
    process.kill()
    process.wait()


def test_an_export_another_process_holds_is_never_pruned(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    export(tmp_path, "a" * 12, used=1_000)
    export(tmp_path, "b" * 12, used=2_000)
    report = prune(tmp_path, 0)
    assert names(tmp_path) == {"a" * 12}
    assert (tmp_path / "rootfs" / ("a" * 12) / "usr" / "bin" / "python3").stat().st_size == 64 * 1024
    assert any(line.startswith(f"rootfs/{'a' * 12}") and "in use" in line for line in report.kept), report.kept
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait()
    prune(tmp_path, 0)
    assert names(tmp_path) == set()


def test_the_budget_is_kept_least_recently_used_first(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("kept")
    root = tmp_path / "cache"
    for name, used in (("1" * 12, 3_000), ("2" * 12, 1_000), ("3" * 12, 2_000)):
        export(root, name, used)
    (root / "rootfs" / ("2" * 12) / "link").symlink_to(outside)  # not followed
    one = tree_bytes(root / "rootfs" / ("1" * 12))
    report = prune(root, one + one // 2)
    assert names(root) == {"1" * 12}
    assert report.before > report.budget >= report.after == tree_bytes(root / "rootfs" / ("1" * 12))
    assert [line.split()[0] for line in report.removed] == [f"rootfs/{'2' * 12}", f"rootfs/{'3' * 12}"]
    assert (outside / "precious").read_text() == "kept"
    assert not (root / "trash").exists() or not list((root / "trash").iterdir())
    assert sorted(p.name for p in (root / "locks").glob("*.lock")) == [f"rootfs.{'1' * 12}.lock"]


def test_under_budget_only_what_nobody_can_use_goes(tmp_path: Path) -> None:
    export(tmp_path, "1" * 12, used=1_000)
    damaged = tmp_path / "rootfs" / f"{'1' * 12}.damaged.123.abcdef"
    (damaged / "sbin").mkdir(parents=True)
    (tmp_path / "rootfs" / ("4" * 12) / "proc").mkdir(parents=True)  # emptied: no usr/bin
    half = tmp_path / "rootfs" / f"{'1' * 12}.99999999.abcdef"  # of a pid above any pid_max
    (half / "usr").mkdir(parents=True)
    report = prune(tmp_path, 10**12)
    assert names(tmp_path) == {"1" * 12}
    gone = {f"rootfs/{damaged.name}", f"rootfs/{'4' * 12}", f"rootfs/{half.name}"}
    assert {line.split()[0] for line in report.removed} == gone
    assert [line.split(":")[-1].strip() for line in report.kept] == ["within the budget"]


@pytest.fixture(scope="module")
def docker_ids() -> list[str]:
    """Two ids (12 hex digits) of images tagged in the real Docker engine."""
    from pixelbox.runtime.docker_engine import docker_client
    from pixelbox.runtime.errors import BackendUnavailable
    from tests.conftest import docker_required

    try:
        present = sorted(cache_prune.docker_images(docker_client()))
    except BackendUnavailable as exc:
        if docker_required():
            pytest.fail(f"Docker is required here: {exc}")
        pytest.skip(f"no Docker: {exc}")
    if len(present) < 2:
        pytest.skip("fewer than two tagged images in Docker")
    return present[:2]


def test_exports_of_images_gone_from_docker_go_before_older_ones_and_the_current_one_stays(
    tmp_path: Path, docker_ids: list[str]
) -> None:
    from pixelbox.runtime.docker_engine import docker_client

    current, present = docker_ids
    gone = next(f"{n:012x}" for n in range(1, 99) if f"{n:012x}" not in docker_ids)
    export(tmp_path, current, used=1_000)
    export(tmp_path, present, used=2_000)  # used before the export of a vanished image
    export(tmp_path, gone, used=3_000)
    one = tree_bytes(tmp_path / "rootfs" / current)
    report = prune(tmp_path, 2 * one + one // 2, {current}, lambda: cache_prune.docker_images(docker_client()))
    assert names(tmp_path) == {current, present}
    assert report.removed[0].startswith(f"rootfs/{gone}") and "no longer in Docker" in report.removed[0]
    report = prune(tmp_path, 0, {current}, lambda: cache_prune.docker_images(docker_client()))
    assert names(tmp_path) == {current}
    assert any("current kernel image" in line for line in report.kept)


def test_an_export_a_running_processs_checkpoint_names_is_kept_without_its_lock(tmp_path: Path) -> None:
    """A process running code from before the locks still protects its export by its template, and the
    damaged copy of it set aside (its containers may still run on that)."""
    export(tmp_path, "5" * 12, used=1_000)
    damaged = f"{'5' * 12}.damaged.123.abcdef"
    (tmp_path / "rootfs" / damaged / "sbin").mkdir(parents=True)
    bundle = tmp_path / "templates" / f"pbx-{os.getpid()}.{_start()}-0123456789ab" / "bundle"
    bundle.mkdir(parents=True)
    (bundle / "config.json").write_text(json.dumps({"root": {"path": str(tmp_path / "rootfs" / ("5" * 12))}}))
    report = prune(tmp_path, 0)
    assert names(tmp_path) == {"5" * 12, damaged}
    kept = [line.split()[0] for line in report.kept if f"checkpoints of running process {os.getpid()}" in line]
    assert kept == [f"rootfs/{'5' * 12}", f"rootfs/{damaged}"], report.kept


def _start() -> int | None:
    from pixelbox.runtime.workspace import process_start

    return process_start(os.getpid())


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mounts)")
@pytest.mark.parametrize("where", ["bound elsewhere", "bind inside", "tmpfs inside"])
def test_a_mounted_export_is_refused_not_emptied(tmp_path: Path, where: str) -> None:
    """An export bound elsewhere (as a killed runc restore leaves it at ``<state>/criu-root``), or with a
    mount inside it (runc binds a restored sandbox's directories onto the export while it restores), is
    left whole and reported; nothing is deleted through the mount."""
    path = export(tmp_path, "6" * 12, used=1_000)
    other = tmp_path / "other"
    (other / "kept").mkdir(parents=True)
    point = other / "criu-root" if where == "bound elsewhere" else path / "mnt"
    point.mkdir()
    source = path if where == "bound elsewhere" else other / "kept"
    mount = ["-t", "tmpfs", "-o", "size=1m", "tmpfs"] if where == "tmpfs inside" else ["--bind", str(source)]
    subprocess.run(["mount", *mount, str(point)], check=True)
    try:
        kept = point if where == "tmpfs inside" else other / "kept"
        (kept / "file").write_text("kept")
        report = prune(tmp_path, 0)
        assert names(tmp_path) == {"6" * 12}
        assert (path / "usr" / "bin" / "python3").stat().st_size == 64 * 1024
        assert (kept / "file").read_text() == "kept"
        assert len(report.refused) == 1 and str(point) in report.refused[0], report.refused
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


def test_cli_prunes_to_the_budget_it_is_given_and_rejects_a_bad_one(tmp_path: Path) -> None:
    export(tmp_path, "7" * 12, used=1_000)
    env = {**os.environ, "PIXELBOX_RESTORE_CACHE": str(tmp_path)}
    command = [sys.executable, "-m", "pixelbox.cli", "cleanup", "--cache", "--budget"]
    bad = subprocess.run([*command, "lots"], env=env, capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "not a size: 'lots'" in bad.stderr
    dry = subprocess.run([*command, "0", "--dry-run"], env=env, capture_output=True, text=True, check=False)
    assert f"would prune rootfs/{'7' * 12}" in dry.stdout and names(tmp_path) == {"7" * 12}, dry.stderr
    done = subprocess.run([*command, "0"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"pruned rootfs/{'7' * 12}" in done.stdout and "-> 0 B (budget 0 B" in done.stdout
    assert names(tmp_path) == set()


def test_sizes_parse() -> None:
    assert [cache_prune.parse_size(text) for text in ("4G", "500M", "1.5GiB", "123")] == [
        4 * 1024**3,
        500 * 1024**2,
        int(1.5 * 1024**3),
        123,
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mounts)")
def test_cleanup_unmounts_what_a_killed_restore_left_bound_on_an_export(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """runc binds a restored sandbox's IPC directory and workspace onto the shared export while it
    restores; a killed runc leaves them. Cleanup unmounts those of a sandbox that is gone (and nothing
    of a live one's), after which the export can be pruned; nothing below them is deleted."""
    from pixelbox.runtime.backends import criu, restore
    from pixelbox.runtime.backends.base import CleanupReport
    from pixelbox.runtime.mounts import mounts_under
    from pixelbox.runtime.workspace import this_owner

    cache = tmp_path / "cache"
    path = export(cache, "8" * 12, used=1_000)
    sandboxes = {name: tmp_path / f"pbx-{this_owner().tag}-{name}" for name in ("gone", "live")}
    points = {"gone": path / "pixelbox" / "ipc", "live": path / "workspace"}
    for name, sandbox in sandboxes.items():
        sandbox.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(sandbox)], check=True)
        (sandbox / "ipc").mkdir()
        (sandbox / "ipc" / "kernel.json").write_text("{}")
        points[name].mkdir(parents=True)
        subprocess.run(["mount", "--bind", str(sandbox / "ipc"), str(points[name])], check=True)
    subprocess.run(["umount", "-l", str(sandboxes["gone"])], check=True)  # the sandbox closed, the bind stayed
    try:
        monkeypatch.setattr(restore, "CACHE", cache)
        monkeypatch.setattr(criu, "STATE_ROOT", tmp_path / "states")
        monkeypatch.setattr(criu, "restore_ids", list)
        report = CleanupReport()
        criu.remove_orphans(lambda owner: False, report)  # no owner is dead: only the gone sandbox's bind goes
        assert report.directories == [str(points["gone"])]
        assert mounts_under(f"{path}/") == [str(points["live"])]
        assert (sandboxes["live"] / "ipc" / "kernel.json").exists() and (path / "usr" / "bin").is_dir()
        assert len(prune(cache, 0).refused) == 1
    finally:
        for point in (points["live"], sandboxes["live"], points["gone"]):
            subprocess.run(["umount", "-l", str(point)], capture_output=True)


def test_a_new_checkpoint_prunes_the_cache_but_never_the_export_it_runs_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A real runc checkpoint made with a budget of one byte prunes everything it can in the background:
    the old export goes, the one this process's template and restores run on stays (its lock is held),
    and the sandbox restored from it works."""
    import threading

    from pixelbox.runtime import Sandbox
    from pixelbox.runtime.backends import criu, restore
    from pixelbox.runtime.docker_engine import docker_client
    from pixelbox.runtime.image import kernel_image_tag
    from tests.conftest import prepare_fresh, require_backend
    from tests.runtime.test_restore import _require_restore

    options = {**require_backend("runc"), "policy": False, "timeout": 60, "memory": "700m"}  # a key of its own
    _require_restore(criu)
    current = docker_client().images.get(kernel_image_tag()).id.split(":")[-1][:12]
    shared = restore.CACHE / "rootfs" / current
    if (shared / "usr" / "bin").is_dir():  # hard links: the same files, no copy (the export is never written)
        (tmp_path / "rootfs").mkdir()
        subprocess.run(["cp", "-alx", str(shared), str(tmp_path / "rootfs" / current)], check=True)
    export(tmp_path, "0" * 12, used=1_000)
    monkeypatch.setattr(restore, "CACHE", tmp_path)
    monkeypatch.setenv(cache_prune.BUDGET_VARIABLE, "1")
    caplog.set_level(logging.INFO, logger=cache_prune.__name__)
    monkeypatch.setenv(criu.ENABLE_VARIABLE, "1")
    prepare_fresh(options)
    with Sandbox(**options) as sandbox:
        assert sandbox.start_path == "fast", sandbox.info.kernel
        for thread in [t for t in threading.enumerate() if t.name == "pbx-cache-prune"]:
            thread.join()
        assert sandbox.execute("import numpy; print(numpy.__name__)").stdout == "numpy\n"
    assert names(tmp_path) == {current}
    assert f"pruned rootfs/{'0' * 12}" in caplog.text


def test_a_damaged_export_set_aside_stays_while_a_process_holds_its_exports_lock(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    """Containers started on an export before it was set aside as damaged still run on the set-aside tree;
    their processes held the export's lock (they hold it until they exit)."""
    damaged = tmp_path / "rootfs" / f"{'a' * 12}.damaged.123.abcdef"
    (damaged / "sbin").mkdir(parents=True)
    (damaged / "sbin" / "init").write_bytes(b"still run by a container")
    report = prune(tmp_path, 0)
    assert (damaged / "sbin" / "init").read_bytes() == b"still run by a container"
    assert any(line.startswith(f"rootfs/{damaged.name}") and "in use" in line for line in report.kept), report.kept
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait()
    report = prune(tmp_path, 0)
    assert not damaged.exists(), report.lines()
    assert not list((tmp_path / "locks").glob("*.lock"))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mounts)")
def test_cleanup_leaves_an_export_a_restore_is_in_flight_on_then_unmounts_tini_and_a_dead_owners_bind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """While a live owner's restore has the export bound at ``<state>/criu-root``, a cleanup of dead owners
    touches nothing on that export (the binds on it may be that restore's); once it is done, it unmounts
    a dead owner's bind and the tini bind runc leaves at ``/sbin/docker-init`` (its source, on the root
    file system, names no sandbox), after which the export can be pruned."""
    from pixelbox.runtime.backends import criu, restore
    from pixelbox.runtime.backends.base import CleanupReport
    from pixelbox.runtime.mounts import mounts_under
    from pixelbox.runtime.workspace import this_owner

    cache = tmp_path / "cache"
    path = export(cache, "9" * 12, used=1_000)
    tini, dead = tmp_path / "tini-static", tmp_path / "pbx-999999.1-gone" / "ipc"
    tini.write_text("tini")
    dead.mkdir(parents=True)
    criu_root = tmp_path / "states" / f"pbx-{this_owner().tag}-live-r0123456789ab" / "criu-root"
    points = [path / "usr" / "sbin" / "docker-init", path / "pixelbox" / "ipc"]
    points[0].parent.mkdir(parents=True)
    points[0].write_text("")
    points[1].mkdir(parents=True)
    criu_root.mkdir(parents=True)
    for source, point in ((tini, points[0]), (dead, points[1]), (path, criu_root)):
        subprocess.run(["mount", "--bind", str(source), str(point)], check=True)
    try:
        monkeypatch.setattr(restore, "CACHE", cache)
        monkeypatch.setattr(criu, "STATE_ROOT", tmp_path / "states")
        monkeypatch.setattr(criu, "restore_ids", list)
        report = CleanupReport()
        criu.remove_orphans(lambda owner: owner.pid == 999999, report)
        assert report.directories == [] and sorted(mounts_under(f"{path}/")) == sorted(map(str, points))
        subprocess.run(["umount", str(criu_root)], check=True)  # the restore is done
        criu.remove_orphans(lambda owner: owner.pid == 999999, report)
        assert sorted(report.directories) == sorted(map(str, points)) and not mounts_under(f"{path}/")
        assert tini.read_text() == "tini" and dead.is_dir()
        assert prune(cache, 0).refused == [] and names(cache) == set()
    finally:
        for point in (*points, criu_root):
            subprocess.run(["umount", "-l", str(point)], capture_output=True)


def test_an_entry_that_cannot_be_measured_is_noted_and_the_prune_goes_on(tmp_path: Path) -> None:
    """An entry replaced by a file while the pruner lists the cache (``ENOTDIR`` when it is opened as a
    directory) is left as it is and said in the report; the rest is pruned as usual."""
    export(tmp_path, "b" * 12, used=1_000)
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "pbx-999999.1-0123456789ab").write_text("not a checkpoint")
    report = prune(tmp_path, 0)
    assert names(tmp_path) == set()
    assert (tmp_path / "templates" / "pbx-999999.1-0123456789ab").read_text() == "not a checkpoint"
    assert any("could not measure templates/pbx-999999.1-0123456789ab" in note for note in report.notes), report.notes


def test_recording_a_size_never_moves_a_use_stamp_back(tmp_path: Path) -> None:
    """A process stamps its use of an export (a restore) while the pruner records the export's size:
    the stamp never goes back in time (it did when the size was written into the lock file and the
    stamp read before was put back: a touch in between was lost)."""
    import threading

    name = "c" * 12
    export(tmp_path, name, used=1_000)
    lock = cache_locks.lock_path(tmp_path, "rootfs", name)
    stop = threading.Event()

    def stamp() -> None:
        while not stop.is_set():
            cache_locks.touch(tmp_path, "rootfs", name)

    toucher = threading.Thread(target=stamp)
    toucher.start()
    stamps = []
    try:
        for size in range(1_000):
            cache_locks.record_size(tmp_path, "rootfs", name, size)
            stamps.append(lock.stat().st_mtime_ns)
    finally:
        stop.set()
        toucher.join()
    assert stamps == sorted(stamps)
    assert cache_locks.recorded_size(tmp_path, "rootfs", name) == 999
