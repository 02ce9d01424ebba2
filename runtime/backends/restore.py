"""gVisor checkpoint/restore: fresh runsc kernels restored from a checkpoint taken after the imports.

A *template* container runs ``pixelbox.kernel.fresh.preload`` (phase one: imports, nothing of
any sandbox), says so with a ``parked`` file, and waits for an ``env.json`` in its IPC directory.
``runsc checkpoint`` saves it there and ends it. Each fresh sandbox is then ``runsc restore`` of
that image into a bundle of its own: its own workspace, inputs and IPC bind mounts (the restored
process finds the sandbox's connection file, configuration and ``env.json`` at the same paths),
its own cgroup limits, and phase two (``fresh.serve``) adopts the sandbox's environment, reseeds
every random source and reads the sandbox's fresh HMAC key. What every kernel restored from one
template shares is what a fork shares (docs/security.md): the ``str`` hash secret and the
memory layout of the preloaded process, nothing of any sandbox.

Containers are driven with the system ``runsc`` directly (``--root`` of our own), not through
Docker: Docker's ``checkpoint`` commands need an engine in experimental mode. So the template's
root file system is an export of the kernel image (cached per image id), and ownership follows
the workspace convention: container ids and template directories are ``pbx-<pid>.<start>-...``,
so ``pixelbox cleanup`` removes what a dead process left (:func:`remove_orphans`).

The default fast path of runsc (off with ``PIXELBOX_RUNSC_RESTORE=0``, and wherever it cannot run:
without root, runsc or Docker's init). Measured on this machine (benchmarks/README.md, bench_fresh) a
restore reaches the first result in about half the time and CPU of a cold start. What keeps it cheap:
the detached sandboxes are children of a subreaper (:mod:`.subreaper`), so closing one is a kill and a
reap instead of a wait for the VM's init, and the checkpoint is stored uncompressed (:mod:`.statefile`).
Restored kernels share the template's hash secret and memory layout (docs/security.md).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pixelbox.runtime.backends import cache_locks, cache_prune, statefile
from pixelbox.runtime.backends.base import CleanupReport, KernelHandle, Owned, describe_exit
from pixelbox.runtime.backends.subreaper import Subreaper
from pixelbox.runtime.commands import DRAIN_S, Captured, CommandSpec, run_process
from pixelbox.runtime.errors import BackendUnavailable
from pixelbox.runtime.mounts import deleted_mounts_under, unmount
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.workspace import Layout, belongs_to, owner_of, remove_tree, this_owner, write_host_file

ENABLE_VARIABLE = "PIXELBOX_RUNSC_RESTORE"
"""Host environment variable: ``0`` turns the restore path off (it is on by default); ``1`` makes each
option set's checkpoint on its first use, as :meth:`RestorePath.template` ahead of time does."""
RUNSC = "/usr/bin/runsc"
STATE_ROOT = Path("/run/pixelbox-runsc")
"""runsc's ``--root``: the state of the containers this module runs, apart from Docker's."""
CACHE_VARIABLE = "PIXELBOX_RESTORE_CACHE"
"""Host environment variable: where the restore paths keep exports, checkpoints and CRIU's wrappers."""
CACHE = Path(os.environ.get(CACHE_VARIABLE) or "/var/cache/pixelbox/restore")
"""Shared by every pixelbox process of the machine; kept within a byte budget by :mod:`.cache_prune`."""
RUNSC_FLAGS = ("--network=none", "--host-uds=all")
"""As Docker's runsc runtime is registered (``make setup``): no network stack, Unix sockets on
bind mounts allowed (the kernel's ZMQ sockets in its IPC directory)."""
ENV_FILE = "env.json"
WAKE_FILE = "wake.sock"
"""A parked spare (:mod:`.spares`) blocks on a connection to this Unix socket in its IPC directory
(host-made) until the host closes it at hand-off, instead of polling for its environment."""
PARKED_FILE = "parked"
CHECKPOINT_FILE = "checkpoint.img"
"""What ``runsc checkpoint`` writes in its image directory; stored uncompressed (:mod:`.statefile`)."""
CONTAINER_UID = 1000
"""The kernel's uid and gid in the container (``DockerBackend``'s ``CONTAINER_UID``)."""
TINI = "/usr/bin/docker-init"
TINI_TARGET = os.path.realpath(TINI)
"""Docker's init (tini), bind-mounted as PID 1 like ``docker run --init``: it reaps zombies and
forwards SIGINT to the kernel."""
SKIPPED_IMPORTS = ("scipy.ndimage", "matplotlib", "matplotlib.pyplot")
"""Left out of the template's preload: a cold kernel does not import them at start either, and each
adds memory that every restore has to load. OpenCV stays: its generator (``theRNG``) starts from a
fixed seed when imported, so it must be in the template for ``fresh.reseed`` to renew it."""
PARKED_CODE = (
    "import json, socket, sys, time\n"
    "from pathlib import Path\n"
    "from pixelbox.kernel import fresh\n"
    f"fresh.preload(tuple(m for m in fresh.PRELOAD if m not in {SKIPPED_IMPORTS!r}))\n"
    "ipc = Path(sys.argv[1])\n"
    f"(ipc / {PARKED_FILE!r}).write_text('')\n"
    f"while not (ipc / {ENV_FILE!r}).exists():\n"
    "    woken = False\n"
    f"    if (ipc / {WAKE_FILE!r}).exists():\n"
    "        with socket.socket(socket.AF_UNIX) as wake:\n"
    "            try:\n"
    f"                wake.connect(str(ipc / {WAKE_FILE!r}))\n"
    "                woken = wake.recv(1) == b''\n"
    "            except OSError:\n"
    "                pass\n"
    "    if not woken:\n"
    "        time.sleep(0.002)\n"
    f"fresh.serve(ipc, json.loads((ipc / {ENV_FILE!r}).read_text()))\n"
)
"""The template's program: phase one, then wait (checkpointed here) for a sandbox's files. A restore on
demand finds them at once; a spare (:mod:`.spares`) finds the host's wake socket instead and blocks on it
(no polling while parked: a 2 ms poll cost a parked runsc spare about 15% of a core) until the host,
having written the files, closes it."""
TEMPLATE_TIMEOUT_S = 120.0
CONTROL_TIMEOUT_S = 30.0
_SUBREAPER = Subreaper()
"""Parent of every detached sandbox this process starts (see :mod:`.subreaper`)."""


def switched_on(variable: str, available: Callable[[], bool]) -> bool:
    """A restore path's switch: on by default wherever ``available()`` says it can run, off with
    ``variable=0``."""
    return os.environ.get(variable, "") != "0" and available()


def asked_eagerly(variable: str) -> bool:
    """``variable=1``: a sandbox's first start with an option set waits for its checkpoint, rather than
    starting cold until the one made from the option set's second use is ready (the default)."""
    return os.environ.get(variable, "") == "1"


def enabled() -> bool:
    """Whether runsc sandboxes started with ``fast_start`` are restored in this process (by default
    wherever the path can run, :func:`check_available`; not with ``PIXELBOX_RUNSC_RESTORE=0``)."""
    return switched_on(ENABLE_VARIABLE, _available)


def eager() -> bool:
    """Whether a first start waits for its checkpoint (``PIXELBOX_RUNSC_RESTORE=1``, :func:`asked_eagerly`)."""
    return asked_eagerly(ENABLE_VARIABLE)


@functools.lru_cache(maxsize=1)
def _available() -> bool:
    try:
        check_available()
    except BackendUnavailable:
        return False
    return True


@dataclass(frozen=True)
class Mounts:
    """In-sandbox paths of one kernel's host directories (``DockerBackend.paths``)."""

    ipc: str
    workspace: str
    inputs: str


def runsc(*args: str, timeout: float = CONTROL_TIMEOUT_S, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``runsc`` on our state root; ``log`` receives the output (and a started sandbox's stdio)."""
    command = [RUNSC, "--root", str(STATE_ROOT), *RUNSC_FLAGS, *args]
    if log is None:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    # A detached sandbox keeps its stdio (never a pipe we would wait on) and outlives the command:
    # run it under the subreaper, so the sandbox is reaped the moment it dies (a cheap ``runsc delete``).
    code = _SUBREAPER.run(command, str(log), timeout)
    return subprocess.CompletedProcess(command, code, "", _tail(log))


def _tail(path: Path, size: int = 2000) -> str:
    with contextlib.suppress(OSError), open(path, "rb") as handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - size))
        return handle.read().decode(errors="replace")
    return ""


def export_rootfs(client: Any, image: str, image_id: str) -> Path:
    """The kernel image's file system as a directory (exported once per image id, then reused), held
    by this process until it exits (:func:`cache_locks.hold`: the pruner leaves it alone)."""
    target = CACHE / "rootfs" / image_id.split(":")[-1][:12]
    cache_locks.hold(CACHE, "rootfs", target.name)
    if (target / "usr" / "bin").is_dir():
        detach_stale_mounts(target)
        return target
    if target.is_dir():  # damaged (emptied): set aside and export again; running containers keep theirs
        with contextlib.suppress(OSError):
            target.rename(target.with_name(f"{target.name}.damaged.{os.getpid()}.{uuid.uuid4().hex[:6]}"))
    partial = target.with_name(f"{target.name}.{os.getpid()}.{uuid.uuid4().hex[:6]}")
    partial.mkdir(parents=True, mode=0o755)
    container = client.containers.create(image, command=["true"])
    try:
        with subprocess.Popen(["docker", "export", container.id], stdout=subprocess.PIPE) as export:
            subprocess.run(["tar", "-x", "-C", str(partial)], stdin=export.stdout, check=True)
        with contextlib.suppress(OSError):
            partial.rename(target)
    finally:
        container.remove(force=True)
        shutil.rmtree(partial, ignore_errors=True)
    cache_prune.prune_soon(CACHE, {target.name}, lambda: cache_prune.docker_images(client))
    return target


def detach_stale_mounts(rootfs: Path) -> None:
    """Detach mounts left on the shared export in this mount namespace whose source is gone.

    ``runc restore`` bind-mounts a sandbox's directories onto the container's root (the export) in the
    host's mount namespace while it restores, and unmounts them when done; one that is killed, or finds
    the source already deleted, leaves them. A stale mount over ``/pixelbox/ipc`` then fails every
    later runsc start (its gofer refuses a mount point that resolves to a deleted directory) and runc's
    own (seen here: a hardening sandbox's IPC directory). A deleted source serves nobody."""
    for point in deleted_mounts_under(f"{rootfs}/"):
        unmount(Path(point))


def spec(
    rootfs: Path,
    args: list[str],
    env: dict[str, str],
    binds: dict[str, tuple[Path, bool]],
    options: SandboxOptions,
    cgroup: str,
    pids: int,
) -> dict[str, Any]:
    """The OCI runtime spec of one kernel: what ``DockerBackend._run`` asks of Docker, for runsc itself."""
    memory, tmpfs = int(options.memory), int(options.tmpfs_size)
    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755"]},
        {
            "destination": "/dev/shm",
            "type": "tmpfs",
            "source": "shm",
            "options": ["nosuid", "noexec", "nodev", "mode=1777", f"size={tmpfs}"],
        },
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
        {
            "destination": "/tmp",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["rw", "nosuid", "nodev", f"size={tmpfs}", "mode=1777"],
        },
        # the link's target: CRIU cannot restore a bind mount whose source is a symbolic link
        {"destination": "/sbin/docker-init", "type": "bind", "source": TINI_TARGET, "options": ["rbind", "ro"]},
    ]
    for destination, (source, writable) in binds.items():
        mounts.append(
            {
                "destination": destination,
                "type": "bind",
                "source": str(source),
                "options": ["rbind", "rw" if writable else "ro"],
            }
        )
    limits = [
        ("RLIMIT_NOFILE", options.max_open_files),
        ("RLIMIT_FSIZE", int(options.max_file_size)),
        ("RLIMIT_CORE", 0),
    ]
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": CONTAINER_UID, "gid": CONTAINER_UID},
            "args": args,
            "cwd": "/",
            "env": [f"{k}={v}" for k, v in env.items()],
            "capabilities": {kind: [] for kind in ("bounding", "effective", "inheritable", "permitted", "ambient")},
            "rlimits": [{"type": name, "hard": value, "soft": value} for name, value in limits],
            "noNewPrivileges": True,
        },
        "root": {"path": str(rootfs), "readonly": True},
        "hostname": "sandbox",
        "mounts": mounts,
        "linux": {
            "resources": {
                "memory": {"limit": memory, "swap": memory},
                "pids": {"limit": pids},
                "cpu": {"quota": int(options.cpus * 100_000), "period": 100_000},
                "devices": [{"allow": False, "access": "rwm"}],
            },
            "cgroupsPath": cgroup,
            "namespaces": [{"type": kind} for kind in ("pid", "network", "ipc", "uts", "mount")],
        },
    }


def template_key(image_id: str, env: dict[str, str], options: SandboxOptions, engine: str = "runsc") -> str:
    """What a checkpoint fixes for every kernel restored from it: the engine, the image, the import-time
    environment (BLAS thread counts), rlimits, the /tmp and memory sizes the guest saw at boot."""
    fixed = [
        engine,
        image_id,
        sorted(env.items()),
        options.max_open_files,
        int(options.max_file_size),
        int(options.tmpfs_size),
        int(options.memory),
    ]
    return hashlib.sha256(json.dumps(fixed, default=str).encode()).hexdigest()[:12]


_TEMPLATE_NAMES: set[str] = set()


def template_names() -> set[str]:
    """Names of this process's templates (their directories and ``<name>-t...`` containers, cgroups): like
    the zygote, helpers of its sandboxes for as long as it runs, not leftovers (``cleanup.leftovers_of``)."""
    return set(_TEMPLATE_NAMES)


class Template:
    """One checkpoint of a parked kernel, made once per key by this process and restored per sandbox.

    Removed when this process exits (``pixelbox cleanup`` removes those of a process that died)."""

    def __init__(self, key: str, build: Any) -> None:
        self.key = key
        self.root = CACHE / "templates" / f"pbx-{this_owner().tag}-{key}"
        cache_locks.hold(CACHE, "templates", self.root.name)
        _TEMPLATE_NAMES.add(self.root.name)
        atexit.register(shutil.rmtree, self.root, True)
        self.image = self.root / "image"
        self._build = build
        self.ahead = True
        """Asked for ahead (``prepare_fresh``, the pool, ``PIXELBOX_RUNSC_RESTORE=1``): sandboxes wait for it.
        False for one made on demand, which sandboxes use only once it is ready."""
        self._done = threading.Event()
        self.error: str | None = None
        self.rootfs = Path("/")
        self.env: dict[str, str] = {}
        self._thread = threading.Thread(target=self._make, name=f"pbx-restore-template-{key}", daemon=True)
        self._thread.start()

    def _make(self) -> None:
        try:
            self._build(self)
        except Exception as exc:
            self.error = f"{exc.__class__.__name__}: {exc}"
        finally:
            self._done.set()

    def failed(self) -> bool:
        """Whether making the checkpoint failed (a later sandbox tries again)."""
        return self._done.is_set() and self.error is not None

    def ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the checkpoint; whether it is there."""
        return self._done.wait(timeout) and self.error is None


class RestoredHandle(KernelHandle):
    """A kernel restored into its own runsc container, watched by ``runsc wait`` in a thread."""

    def __init__(self, container: str, bundle: Path, memory: int, cgroup: str) -> None:
        self.container = container
        self.sandbox_pid = next(iter(host_pids(container)), None)
        self.bundle = bundle
        self.memory = memory
        self.cgroup = cgroup
        self.exited = threading.Event()
        self.exit_code: int | None = None
        self._killed = False
        threading.Thread(target=self._wait, name=f"pbx-wait-{container[-12:]}", daemon=True).start()

    def _wait(self) -> None:
        """Block in ``runsc wait``: it prints the exit code of the container's init (tini, which
        exits with 128+N when the kernel died of signal N, as under ``docker run --init``)."""
        try:
            done = subprocess.run(
                [RUNSC, "--root", str(STATE_ROOT), "wait", self.container], capture_output=True, text=True, check=False
            )
            status = json.loads(done.stdout or "{}").get("exitStatus")
            self.exit_code = status if isinstance(status, int) and status >= 0 else None
        except (OSError, ValueError):
            self.exit_code = None
        if self.exit_code is None and self.sandbox_pid is not None and not self._killed:
            # runsc wait lost the race with a sandbox that ended at once; the sandbox process exits
            # with its container's status, which the subreaper saw when it reaped it
            self.exit_code = _SUBREAPER.exit_status(self.sandbox_pid, CONTROL_TIMEOUT_S)
        self.exited.set()

    def alive(self) -> bool:
        return not self.exited.is_set()

    def exit_reason(self) -> str:
        return describe_exit(self.exit_code, oom=self._oom_killed(), memory=self.memory)

    def _oom_killed(self) -> bool:
        text = _read(Path("/sys/fs/cgroup/memory") / self.cgroup.lstrip("/") / "memory.oom_control")
        counts = dict(line.split(maxsplit=1) for line in text.splitlines() if " " in line)
        return counts.get("oom_kill", "0").strip() not in ("", "0")

    def cpu_seconds(self) -> float | None:
        usage = _read(Path("/sys/fs/cgroup/cpuacct") / self.cgroup.lstrip("/") / "cpuacct.usage").strip()
        return int(usage) / 1e9 if usage.isdigit() else None

    def interrupt(self) -> None:
        with contextlib.suppress(Exception):
            runsc("kill", self.container, "INT")

    def kill(self) -> None:
        """Stop the sandbox and remove its container state and bundle; never raises."""
        self._killed = True
        with contextlib.suppress(Exception):
            stop(self.container, self.bundle)
        self.exited.wait(5.0)
        remove_tree(self.bundle)


def stop(container: str, bundle: Path) -> None:
    """End a container this process started and delete its runsc state.

    Its sandbox and gofer processes are our subreaper's children: killing them there ends everything
    in the sandbox, and they and the platform's stub processes (which die with the sandbox) are
    reaped at once; ``runsc delete`` then finds nothing left (it polls every 100 ms for a sandbox,
    gofer or cgroup still in use). Processes the subreaper does not hold (it was restarted) are
    stopped by runsc alone."""
    pids = host_pids(container)
    if pids and _SUBREAPER.kill_children(pids, str(bundle), CONTROL_TIMEOUT_S):
        _wait_cgroup_empty(container_cgroup(container), time.monotonic() + 2.0)
    else:
        runsc("kill", "--all", container, "KILL")
    runsc("delete", "--force", container)


def exec_prefix(container: str, workdir: str) -> list[str]:
    """``runsc exec`` into a restored container as its unprivileged user (what ``docker exec`` runs under
    runsc): the container's capabilities (none) and environment, ``workdir`` as the directory."""
    user = f"{CONTAINER_UID}:{CONTAINER_UID}"
    return [RUNSC, "--root", str(STATE_ROOT), "exec", "--user", user, "--cwd", workdir]


def run_command(handle: RestoredHandle, spec: CommandSpec, env: dict[str, str], workdir: str) -> Captured:
    """``spec`` beside a restored kernel, as ``DockerBackend.run_command`` runs it in a Docker container:
    under coreutils ``timeout`` in the container (TERM at the deadline, KILL a second later), the host
    reading its output until a little after that."""
    argv = [
        *exec_prefix(handle.container, workdir),
        *(f"--env={key}={value}" for key, value in env.items()),
        handle.container,
        "timeout",
        "--kill-after=1",
        f"{spec.timeout:g}",
        *spec.argv,
    ]
    started = time.monotonic()
    captured = run_process(
        lambda: subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        ),
        dataclasses.replace(spec, timeout=spec.timeout + 1 + DRAIN_S),
    )
    overran = time.monotonic() - started >= spec.timeout
    captured.timed_out = captured.timed_out or (captured.exit_code in (124, 137) and overran)
    if captured.timed_out:
        captured.exit_code = None
    return captured


def subreaper_command_cpu() -> float:
    """CPU-seconds of the runsc commands this process ran under the subreaper (``run``, ``restore``)."""
    return _SUBREAPER.command_cpu


def container_cgroup(container: str) -> str:
    """The cgroup (under every controller) runsc puts a container of ours in."""
    return f"/pixelbox/{container}"


def _wait_cgroup_empty(cgroup: str, deadline: float) -> None:
    """Wait until no task of ``cgroup`` is left, not even a zombie (``pids.current`` drops when a
    task is reaped), or the deadline passes."""
    current = Path("/sys/fs/cgroup/pids") / cgroup.lstrip("/") / "pids.current"
    while _read(current).strip() not in ("", "0") and time.monotonic() < deadline:
        time.sleep(0.005)


def host_pids(container: str) -> list[int]:
    """The host pids of ``container``'s sandbox and gofer, from runsc's state file (none if unreadable)."""
    for path in STATE_ROOT.glob(f"{container}_sandbox:*.state"):
        try:
            state = json.loads(path.read_text())
            pids = [state.get("sandbox", {}).get("pid"), state.get("goferPid")]
        except (OSError, ValueError, AttributeError):
            return []
        return [pid for pid in pids if isinstance(pid, int) and pid > 0]
    return []


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def restore_ids() -> list[str]:
    """Containers on our runsc state root (none when runsc or the root is missing)."""
    if not STATE_ROOT.is_dir() or not Path(RUNSC).exists():
        return []
    done = runsc("list", "-quiet")
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def remove_containers(
    ids: list[str],
    control: Callable[..., subprocess.CompletedProcess[str]],
    owned: Owned,
    report: CleanupReport,
    after: Callable[[str], object] = lambda container: None,
) -> None:
    """Kill and delete the containers among ``ids`` whose owner ``owned`` accepts, through ``control``
    (the runtime's command line: :func:`runsc`, or runc's); ``after`` each one (its cgroups)."""
    for container in ids:
        owner = owner_of(f"/{container}")
        if owner is not None and owned(owner):
            control("kill", "--all", container, "KILL")
            done = control("delete", "--force", container)
            after(container)
            (report.containers if done.returncode == 0 else report.errors).append(
                container if done.returncode == 0 else f"{container}: {done.stderr.strip()[-300:]}"
            )


RUNTIME_PROGRAMS = ("runsc", "runsc-sandbox", "runsc-gofer", "runc")
"""What the restore paths run on the host (``argv[0]`` names; runsc re-executes itself under these)."""


def kill_runtime_processes(owned: Owned, report: CleanupReport, patience: float = 5.0) -> None:
    """SIGKILL the runtime processes working for an owner ``owned`` accepts (their command lines name its
    bundle under ``/tmp/pbx-<pid>.<start>-...``), and wait for them to go, before their containers are
    listed: a restore still running when its host died (a spare's, made in the background) would otherwise
    finish after the cleanup and leave a container running, or its cgroup busy."""
    killed = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        argv = _read(Path(entry.path) / "cmdline").split("\0")
        owner = owner_of(" ".join(argv))
        if Path(argv[0]).name in RUNTIME_PROGRAMS and owner is not None and owned(owner):
            with contextlib.suppress(OSError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
    report.processes.extend(killed)
    deadline = time.monotonic() + patience
    while any(running(pid) for pid in killed) and time.monotonic() < deadline:
        time.sleep(0.02)


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and is no zombie."""
    stat_line = _read(Path(f"/proc/{pid}/stat"))
    return bool(stat_line) and stat_line.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def remove_orphans(owned: Owned, report: CleanupReport) -> None:
    """Remove restored containers and checkpoint templates whose owner ``owned`` accepts (first the runtime
    processes still working for it: :func:`kill_runtime_processes`)."""
    kill_runtime_processes(owned, report)
    remove_containers(restore_ids(), runsc, owned, report)
    templates = CACHE / "templates"
    for directory in templates.glob("pbx-*") if templates.is_dir() else []:
        owner = owner_of(f"/{directory.name}-")
        if owner is not None and owned(owner):
            shutil.rmtree(directory, ignore_errors=True)
            report.directories.append(str(directory))


def leftovers_of(pid: int, start: int | None) -> list[str]:
    """Restored containers of ``pid``'s sandboxes still known to runsc."""
    return [c for c in restore_ids() if belongs_to(owner_of(f"/{c}"), pid, start)]


def check_available() -> None:
    """Raise ``BackendUnavailable`` when this host cannot run the restore path."""
    for path in (RUNSC, TINI):
        if not Path(path).exists():
            raise BackendUnavailable(f"the runsc restore path needs {path}")
    if os.geteuid() != 0:
        raise BackendUnavailable("the runsc restore path drives runsc directly, which needs root")


def write_env(ipc: Path, env: dict[str, str]) -> None:
    """Hand the restored kernel its environment (it waits for this file, written last)."""
    write_host_file(ipc, ENV_FILE, json.dumps(env))


def wait_parked(ipc: Path, container: str, deadline: float) -> None:
    """Wait until the template has imported everything (or fail with its state)."""
    while not (ipc / PARKED_FILE).exists():
        if time.monotonic() > deadline:
            raise BackendUnavailable(f"the runsc template {container} did not finish its imports in time")
        time.sleep(0.02)


class RestorePath:
    """The restore fast path of one Docker backend (runtime runsc): templates by key, restores per sandbox."""

    engine = "runsc"

    def __init__(self, client: Any, image: str, image_id: str, mounts: Mounts, pids_headroom: int) -> None:
        self.client = client
        self.image = image
        self.image_id = image_id
        self.mounts = mounts
        self.pids_headroom = pids_headroom
        self._templates: dict[str, Template] = {}
        self._asked: set[str] = set()
        """Keys a sandbox asked for once (see :meth:`template_on_demand`)."""
        self._lock = threading.Lock()
        self._image_env: dict[str, str] | None = None

    def image_env(self) -> dict[str, str]:
        """The image's own ``ENV`` (Docker puts it under a container's environment; so do we)."""
        if self._image_env is None:
            pairs = self.client.images.get(self.image).attrs.get("Config", {}).get("Env") or []
            self._image_env = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
        return self._image_env

    def key_of(self, options: SandboxOptions, env: dict[str, str]) -> str:
        """The template key of ``options`` with ``env`` (without the user's) under the image's own."""
        return template_key(self.image_id, {**self.image_env(), **env}, options, self.engine)

    def template(self, options: SandboxOptions, env: dict[str, str]) -> Template:
        """The template for ``options`` (made in the background on first use); ``env`` without the user's."""
        full = {**self.image_env(), **env}
        key = self.key_of(options, env)
        with self._lock:
            template = self._templates.get(key)
            if template is None or template.failed():
                template = self._templates[key] = Template(key, lambda t: self._made(t, options, full))
            template.ahead = True
            return template

    def template_on_demand(self, options: SandboxOptions, env: dict[str, str]) -> Template | None:
        """The template a sandbox start may use, None to start cold. A checkpoint costs a few cold starts,
        so on demand it is made in the background when a key is asked for the second time, and used once
        it is ready; no sandbox waits for one (those made ahead by :meth:`template`, for ``prepare_fresh``
        and the pool, are waited for). An option set used once never pays for a checkpoint; a key whose
        checkpoint failed starts cold from then on (no new attempt per sandbox)."""
        full = {**self.image_env(), **env}
        key = self.key_of(options, env)
        with self._lock:
            template = self._templates.get(key)
            if template is not None:
                usable = not template.failed() and (template.ahead or template.ready(0))
                return template if usable else None
            if key not in self._asked:
                self._asked.add(key)
                return None
            template = self._templates[key] = Template(key, lambda t: self._made(t, options, full))
            template.ahead = False
            return None

    def _made(self, template: Template, options: SandboxOptions, env: dict[str, str]) -> None:
        """Make the template's checkpoint (:meth:`_build`), then prune the cache in the background."""
        self._build(template, options, env)
        cache_prune.prune_soon(CACHE, {template.rootfs.name}, lambda: cache_prune.docker_images(self.client))

    def used(self, template: Template) -> None:
        """Stamp the template's checkpoint and export as used now (the pruner removes the least recent)."""
        cache_locks.touch(CACHE, "templates", template.root.name)
        cache_locks.touch(CACHE, "rootfs", template.rootfs.name)

    def _binds(self, ipc: Path, work: Path, inputs: Path) -> dict[str, tuple[Path, bool]]:
        return {self.mounts.ipc: (ipc, True), self.mounts.workspace: (work, True), self.mounts.inputs: (inputs, False)}

    def _args(self) -> list[str]:
        return ["/sbin/docker-init", "--", "python", "-c", PARKED_CODE, self.mounts.ipc]

    def _template_bundle(
        self, template: Template, options: SandboxOptions, env: dict[str, str]
    ) -> tuple[dict[str, Path], str, dict[str, Any]]:
        """The template's directories (fresh), container id and spec (engine-neutral; not yet written)."""
        rootfs = export_rootfs(self.client, self.image, self.image_id)
        shutil.rmtree(template.root, ignore_errors=True)
        template.root.mkdir(parents=True, mode=0o700)
        dirs = {name: template.root / name for name in ("ipc", "work", "inputs", "bundle")}
        for name, path in dirs.items():
            path.mkdir(parents=True, mode=0o700 if name == "bundle" else 0o755)
            if name in ("ipc", "work"):
                os.chown(path, CONTAINER_UID, CONTAINER_UID)
        container = f"{template.root.name}-t{uuid.uuid4().hex[:8]}"
        binds = self._binds(dirs["ipc"], dirs["work"], dirs["inputs"])
        config = spec(
            rootfs, self._args(), env, binds, options, container_cgroup(container), options.pids + self.pids_headroom
        )
        template.rootfs, template.env = rootfs, env
        return dirs, container, config

    def _build(self, template: Template, options: SandboxOptions, env: dict[str, str]) -> None:
        """Export the root file system, run the template to its parked point, checkpoint it."""
        check_available()
        dirs, container, config = self._template_bundle(template, options, env)
        (dirs["bundle"] / "config.json").write_text(json.dumps(config))
        try:
            started = runsc(
                "run",
                "--bundle",
                str(dirs["bundle"]),
                "--detach",
                container,
                log=template.root / "log",
            )
            if started.returncode != 0:
                raise BackendUnavailable(f"runsc could not run the template: {started.stderr.strip()[-500:]}")
            wait_parked(dirs["ipc"], container, time.monotonic() + TEMPLATE_TIMEOUT_S)
            saved = runsc("checkpoint", "--image-path", str(template.image), container, timeout=TEMPLATE_TIMEOUT_S)
            if saved.returncode != 0:
                raise BackendUnavailable(f"runsc checkpoint failed: {saved.stderr.strip()[-500:]}")
            statefile.store_uncompressed(template.image / CHECKPOINT_FILE)
        finally:
            stop(container, dirs["bundle"])

    def restore_parked(self, template: Template, layout: Layout, options: SandboxOptions) -> KernelHandle:
        """A spare (:mod:`.spares`): a kernel restored from ``template`` into ``layout`` and left parked, waiting
        for its environment (:meth:`wake`); the restore has finished when this returns."""
        return self.restore(template, layout, options, None)

    def wake(self, layout: Layout, env: dict[str, str]) -> None:
        """Start a parked kernel's phase two: hand it ``env`` (the sandbox's, under the image's own)."""
        write_env(layout.ipc, {**self.image_env(), **env})

    def restore(
        self, template: Template, layout: Layout, options: SandboxOptions, env: dict[str, str] | None
    ) -> KernelHandle:
        """A kernel restored from ``template`` into ``layout``'s directories, with ``env`` (None: parked,
        see :meth:`restore_parked`) and ``options``' limits."""
        from pixelbox.runtime.errors import KernelStartError

        self.used(template)
        container = f"{layout.root.name}-r{uuid.uuid4().hex[:12]}"
        bundle = layout.root / f"bundle-{container[-12:]}"
        bundle.mkdir(mode=0o700)
        detach_stale_mounts(template.rootfs)
        cgroup = container_cgroup(container)
        binds = self._binds(layout.ipc, layout.work, layout.inputs)
        config = spec(
            template.rootfs, self._args(), template.env, binds, options, cgroup, options.pids + self.pids_headroom
        )
        (bundle / "config.json").write_text(json.dumps(config))
        if env is not None:
            self.wake(layout, env)
        done = runsc(
            "restore",
            "--image-path",
            str(template.image),
            "--bundle",
            str(bundle),
            "--detach",
            container,
            log=layout.root / "kernel.log",
            timeout=options.start_timeout,
        )
        handle = RestoredHandle(container, bundle, int(options.memory), cgroup)
        if done.returncode != 0:
            handle.kill()
            raise KernelStartError(f"runsc restore failed: {done.stderr.strip()[-500:]}")
        return handle


class Restored(Protocol):
    """What the facts of a restored kernel are read from (runsc's handle, or runc's in :mod:`.criu`)."""

    container: str
    cgroup: str
    memory: int


def facts(handle: Restored, ready: dict[str, Any], options: SandboxOptions, pids: int) -> dict[str, Any]:
    """The isolation facts of a restored kernel, as ``DockerBackend.facts`` gives them for a container."""
    interfaces = ready.get("interfaces") or []
    return {
        "container": True,
        "container_id": handle.container,
        "runtime": "runsc",
        "start": "runsc restore of a checkpoint taken after the imports (off: PIXELBOX_RUNSC_RESTORE=0)",
        "network": f"none (runsc --network=none; interfaces: {', '.join(interfaces) or 'none'})",
        "network_isolated": True,
        "user": f"uid {ready.get('uid')}",
        "read_only_root": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "memory_limit": f"the container's cgroup {handle.cgroup}",
        "cgroup_parent": "/pixelbox",
        "limits": {
            "memory": handle.memory,
            "memory_swap": handle.memory,
            "pids": pids,
            "nano_cpus": int(options.cpus * 1e9),
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={int(options.tmpfs_size)},mode=1777"},
        },
        "environment": "scrubbed (explicit allow-list only)",
    }
