"""Kernels restored from a checkpoint are as clean and isolated as cold ones, on both runtimes:
runsc's own checkpoint/restore (``PIXELBOX_RUNSC_RESTORE=1``) and runc's with CRIU
(``PIXELBOX_RUNC_RESTORE=1``).

Real containers throughout (gVisor, or runc with the system's CRIU), driven directly from a
checkpoint this process takes after the kernel's imports. The probes are the local fast path's
(tests/runtime/test_fresh.py): what one sandbox did is never visible to the next, every random
source differs, the host's environment never arrives; and the restored kernel behaves as a
container kernel must (interrupt, crash reasons, limits, cleanup of everything it ran).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pixelbox.runtime import Sandbox
from pixelbox.runtime.backends import criu, restore
from pixelbox.runtime.errors import BackendUnavailable
from tests.conftest import docker_required, prepare_fresh, require_backend
from tests.runtime.test_fresh import DIRTY, PROBE, RANDOMS, _clean, _run
from tests.runtime.test_lifecycle import test_cleanup_removes_what_a_killed_host_left_behind as killed_host_cleanup

PATHS = {"runsc": restore, "runc": criu}
"""The restore path of each runtime: its switch, its availability check, its containers."""
FAKE_OWNERS = (999999, 999998)
"""The made-up dead owners of the runc state these tests plant: cleanup there accepts only them, so it
never reaches a live sandbox of a test session running beside this one (it looks at the real exports)."""


@pytest.fixture(scope="module", params=sorted(PATHS))
def restored(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """Options of a sandbox on one runtime with its restore path switched on for this module."""
    path = PATHS[request.param]
    options = {**require_backend(request.param), "policy": False, "timeout": 60}
    _require_restore(path)
    with pytest.MonkeyPatch.context() as env:
        env.setenv(path.ENABLE_VARIABLE, "1")
        yield options


def _require_restore(path: Any) -> None:
    """Skip where the runtime's restore path cannot run; fail instead where CI requires the container
    backends, since scripts/setup.sh installs what both restore paths need."""
    try:
        path.check_available()
    except BackendUnavailable as exc:
        if docker_required():
            pytest.fail(f"restore path required here but unavailable: {exc}")
        pytest.skip(str(exc))


def _restored_ids(options: dict[str, Any]) -> list[str]:
    return PATHS[options["runtime"]].restore_ids()


def _fresh(options: dict[str, Any], **extra: Any) -> Sandbox:
    prepare_fresh({**options, **extra})
    sb = Sandbox(**{**options, **extra})
    assert sb.start_path == "fast", sb.info.kernel
    return sb


def test_a_restored_kernel_is_a_confined_container(restored: dict[str, Any]) -> None:
    """The fast path is taken, the kernel runs as uid 1000 with no network interface but loopback,
    and its container is gone from runsc (and its cgroup from the host) once the sandbox closes."""
    with _fresh(restored) as sb:
        info = sb.info
        container = info.isolation["container_id"]
        assert container.startswith(sb.layout.root.name)
        assert container in _restored_ids(restored)
        assert info.isolation["network_isolated"] is True
        assert info.kernel["uid"] == 1000
        probe = "import os, socket\nprint(os.getuid(), sorted(n for _, n in socket.if_nameindex()), os.getcwd())"
        assert _run(sb, probe).split(" ", 1)[0] == "1000"
        assert "/workspace" in _run(sb, "import os\nprint(os.getcwd())")
        assert float(sb.kernel_cpu_seconds() or 0) > 0
    assert container not in _restored_ids(restored)


def test_nothing_of_one_restored_sandbox_reaches_the_next(
    restored: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Variables, workspace, /tmp and /dev/shm files, environment and patched modules of A are
    invisible to B (while A runs and after it closed); the host's environment never arrives."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-of-the-restore-tests")
    first = _fresh(restored, env={"ONLY_A": "sandbox-a-option-secret"})
    try:
        _run(first, DIRTY)
        assert _run(first, "import os\nprint(os.environ['ONLY_A'])").strip() == "sandbox-a-option-secret"
        with _fresh(restored) as during:
            _clean(json.loads(_run(during, PROBE)))
    finally:
        first.close()
    with _fresh(restored) as after:
        _clean(json.loads(_run(after, PROBE)))
        assert _run(after, "import os\nprint(os.environ.get('OPENAI_API_KEY'))") == "None\n"


def test_random_state_and_keys_differ_between_restored_sandboxes(restored: dict[str, Any]) -> None:
    """Every random source is reseeded after the restore, and each sandbox has its own HMAC key."""
    draws, keys = [], []
    for _ in range(3):
        with _fresh(restored) as sb:
            draws.append(json.loads(_run(sb, RANDOMS)))
            keys.append(sb.connection_info["key"])
    for source in draws[0]:
        values = [d[source] for d in draws]
        assert len(set(values)) == len(values), f"{source} repeated across restored sandboxes: {values}"
    assert len(set(keys)) == len(keys)


def test_interrupt_and_crash_reasons_of_a_restored_kernel(restored: dict[str, Any]) -> None:
    """A runaway cell is interrupted at its deadline (state kept); a kernel that exits or dies of a
    signal is reported as a cold container kernel is, and the next execution gets a fresh one."""
    with _fresh(restored) as sb:
        _run(sb, "kept = 41")
        spin = sb.execute("while True:\n    pass", timeout=3)
        assert spin.status == "timeout", (spin.status, spin.stderr)
        assert _run(sb, "print(kept + 1)").strip() == "42"
        exited = sb.execute("import os\nos._exit(3)")
        assert exited.status == "crashed" and exited.crash_reason == "exited with code 3", exited.crash_reason
        assert _run(sb, "print('again')").strip() == "again"
        assert sb.start_path == "fast"
        killed = sb.execute("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
        assert killed.status == "crashed" and "signal 11" in str(killed.crash_reason), killed.crash_reason


def test_memory_limit_holds_in_a_restored_kernel(restored: dict[str, Any]) -> None:
    """The restore bundle's memory limit is in force: a cell that allocates past it does not finish."""
    with _fresh(restored, memory="256m") as sb:
        bomb = sb.execute("b = bytearray(1024 * 1024 * 1024)\nprint('allocated')", timeout=60)
        assert "allocated" not in bomb.stdout, (bomb.status, bomb.crash_reason, bomb.error)


CONFINEMENT = r"""
import ctypes, errno, json, os, resource, socket

status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
keys = ("Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters")
facts = {key: status.get(key, "").strip() for key in keys}
libc = ctypes.CDLL(None, use_errno=True)
facts["unshare_user"] = errno.errorcode.get(ctypes.get_errno(), "ok") if libc.unshare(0x10000000) else "allowed"
mounts = [line.split() for line in open("/proc/self/mounts")]
facts["proc_masked_or_read_only"] = sorted(m[1] for m in mounts if m[1].startswith("/proc/"))
facts["read_only"] = sorted(m[1] for m in mounts if "ro" in m[3].split(",") and m[1] in ("/", "/proc/sys", "/sys"))
limits = (resource.RLIMIT_NOFILE, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE)
facts["rlimits"] = [resource.getrlimit(r) for r in limits]
facts["interfaces"] = sorted(name for _, name in socket.if_nameindex())
facts["hostname"] = socket.gethostname()
print(json.dumps(facts))
"""


def test_run_command_in_a_restored_kernel(restored: dict[str, Any]) -> None:
    """``runc exec`` / ``runsc exec`` stand in for ``docker exec``: the kernel's uid and workspace, the
    sandbox's own environment (not the template's), exit codes, a missing program, the deadline, and on
    runc the container's seccomp profile for the command too."""
    with _fresh(restored, env={"ONLY_HERE": "sandbox-option"}) as sb:
        whoami = sb.run_command(["sh", "-c", "id -u; pwd; echo $ONLY_HERE $PBX_X"], env={"PBX_X": "seen"})
        assert whoami.ok and whoami.stdout.split() == ["1000", "/workspace", "sandbox-option", "seen"], whoami
        failed = sb.run_command(["sh", "-c", "echo err >&2; exit 3"])
        assert (failed.exit_code, failed.stderr) == (3, "err\n")
        assert sb.run_command(["no-such-program-pbx"]).exit_code == 127
        sb.run_command(["sh", "-c", "echo from-command > made.txt"])
        assert _run(sb, "print(open('made.txt').read().strip())") == "from-command\n"
        userns = "import ctypes, os; print(ctypes.CDLL(None, use_errno=True).unshare(0x10000000), ctypes.get_errno())"
        if restored["runtime"] == "runc":  # EPERM: Docker's profile (gVisor has its own user namespaces)
            assert sb.run_command(["python", "-c", userns]).stdout.split() == ["-1", "1"]
        slow = sb.run_command(["sleep", "60"], timeout=1)
        assert slow.timed_out and slow.exit_code is None
        assert _run(sb, "print('still here')") == "still here\n"


def test_cleanup_removes_what_a_killed_host_restored(restored: dict[str, Any]) -> None:
    """The lifecycle test on a restored kernel: after its host is SIGKILLed, the restored container,
    its cgroups and the template are the dead owner's leftovers, and `pixelbox cleanup` removes them."""
    killed_host_cleanup(restored)


COMMAND = "id; grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status; ulimit -n; ulimit -f; pwd; hostname; echo $PBX_X"


@pytest.mark.parametrize("runtime", sorted(PATHS))
def test_restores_by_default_and_its_kernel_and_commands_are_confined_as_cold_ones(runtime: str) -> None:
    """With ``PIXELBOX_RUNSC_RESTORE=0`` / ``PIXELBOX_RUNC_RESTORE=0`` a sandbox starts cold. Without the
    variable an option set starts cold twice (its checkpoint is made in the background from the second
    use, no sandbox waits for it) and is restored once the checkpoint is there (waited for here through
    ``prepare_fresh``, as a pool does). The restored kernel
    and a command run beside it (``runsc exec`` / ``runc exec``, as ``docker exec``) see the same uid,
    capabilities, rlimits, read-only and masked paths, interfaces and environment as in the cold Docker
    container; on runc also Docker's seccomp profile (creating a user namespace is refused)."""
    path = PATHS[runtime]
    options = {**require_backend(runtime), "policy": False, "timeout": 60, "memory": "900m"}  # a key of its own
    _require_restore(path)
    seen: list[tuple[str, Any]] = []
    for variable in ("0", None, None, None):
        with pytest.MonkeyPatch.context() as env:
            if variable is None:
                env.delenv(path.ENABLE_VARIABLE, raising=False)
            else:
                env.setenv(path.ENABLE_VARIABLE, variable)
            if len(seen) == 3:
                prepare_fresh(options)  # the checkpoint made since the second use, now waited for
            with Sandbox(**options) as sb:
                command = sb.run_command(["sh", "-c", COMMAND], env={"PBX_X": "given"})
                assert command.exit_code == 0, command.stderr
                seen.append((sb.start_path, (json.loads(_run(sb, CONFINEMENT)), command.stdout)))
    assert [path for path, _ in seen] == ["cold", "cold", "cold", "fast"]
    assert seen[3][1] == seen[0][1]
    kernel, output = seen[3][1]
    assert kernel["Uid"].split()[0] == "1000" and kernel["CapEff"] == "0000000000000000"
    assert output.startswith("uid=1000") and output.endswith("/workspace\nsandbox\ngiven\n")
    if runtime == "runc":  # Docker's masks and seccomp profile (gVisor masks and filters in its own kernel)
        assert kernel["unshare_user"] == "EPERM" and kernel["Seccomp"] == "2"
        assert "/proc/keys" in kernel["proc_masked_or_read_only"]


def test_criu_refuses_a_configuration_directory_someone_else_made(tmp_path: Path) -> None:
    """CRIU runs as root with the configuration in its directory on ``/dev/shm`` (writable by every
    user): one made by another user, open to others, or a link is refused, never used."""
    if os.geteuid() != 0:
        pytest.skip("needs root (the directory must be root's)")
    planted = tmp_path / "theirs"
    planted.mkdir(mode=0o700)
    os.chown(planted, 1000, 1000)
    (tmp_path / "link").symlink_to(tmp_path / "mine")
    for path in (planted, tmp_path / "link"):
        with pytest.raises(BackendUnavailable, match="root's alone"):
            criu._private_directory(path)
    opened = tmp_path / "open"
    opened.mkdir()
    opened.chmod(0o755)
    with pytest.raises(BackendUnavailable):
        criu._private_directory(opened)
    criu._private_directory(tmp_path / "mine")
    assert (tmp_path / "mine").stat().st_mode & 0o777 == 0o700


def test_cleanup_removes_runc_state_a_stopped_restore_left(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A restore stopped before runc wrote its state leaves a directory runc can neither list nor
    delete; `pixelbox cleanup` removes it for a dead owner, never for a live one or a loadable state."""
    from pixelbox.runtime.backends.base import CleanupReport

    monkeypatch.setattr(criu, "STATE_ROOT", tmp_path)
    monkeypatch.setattr(criu, "restore_ids", list)
    dead, alive, loadable = "pbx-999999.1-dead-r0123456789ab", "pbx-1.1-live-r0123456789ab", "pbx-999998.1-x-rab"
    for name in (dead, alive, loadable):
        (tmp_path / name).mkdir()
    (tmp_path / loadable / "state.json").write_text("{}")
    report = CleanupReport()
    criu.remove_orphans(lambda owner: owner.pid in FAKE_OWNERS, report)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive, loadable])
    assert report.directories == [str(tmp_path / dead)]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a bind mount)")
@pytest.mark.parametrize("restore", ["stopped", "stuck"])
def test_cleanup_of_a_runc_restore_leaves_the_shared_root_it_had_bound(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, restore: str
) -> None:
    """A killed or stuck `runc restore` leaves the container's root (the export every restore shares)
    bound at ``<state>/criu-root`` in the host's mount namespace. Stopped before runc wrote its
    ``state.json``, we remove the state ourselves; stuck after (runc writes it before it unmounts),
    ``runc delete --force`` removes it recursively. Either way the bind is unmounted first and nothing
    is deleted through it."""
    from pixelbox.runtime.backends.base import CleanupReport
    from pixelbox.runtime.mounts import mounts_under

    states, shared = tmp_path / "states", tmp_path / "export"
    (shared / "usr" / "bin").mkdir(parents=True)
    (shared / "usr" / "bin" / "python3").write_text("kept")
    state = states / f"pbx-999999.1-{restore}-r0123456789ab"
    (state / "criu-root").mkdir(parents=True)
    (state / ("state.json" if restore == "stuck" else "restore.log")).write_text("{}")
    subprocess.run(["mount", "--bind", str(shared), str(state / "criu-root")], check=True)
    try:
        monkeypatch.setattr(criu, "STATE_ROOT", states)
        monkeypatch.setattr(criu, "restore_ids", lambda: [state.name] if restore == "stuck" else [])
        criu.remove_orphans(lambda owner: owner.pid in FAKE_OWNERS, CleanupReport())
        assert (shared / "usr" / "bin" / "python3").read_text() == "kept"
        assert not mounts_under(f"{state}/")
        assert restore == "stuck" or not state.exists()
    finally:
        subprocess.run(["umount", "-l", str(state / "criu-root")], capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a bind mount)")
def test_a_stale_mount_runc_left_on_the_shared_root_is_detached(tmp_path: Path) -> None:
    """`runc restore` binds a sandbox's directories onto the shared export while it restores; one it left
    there after the directory was deleted (seen: a sandbox's IPC directory over ``/pixelbox/ipc``) would
    fail every later runsc start, so it is detached before the export is used. A mount whose source
    still exists is left alone."""
    from pixelbox.runtime.mounts import mounts_under

    rootfs, gone, kept = tmp_path / "export", tmp_path / "ipc", tmp_path / "work"
    for path in (rootfs / "pixelbox" / "ipc", rootfs / "workspace", gone, kept):
        path.mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(gone), str(rootfs / "pixelbox" / "ipc")], check=True)
    subprocess.run(["mount", "--bind", str(kept), str(rootfs / "workspace")], check=True)
    try:
        gone.rmdir()
        restore.detach_stale_mounts(rootfs)
        assert mounts_under(f"{rootfs}/") == [str(rootfs / "workspace")]
    finally:
        for point in mounts_under(f"{rootfs}/"):
            subprocess.run(["umount", "-l", point], capture_output=True)
