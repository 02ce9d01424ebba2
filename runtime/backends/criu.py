"""runc checkpoint/restore with CRIU: fresh runc kernels restored from a checkpoint taken after the imports.

The same template scheme as the runsc restore path (:mod:`.restore`: phase one parked in a template
container, phase two per sandbox), with ``runc checkpoint`` / ``runc restore`` driving CRIU.
The default fast path of runc wherever it can run (root, runc, and a CRIU that works on this kernel:
``PIXELBOX_CRIU`` or the one ``scripts/install-criu.sh`` unpacks, see :func:`find_criu`); off with
``PIXELBOX_RUNC_RESTORE=0``. As on runsc, an option set's checkpoint is made in the background from
its second use (used once ready), or ahead by ``prepare_fresh`` (the pool).

Two properties of this machine shape how CRIU is run (benchmarks/README.md, "Container fast paths"):

- No process here has ``CAP_SYS_RESOURCE`` (the VM's bounding set lacks it), and CRIU reads every
  dumped task's rlimits with ``prlimit``, which the kernel allows another process only with that
  capability or with the same real uid and gid as the target. So the *dump* runs as the kernel's
  uid 1000 holding root's other capabilities as ambient ones, in CRIU's ``--unprivileged`` mode
  (made for a capable non-root user). The restore runs as root.
- CRIU keeps its kernel-feature cache only on a tmpfs (``/run`` is not one here); without it every
  call re-probes the kernel (about 0.1 s). In ``--unprivileged`` mode the cache lives in
  ``$XDG_RUNTIME_DIR``, pointed at a private directory on ``/dev/shm``.

Each restore gets what a cold Docker runc container gets: Docker's own seccomp profile, masked and
read-only ``/proc`` paths and device rules (read once from a probe container Docker starts with the
cold kernel's security options), no capabilities, no-new-privileges, uid 1000, read-only root,
no network, its own workspace, inputs and IPC bind mounts, rlimits, and a pixelbox cgroup holding
the memory limit (OOM on record after exit, as for cold containers). ``runc restore`` runs in the
foreground as the container's parent, so the kernel's exit status is its exit status.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import json
import os
import shutil
import stat
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import IO, Any

from pixelbox.runtime.backends import restore
from pixelbox.runtime.backends.base import CleanupReport, KernelHandle, Owned, describe_exit
from pixelbox.runtime.backends.cgroups import BACKSTOP_MARGIN, KernelCgroup
from pixelbox.runtime.backends.labels import LABEL, OWNER_LABEL, OWNER_START_LABEL
from pixelbox.runtime.commands import DRAIN_S, Captured, CommandSpec, run_process
from pixelbox.runtime.errors import BackendUnavailable
from pixelbox.runtime.mounts import Mount, mount_table, mounts_exposing, mounts_under, unmount, unmount_all_under
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.workspace import Layout, belongs_to, owner_of, remove_tree, this_owner

ENABLE_VARIABLE = "PIXELBOX_RUNC_RESTORE"
"""Host environment variable: ``0`` turns the runc restore path off (it is on by default where it can
run); ``1`` makes each option set's checkpoint on its first use instead of its second."""
CRIU_VARIABLE = "PIXELBOX_CRIU"
"""Host environment variable naming the CRIU binary (or wrapper) to use."""
CRIU_CANDIDATES = ("/opt/pixelbox-criu/criu", "/usr/sbin/criu")
"""Where :func:`find_criu` looks without ``PIXELBOX_CRIU``: what ``scripts/install-criu.sh`` unpacks
(Debian 12's criu 3.17 cannot even start on a 6.x kernel: "Unexpected rt vDSO area bounds"), then
the system's."""
RUNC = "runc"
STATE_ROOT = Path("/run/pixelbox-runc")
"""runc's ``--root``: the containers of this module, apart from Docker's."""
CRIU_HOME = Path("/dev/shm/pixelbox-criu")
"""CRIU's kernel-feature cache (must be a tmpfs) and the wrappers' configuration."""
WRAPPERS = restore.CACHE / "criu"
KERNEL_UID = 1000
DOCKER_BUNDLES = (
    "/var/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby/{id}/config.json",
    "/run/containerd/io.containerd.runtime.v2.task/moby/{id}/config.json",
)
"""Where Docker 20.10 (its own containerd, or the system's) keeps the OCI spec of a running container."""
SECURITY_KEYS = ("seccomp", "maskedPaths", "readonlyPaths")
EXIT_PATIENCE_S = 10.0
RESTORE_OPTIONS = ("unprivileged", "verbosity=1")
"""CRIU's options for a restore, from the file runc's ``org.criu.config`` annotation names (it overrides
runc's own): the kernel-feature cache in ``--unprivileged`` mode, and a log of errors only (runc asks
for a debug log of thousands of lines; about 30 ms a restore)."""


def enabled() -> bool:
    """Whether runc sandboxes started with ``fast_start`` are restored in this process: by default
    wherever the path can run (:func:`check_available`: root, runc, a working CRIU), not with
    ``PIXELBOX_RUNC_RESTORE=0``."""
    return restore.switched_on(ENABLE_VARIABLE, _available)


def eager() -> bool:
    """Whether a first start waits for its checkpoint (``PIXELBOX_RUNC_RESTORE=1``, :func:`restore.asked_eagerly`)."""
    return restore.asked_eagerly(ENABLE_VARIABLE)


@functools.lru_cache(maxsize=1)
def _available() -> bool:
    """Whether the path may be tried: the cheap checks only. ``criu check`` (0.1-0.2 s) runs when the
    first checkpoint is made, in its own thread; if it fails, that option set starts cold."""
    try:
        _check_tools()
    except BackendUnavailable:
        return False
    return any(os.access(candidate, os.X_OK) for candidate in _criu_candidates())


def _criu_candidates() -> list[str]:
    named = os.environ.get(CRIU_VARIABLE)
    return [named] if named else list(CRIU_CANDIDATES)


@functools.lru_cache(maxsize=1)
def find_criu() -> str:
    """The first CRIU whose ``criu check`` passes on this kernel; BackendUnavailable if none does."""
    tried: list[str] = []
    for candidate in _criu_candidates():
        if not os.access(candidate, os.X_OK):
            tried.append(f"{candidate}: missing")
            continue
        done = subprocess.run([candidate, "check"], capture_output=True, text=True, timeout=60, check=False)
        if done.returncode == 0:
            return candidate
        tried.append(f"{candidate}: {(done.stderr or done.stdout).strip()[-300:]}")
    raise BackendUnavailable(f"no working CRIU for the runc restore path ({'; '.join(tried)})")


def check_available() -> None:
    """Raise ``BackendUnavailable`` when this host cannot run the runc restore path."""
    _check_tools()
    find_criu()


def _check_tools() -> None:
    if os.geteuid() != 0:
        raise BackendUnavailable("the runc restore path drives runc and CRIU directly, which needs root")
    for tool in (RUNC, "setpriv"):
        if shutil.which(tool) is None:
            raise BackendUnavailable(f"the runc restore path needs {tool}")
    if not Path(restore.TINI).exists():
        raise BackendUnavailable(f"the runc restore path needs {restore.TINI}")


def _capabilities() -> str:
    """This process's effective capabilities as ``setpriv`` list (``+cap_N,...``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            bits = int(line.split()[1], 16)
            return ",".join(f"+cap_{n}" for n in range(64) if bits >> n & 1)
    raise BackendUnavailable("cannot read this process's capabilities")


@functools.lru_cache(maxsize=1)
def wrappers() -> tuple[str, str]:
    """The ``--criu`` programs runc is given: (dump as uid 1000 with root's capabilities, restore)."""
    criu = find_criu()
    _private_directory(CRIU_HOME)
    config = CRIU_HOME / "criu.conf"
    config.write_text("unprivileged\n")
    (CRIU_HOME / "restore.conf").write_text("".join(f"{option}\n" for option in RESTORE_OPTIONS))
    WRAPPERS.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = f"export XDG_RUNTIME_DIR={CRIU_HOME} CRIU_CONFIG_FILE={config}\n"
    caps = _capabilities()
    uid = KERNEL_UID
    as_kernel = f"setpriv --reuid {uid} --regid {uid} --clear-groups --inh-caps={caps} --ambient-caps={caps} "
    scripts = {"dump": f'{env}exec {as_kernel}{criu} "$@"\n', "restore": f'{env}exec {criu} "$@"\n'}
    paths = []
    for name, body in scripts.items():
        path = WRAPPERS / f"criu-{name}"
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_text(f"#!/bin/sh\n{body}")
        partial.chmod(0o700)
        partial.replace(path)
        paths.append(str(path))
    return paths[0], paths[1]


def _private_directory(path: Path) -> None:
    """Make ``path`` root's own directory (0700), or refuse one someone else made first: CRIU runs as
    root with the configuration it finds there, and ``/dev/shm`` is writable by every user."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    found = os.lstat(path)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != 0 or found.st_mode & 0o077:
        raise BackendUnavailable(f"{path} is not a directory of root's alone (mode 0700); refusing to run CRIU with it")


def runc(*args: str, timeout: float = restore.CONTROL_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run ``runc`` on our state root."""
    command = [RUNC, "--root", str(STATE_ROOT), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def docker_security(client: Any, image: str) -> dict[str, Any]:
    """Docker's seccomp profile, masked and read-only paths and device rules for a cold kernel's container.

    Read from the OCI spec Docker writes for a probe container started with the cold kernel's
    security options, so a restored kernel is confined exactly as a cold one (whatever this
    engine's version puts there), without a copy of Docker's profile in pixelbox."""

    owner = this_owner()
    probe = client.containers.run(
        image,
        command=["sleep", "60"],
        detach=True,
        init=True,
        runtime="runc",
        user=f"{KERNEL_UID}:{KERNEL_UID}",
        network_mode="none",
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        name=f"pixelbox-probe-{uuid.uuid4().hex[:12]}",
        labels={LABEL: "1", OWNER_LABEL: str(owner.pid), OWNER_START_LABEL: str(owner.start)},
    )
    try:
        for pattern in DOCKER_BUNDLES:
            for found in glob.glob(pattern.format(id=probe.id)):
                docker_spec = json.loads(Path(found).read_text())
                linux = docker_spec.get("linux", {})
                security = {key: linux[key] for key in SECURITY_KEYS if key in linux}
                security["devices"] = linux.get("resources", {}).get("devices", [])
                if "seccomp" not in security:
                    raise BackendUnavailable("Docker runs runc containers without seccomp here; nothing to copy")
                return security
    finally:
        probe.remove(force=True)
    raise BackendUnavailable("cannot find the OCI spec Docker wrote for its probe container")


def confine(config: dict[str, Any], security: dict[str, Any], memory: int | None = None) -> dict[str, Any]:
    """``config`` (a spec from :func:`restore.spec`) with Docker's confinement; ``memory``: the
    container's own limit when a pixelbox group holds the real one."""
    linux = config["linux"]
    for key in SECURITY_KEYS:
        if key in security:
            linux[key] = security[key]
    linux["resources"]["devices"] = security["devices"]
    if memory is not None:
        linux["resources"]["memory"] = {"limit": memory, "swap": memory}
    return config


class RuncRestoredHandle(KernelHandle):
    """A kernel restored into its own runc container; ``runc restore`` in the foreground is its parent."""

    def __init__(
        self, process: subprocess.Popen[bytes], container: str, bundle: Path, group: KernelCgroup, memory: int
    ):
        self.process = process
        self.container = container
        self.bundle = bundle
        self.group = group
        self.memory = memory
        self.cgroup = f"{group.path}/{container}"
        self.init_pid: int | None = None
        """The container's init (tini) on the host, once known (a spare's, see ``restore_parked``)."""
        self.exited = threading.Event()
        self.exit_code: int | None = None
        threading.Thread(target=self._wait, name=f"pbx-wait-{container[-12:]}", daemon=True).start()

    def _wait(self) -> None:
        """runc exits with the container's init (tini): the kernel's code, or 128+N for signal N."""
        self.exit_code = self.process.wait()
        self.exited.set()

    def alive(self) -> bool:
        """``runc restore`` runs and, when known, so does the container's init: a container killed just as
        its restore ended can leave ``runc restore`` waiting for ever (seen here with a spare killed then)."""
        return not self.exited.is_set() and (self.init_pid is None or restore.running(self.init_pid))

    def exit_reason(self) -> str:
        """How the kernel ended; asked once :meth:`alive` says it did, which can be on seeing the init gone a
        moment before ``runc restore``, its parent, exits with its status: that exit is waited for."""
        failed = _errors(self.bundle / "criu" / "restore.log")
        if failed:  # runc exits non-zero before the kernel ever ran: say why CRIU could not restore it
            return f"runc restore failed: {failed}"
        self.exited.wait(EXIT_PATIENCE_S)
        return describe_exit(self.exit_code, oom=self.group.oom_killed(), memory=self.memory)

    def cpu_seconds(self) -> float | None:
        return self.group.cpu_seconds()

    def interrupt(self) -> None:
        with contextlib.suppress(Exception):
            runc("kill", self.container, "INT")

    def kill(self) -> None:
        """Stop the kernel, then remove runc's state, the pixelbox group and the bundle; never raises."""
        with contextlib.suppress(Exception):
            runc("kill", "--all", self.container, "KILL")
        if not self.exited.wait(EXIT_PATIENCE_S):
            with contextlib.suppress(OSError):
                self.process.kill()
        with contextlib.suppress(Exception):
            delete(self.container)
        _forget_unloadable(self.container)
        with contextlib.suppress(Exception):
            self.group.remove()
        remove_tree(self.bundle)


class RuncRestorePath(restore.RestorePath):
    """The runc + CRIU fast path of one Docker backend (runtime runc)."""

    engine = "runc"

    def __init__(self, client: Any, image: str, image_id: str, mounts: restore.Mounts, pids_headroom: int) -> None:
        super().__init__(client, image, image_id, mounts, pids_headroom)
        self._security: dict[str, Any] | None = None

    def security(self) -> dict[str, Any]:
        """Docker's confinement of a cold runc kernel (read once per backend)."""
        if self._security is None:
            self._security = docker_security(self.client, self.image)
        return self._security

    def _build(self, template: restore.Template, options: SandboxOptions, env: dict[str, str]) -> None:
        """Run the template to its parked point under runc, then checkpoint it with CRIU."""
        check_available()
        dump, _ = wrappers()
        security = self.security()
        dirs, container, config = self._template_bundle(template, options, env)
        (dirs["bundle"] / "config.json").write_text(json.dumps(confine(config, security)))
        STATE_ROOT.mkdir(mode=0o700, exist_ok=True)
        # CRIU can dump pipes as stdio, not a host file outside the container: a pipe drained to the log
        parked = subprocess.Popen(
            [RUNC, "--root", str(STATE_ROOT), "run", "--bundle", str(dirs["bundle"]), container],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        assert parked.stdout is not None
        threading.Thread(target=_drain, args=(parked.stdout, template.root / "log"), daemon=True).start()
        try:
            restore.wait_parked(dirs["ipc"], container, time.monotonic() + restore.TEMPLATE_TIMEOUT_S)
            work = template.root / "dump"
            saved = runc(
                "--criu",
                dump,
                "checkpoint",
                "--image-path",
                str(template.image),
                "--work-path",
                str(work),
                container,
                timeout=restore.TEMPLATE_TIMEOUT_S,
            )
            if saved.returncode != 0:
                why = f"{saved.stderr.strip()[-300:]} {_errors(work / 'dump.log')}"
                raise BackendUnavailable(f"runc checkpoint failed: {why}")
        finally:
            runc("kill", "--all", container, "KILL")
            with contextlib.suppress(subprocess.TimeoutExpired):
                parked.wait(EXIT_PATIENCE_S)
            delete(container)

    def restore_parked(self, template: restore.Template, layout: Layout, options: SandboxOptions) -> KernelHandle:
        """A spare: a kernel restored into ``layout`` and left parked (:meth:`restore.RestorePath.restore_parked`);
        returns once runc recorded the restored container (its ``state.json``, naming the init process) and
        CRIU has let go of it (:func:`_settled`)."""
        handle = self.restore(template, layout, options, None)
        state = STATE_ROOT / handle.container / "state.json"
        deadline = time.monotonic() + options.start_timeout
        while handle.alive() and not _settled(handle) and time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                handle.init_pid = handle.init_pid or int(json.loads(state.read_text())["init_process_pid"])
            time.sleep(0.005)
        if not _settled(handle):
            handle.kill()
            raise BackendUnavailable(f"the runc restore of a spare did not finish: {handle.exit_reason()}")
        return handle

    def restore(
        self, template: restore.Template, layout: Layout, options: SandboxOptions, env: dict[str, str] | None
    ) -> RuncRestoredHandle:
        """A kernel restored from ``template`` into ``layout``'s directories, with ``env`` (None: parked) and
        ``options``' limits."""
        _, restorer = wrappers()
        self.used(template)
        restore.detach_stale_mounts(template.rootfs)
        container = f"{layout.root.name}-r{uuid.uuid4().hex[:12]}"
        memory = int(options.memory)
        group = KernelCgroup(container, memory)
        group.create()
        group.watch_oom()
        bundle = layout.root / f"bundle-{container[-12:]}"
        bundle.mkdir(mode=0o700)
        binds = self._binds(layout.ipc, layout.work, layout.inputs)
        config = restore.spec(
            template.rootfs, self._args(), template.env, binds, options, f"{group.path}/{container}", options.pids
        )

        config["annotations"] = {"org.criu.config": str(CRIU_HOME / "restore.conf")}
        (bundle / "config.json").write_text(json.dumps(confine(config, self.security(), memory + BACKSTOP_MARGIN)))
        if env is not None:
            self.wake(layout, env)
        with open(layout.root / "kernel.log", "ab") as log:
            process = subprocess.Popen(
                [
                    RUNC,
                    "--root",
                    str(STATE_ROOT),
                    "--criu",
                    restorer,
                    "restore",
                    "--image-path",
                    str(template.image),
                    "--work-path",
                    str(bundle / "criu"),
                    "--bundle",
                    str(bundle),
                    container,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        return RuncRestoredHandle(process, container, bundle, group, memory)


def _settled(handle: RuncRestoredHandle) -> bool:
    """Whether a restored container's init is known and CRIU has let go of it: runc writes its state while
    CRIU still traces the restored tasks with every signal blocked, and a container killed then stays
    alive with the kill pending while ``runc restore`` waits for ever (seen: TracerPid set, SIGKILL in
    ShdPnd, for minutes)."""
    if handle.init_pid is None:
        return False
    status = restore._read(Path(f"/proc/{handle.init_pid}/status"))
    return any(line.split() == ["TracerPid:", "0"] for line in status.splitlines())


def run_command(handle: RuncRestoredHandle, env: dict[str, str], cwd: str, spec: CommandSpec) -> Captured:
    """``runc exec`` into a restored kernel's container: what ``docker exec`` is for a cold one.

    The process is the kernel's (uid 1000, no capabilities, no-new-privileges, rlimits; runc adds
    the container's seccomp profile, namespaces and cgroup) with ``env`` as its whole environment,
    under coreutils ``timeout`` as in a Docker container: TERM at the deadline, KILL a second later."""
    process = json.loads((handle.bundle / "config.json").read_text())["process"]
    process.update(
        args=["timeout", "--kill-after=1", f"{spec.timeout:g}", *spec.argv],
        env=[f"{key}={value}" for key, value in env.items()],
        cwd=cwd,
    )
    path = handle.bundle / f"exec-{uuid.uuid4().hex[:12]}.json"
    path.write_text(json.dumps(process))
    command = [RUNC, "--root", str(STATE_ROOT), "exec", "--process", str(path), handle.container]

    def popen() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )

    started = time.monotonic()
    try:  # the host waits for the in-container timeout's KILL, and a little more, as for docker exec
        captured = run_process(popen, dataclasses.replace(spec, timeout=spec.timeout + 1 + DRAIN_S))
    finally:
        path.unlink(missing_ok=True)
    overran = time.monotonic() - started >= spec.timeout
    captured.timed_out = captured.timed_out or (captured.exit_code in (124, 137) and overran)
    if captured.timed_out:
        captured.exit_code = None
    return captured


def _drain(stream: IO[bytes], log: Path) -> None:
    """Copy a template's output to its log until the container ends."""
    with open(log, "ab") as sink:
        for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
            sink.write(chunk)


def _errors(log: Path) -> str:
    """CRIU's error lines from one of its logs when the dump or restore failed (empty if it did not)."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    if "FAILED" not in text:
        return ""
    return " | ".join(line.strip() for line in text.splitlines() if "Error" in line)[-600:]


def restore_ids() -> list[str]:
    """Containers on our runc state root (none when runc or the root is missing)."""
    if not STATE_ROOT.is_dir() or shutil.which(RUNC) is None:
        return []
    return [line.strip() for line in runc("list", "-q").stdout.splitlines() if line.strip()]


def remove_orphans(owned: Owned, report: CleanupReport) -> None:
    """Remove restored runc containers (and their pixelbox groups) whose owner ``owned`` accepts, and
    the state runc left of a restore stopped before it finished (a directory runc cannot load)."""
    restore.remove_containers(restore_ids(), _guarded_runc, owned, report, lambda c: KernelCgroup(c, 0).remove())
    for state in STATE_ROOT.iterdir() if STATE_ROOT.is_dir() else []:
        owner = owner_of(f"/{state.name}")
        if owner is not None and owned(owner) and _forget_unloadable(state.name):
            KernelCgroup(state.name, 0).remove()
            report.directories.append(str(state))
    report.directories.extend(unmount_left_on_exports(owned))


def unmount_left_on_exports(owned: Owned) -> list[str]:
    """Unmount what killed ``runc restore`` runs left bound onto the shared exports; the points unmounted.

    While it restores, runc 1.1 binds the container's bind mounts (the sandbox's IPC directory and
    workspace, and tini at ``/sbin/docker-init``) onto the container's root, the export every restore
    shares, in the host's mount namespace, and unmounts them only when it returns: a killed runc leaves
    them on the export (the pruner then refuses it). runc binds the export at ``<state>/criu-root``
    before it binds anything onto it and unmounts that last, so while a mount in runc's state root shows
    an export, a restore may be using what is on it: nothing on that export is touched. Otherwise a
    mount on it is left over unless it shows a directory of a live sandbox whose owner ``owned`` does
    not accept (decided only when the mount names one owner for certain). Only the topmost mount of a
    point is looked at (the one an unmount detaches), and checked again just before it is unmounted,
    until none is left."""
    exports = os.path.join(os.path.realpath(restore.CACHE), "rootfs", "")
    done: list[str] = []
    while True:
        table = mount_table()
        tops = {mount.point: mount for mount in table if mount.point.startswith(exports)}  # the last one is on top
        left = [m for m in tops.values() if _left_over(m, table, exports, owned)]
        unmounted = [m.point for m in left if _still_left(m, exports) and unmount(Path(m.point))]
        if not unmounted:
            return done
        done += unmounted


def _left_over(mount: Mount, table: list[Mount], exports: str, owned: Owned) -> bool:
    """Whether ``mount`` (on an export) is left over: no restore is in flight on its export, and it is
    not a live sandbox's that ``owned`` leaves alone."""
    return _owner_verdict(mount, table, exports, owned) is not False and not _restoring_on(mount.point, exports)


def _owner_verdict(mount: Mount, table: list[Mount], exports: str, owned: Owned) -> bool | None:
    """Whether ``mount`` shows a directory of a sandbox that is gone (its source is mounted nowhere else)
    or of an owner ``owned`` accepts; None when no single owner is certain (a source on a file system
    many mounts share, as tini's on the root file system, names many owners or none)."""
    sources = [m for m in table if m.device == mount.device and not m.point.startswith(exports)]
    if not sources:
        return True
    owner = owner_of(f"{mount.root}/")
    if owner is not None:
        return owned(owner)
    owners = {owner_of(f"{source.point}/") for source in sources}
    only = owners.pop() if len(owners) == 1 else None
    return None if only is None else owned(only)


def _restoring_on(point: str, exports: str) -> bool:
    """Whether a mount in runc's state root shows the export ``point`` is on (a restore in flight there,
    or one stopped whose state is not cleaned up yet)."""
    export = Path(exports, point[len(exports) :].split("/")[0])
    state = os.path.join(os.path.realpath(STATE_ROOT), "")
    return any(shown.startswith(state) for shown in mounts_exposing(export))


def _still_left(mount: Mount, exports: str) -> bool:
    """Just before unmounting: ``mount`` is still the one on top of its point (not a restore's bind made
    on the same point since), and still no restore is in flight on its export."""
    now = [m for m in mount_table() if m.point == mount.point]
    return bool(now) and now[-1].id == mount.id and not _restoring_on(mount.point, exports)


def _unmount_state(state: Path) -> bool:
    """Unmount everything under runc's state directory ``state``; whether nothing is mounted there now.

    While it restores, runc binds the container's root (the export every restore shares) at
    ``<state>/criu-root`` in this mount namespace and unmounts it only when it returns; it writes
    ``state.json`` before that. A killed or stuck runc leaves the bind, and any recursive removal of
    the state (ours, or ``runc delete``'s) would empty the shared export through it."""
    return unmount_all_under(state)


def delete(container: str) -> subprocess.CompletedProcess[str]:
    """``runc delete --force container``, once nothing is mounted in its state directory (refused otherwise:
    runc removes that directory recursively, through any bind a stopped restore left in it)."""
    state = STATE_ROOT / container
    if not _unmount_state(state):
        left = ", ".join(mounts_under(f"{state}/"))
        why = f"not deleted: {left} still mounted in runc's state of {container}; unmount it, then run pixelbox cleanup"
        return subprocess.CompletedProcess([RUNC, "delete", container], 1, "", why)
    return runc("delete", "--force", container)


def _guarded_runc(*args: str) -> subprocess.CompletedProcess[str]:
    """:func:`runc`, with ``delete`` going through :func:`delete` (for the shared cleanup of containers)."""
    return delete(args[-1]) if args[:1] == ("delete",) else runc(*args)


def _forget_unloadable(container: str) -> bool:
    """Remove runc's state directory of ``container`` when runc cannot load it (no ``state.json``: the
    restore was stopped before runc wrote it, so ``runc delete`` cannot either); whether it did."""
    state = STATE_ROOT / container
    if not state.is_dir() or (state / "state.json").exists():
        return False
    if not _unmount_state(state):
        return False
    for entry in os.scandir(state):  # runc keeps flat files here, and the (now empty) criu-root
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
    with contextlib.suppress(OSError):
        os.rmdir(state)
    return not state.exists()


def leftovers_of(pid: int, start: int | None) -> list[str]:
    """Restored runc containers of ``pid``'s sandboxes still known to runc."""
    return [c for c in restore_ids() if belongs_to(owner_of(f"/{c}"), pid, start)]


def facts(handle: RuncRestoredHandle, ready: dict[str, Any], options: SandboxOptions, workdir: str) -> dict[str, Any]:
    """The isolation facts of a restored runc kernel, as ``DockerBackend.facts`` gives them for a container."""
    interfaces = ready.get("interfaces") or []
    return {
        **restore.facts(handle, ready, options, options.pids),
        "runtime": "runc",
        "start": "runc restore (CRIU) of a checkpoint taken after the imports (off: PIXELBOX_RUNC_RESTORE=0)",
        "network": f"none (a network namespace of its own; interfaces: {', '.join(interfaces) or 'none'})",
        "security_opt": ["no-new-privileges", "seccomp (Docker's default profile, as for a cold container)"],
        "memory_limit": f"the pixelbox cgroup {handle.group.path}",
        "cgroup_parent": handle.group.path,
        "enter": [*exec_prefix(workdir), handle.container],
    }


def exec_prefix(workdir: str) -> list[str]:
    """``runc exec`` into a restored container as its unprivileged user (what ``docker exec`` is for a
    cold one): the kernel's capabilities (none), rlimits, seccomp profile and environment."""
    return [RUNC, "--root", str(STATE_ROOT), "exec", "--user", f"{KERNEL_UID}:{KERNEL_UID}", "--cwd", workdir]
