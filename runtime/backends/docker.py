"""The container backend: one Docker container per sandbox, runc or gVisor (runsc).

The container has no network interface (``network_mode=none``): the kernel's ZMQ sockets are
Unix-domain sockets in a bind-mounted private directory. Root is read-only with a size-capped
tmpfs on /tmp, the user is uid 1000, all capabilities are dropped, no-new-privileges is set,
and memory (without swap), pids and CPU are capped. The environment is built from scratch.
A waiter thread blocks on the container's exit so a dead kernel is noticed at once.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import threading
import time
import uuid
from typing import Any

from pixelbox.runtime.backends import criu, restore, spares
from pixelbox.runtime.backends.base import (
    KERNEL_COMMAND,
    SAFE_PATH,
    Backend,
    CleanupReport,
    KernelHandle,
    KernelPaths,
    Owned,
    ParkedKernel,
    describe_exit,
)
from pixelbox.runtime.backends.cgroups import BACKSTOP_MARGIN, KernelCgroup, cgroups_usable
from pixelbox.runtime.backends.labels import LABEL, OWNER_LABEL, OWNER_START_LABEL
from pixelbox.runtime.commands import DRAIN_S, Captured, CommandSpec, new_capture
from pixelbox.runtime.docker_engine import docker_client
from pixelbox.runtime.errors import BackendUnavailable, ImageMissing
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.workspace import Layout, Owner, belongs_to, this_owner

LOCAL_ENGINE = "http+docker://localhost"
"""The Docker SDK's base URL for an engine on this host's Unix socket."""
CONTAINER_UID = restore.CONTAINER_UID
IPC_MOUNT = "/pixelbox/ipc"
WORK_MOUNT = "/workspace"
INPUTS_MOUNT = "/inputs"
RUNSC_PIDS_HEADROOM = 64
"""gVisor's own host threads (sentry, gofer, one stub per guest task on the ptrace platform)
count against the container's pids cgroup; without headroom a limit of 64 stops the kernel
from starting at all. Added under runsc so ``pids`` means about the same for model code."""
logger = logging.getLogger(__name__)
_backends: dict[tuple[str, str | None], DockerBackend] = {}
_backends_lock = threading.Lock()


REMOVE_PATIENCE_S = 30.0
"""How long a container removal keeps retrying while the Docker engine does not answer."""


class DockerHandle(KernelHandle):
    """A running kernel container, watched by a thread blocked in ``container.wait()``.

    ``group`` is the pixelbox cgroup the container runs in (its memory limit and OOM record),
    when the host can make one.
    """

    def __init__(self, container: Any, memory: int, group: KernelCgroup | None = None) -> None:
        self.container = container
        self.memory = memory
        self.group = group
        self.exited = threading.Event()
        self.exit_code: int | None = None
        self._reason: str | None = None
        threading.Thread(target=self._wait, name=f"pbx-wait-{container.short_id}", daemon=True).start()

    def _wait(self) -> None:
        try:
            self.exit_code = int(self.container.wait()["StatusCode"])
        except Exception:
            self.exit_code = None
        self.exited.set()

    def alive(self) -> bool:
        return not self.exited.is_set()

    def exit_reason(self) -> str:
        if self._reason is None:
            oom = False
            try:
                self.container.reload()
                state = self.container.attrs["State"]
                oom = bool(state.get("OOMKilled"))
                self.exit_code = state.get("ExitCode", self.exit_code)
            except Exception:
                pass
            oom = oom or (self.group is not None and self.group.oom_killed())
            self._reason = describe_exit(self.exit_code, oom=oom, memory=self.memory)
        return self._reason

    def cpu_seconds(self) -> float | None:
        return self.group.cpu_seconds() if self.group is not None else None

    def interrupt(self) -> None:
        with contextlib.suppress(Exception):
            self.container.kill(signal="SIGINT")

    def kill(self) -> None:
        """Remove the container, then its pixelbox group (which cannot go while the container holds it)."""
        if self._remove_container() and self.group is not None:
            for error in self.group.remove():
                logger.warning("%s (left for `pixelbox cleanup`)", error)

    def _remove_container(self) -> bool:
        """Remove the container; if the engine is briefly unreachable (a dockerd restart), retry.

        A container left behind by a failed removal would outlive its sandbox, so removal is
        retried for up to :data:`REMOVE_PATIENCE_S` while the engine does not answer.
        Returns whether the container is gone.
        """
        import docker.errors

        deadline = time.monotonic() + REMOVE_PATIENCE_S
        delay = 0.2
        while True:
            try:
                self.container.remove(force=True)
                return True
            except docker.errors.NotFound:
                return True
            except Exception:
                if time.monotonic() + delay > deadline:
                    return False
                time.sleep(delay)
                delay = min(delay * 2, 3.0)


class DockerBackend(Backend):
    """Starts kernel containers from the pixelbox kernel image."""

    name = "docker"

    def __init__(self, runtime: str = "runc", image: str | None = None) -> None:
        from pixelbox.runtime.image import BUILD_COMMAND, kernel_image_tag

        self.runtime = runtime
        self.kernel_uid = CONTAINER_UID
        self.client = docker_client()
        self.image = image or kernel_image_tag()
        self._check_image(BUILD_COMMAND)
        engine = self.client.info()
        self._check_runtime(engine)
        self.memory_groups = (
            cgroups_usable() and engine.get("CgroupDriver") == "cgroupfs" and self.client.api.base_url == LOCAL_ENGINE
        )
        """Whether containers run inside a pixelbox group: only where this process and the
        engine see the same cgroup tree (root, the cgroupfs driver, an engine on this host's
        Unix socket). Turned off for good if a container does not turn up inside its group."""
        self._restore: restore.RestorePath | None = None
        self._spares: spares.Spares | None = None
        self._spares_lock = threading.Lock()

    @classmethod
    def for_options(cls, options: SandboxOptions) -> DockerBackend:
        """The shared backend for ``options``' runtime and image (engine and image are checked once)."""
        key = (options.runtime, options.image)
        with _backends_lock:
            if key not in _backends:
                _backends[key] = cls(runtime=options.runtime, image=options.image)
            return _backends[key]

    @classmethod
    def forget(cls) -> None:
        """Drop the shared backends (after the engine restarted or an image was rebuilt), removing their spares."""
        with _backends_lock:
            dropped = list(_backends.values())
            _backends.clear()
        for backend in dropped:
            backend.close()

    def close(self) -> None:
        """Remove this backend's spares (:mod:`.spares`); later fast starts keep new ones as needed."""
        if self._spares is not None:
            self._spares.close()

    def chosen_because(self, options: SandboxOptions, *, auto: bool) -> str:
        if auto:
            return f"auto: Docker engine and kernel image found (runtime {self.runtime})"
        return f"docker backend requested (runtime {self.runtime})"

    @classmethod
    def remove_orphans(cls, owned: Owned, report: CleanupReport) -> None:
        """Remove pixelbox containers whose owner pid ``owned`` accepts (an engine that is down is reported),
        and what the runsc restore path ran for them."""
        restore.remove_orphans(owned, report)
        criu.remove_orphans(owned, report)
        try:
            client = docker_client()
        except BackendUnavailable as exc:
            report.errors.append(str(exc))
            return
        for container in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True):
            if owned(_owner(container.labels)):
                try:
                    container.remove(force=True)
                    report.containers.append(container.name)
                except Exception as exc:
                    report.errors.append(f"container {container.name}: {exc}")

    @classmethod
    def leftovers_of(cls, pid: int, start: int | None) -> dict[str, list[str]]:
        """Containers of ``pid``'s sandboxes still known to the engine or to runsc's restore path."""
        restored = restore.leftovers_of(pid, start) + criu.leftovers_of(pid, start)
        try:
            client = docker_client()
        except BackendUnavailable:
            return {"containers": restored} if restored else {}
        found = restored + [
            c.name
            for c in client.containers.list(
                all=True, filters={"label": [LABEL, f"{OWNER_LABEL}={pid}"]}, ignore_removed=True
            )
            if belongs_to(_owner(c.labels), pid, start)
        ]
        return {"containers": found} if found else {}

    def _check_image(self, build_command: str) -> None:
        import docker.errors

        from pixelbox.runtime.custom_image import stale_custom_image

        try:
            found = self.client.images.get(self.image)
        except docker.errors.ImageNotFound:
            if self.image.startswith("pixelbox-kernel:"):
                others = [t for img in self.client.images.list(name="pixelbox-kernel") for t in img.tags]
                stale = f" (found only other versions: {', '.join(others[:3])})" if others else ""
                raise ImageMissing(
                    f"the kernel image {self.image} is not built{stale}; build it with `{build_command}`"
                ) from None
            raise ImageMissing(
                f"the image {self.image} is not in the Docker engine; build a derived kernel image with "
                f"`pixelbox image build --requirements FILE --tag {self.image}` (docs/images.md)"
            ) from None
        problem = stale_custom_image(found.labels)
        if problem is not None:
            raise ImageMissing(f"the image {self.image} cannot run with this pixelbox: {problem}")
        self.image_id = found.id

    def _check_runtime(self, engine: dict[str, Any]) -> None:
        runtimes = engine.get("Runtimes", {})
        if self.runtime not in runtimes:
            raise BackendUnavailable(
                f"Docker has no {self.runtime!r} runtime (it has {sorted(runtimes)}); `make setup` installs "
                "gVisor and registers runsc with --network=none and --host-uds=all"
            )

    def paths(self, layout: Layout) -> KernelPaths:
        return KernelPaths(ipc=IPC_MOUNT, workspace=WORK_MOUNT, inputs=INPUTS_MOUNT)

    def environment(self, options: SandboxOptions) -> dict[str, str]:
        """The container's whole environment (Docker passes nothing from the host)."""
        threads = str(max(1, int(options.cpus)))
        env = {
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": "/tmp/.mpl",
            "IPYTHONDIR": "/tmp/.ipython",
            "JUPYTER_RUNTIME_DIR": "/tmp/.jupyter",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": threads,
            "OPENBLAS_NUM_THREADS": threads,
            "PIXELBOX_SANDBOX": f"docker-{self.runtime}",
        }
        env.update(options.env)
        return env

    def start(self, layout: Layout, options: SandboxOptions, uid: int | None = None) -> DockerHandle:
        memory = int(options.memory)
        suffix = uuid.uuid4().hex[:12]
        group = self._memory_group(f"{layout.root.name}-{suffix}", memory)
        limit = memory + BACKSTOP_MARGIN if group else memory
        try:
            container = self._run(layout, options, suffix, limit, group)
        except BaseException:
            if group is not None:
                group.remove()
            raise
        if group is not None and not _inside(container, group):
            self.memory_groups = False
            group.remove()
            group = None
        return DockerHandle(container, memory if group else limit, group)

    def _memory_group(self, name: str, memory: int) -> KernelCgroup | None:
        """A pixelbox cgroup holding the memory limit, so an OOM kill is on record after exit."""
        if not self.memory_groups:
            return None
        group = KernelCgroup(name, memory)
        try:
            applied = group.create()
            if {"memory.limit_in_bytes", "memory.max"} & set(applied) and group.watch_oom():
                group.adopt_children()
                return group
        except OSError:
            pass
        group.remove()
        return None

    def _run(self, layout: Layout, options: SandboxOptions, suffix: str, limit: int, group: KernelCgroup | None) -> Any:
        owner = this_owner()
        return self.client.containers.run(
            self.image,
            command=["python", SAFE_PATH, *KERNEL_COMMAND, IPC_MOUNT],
            name=f"pixelbox-{suffix}",
            detach=True,
            init=True,
            runtime=self.runtime,
            user=f"{CONTAINER_UID}:{CONTAINER_UID}",
            working_dir=WORK_MOUNT,
            environment=self.environment(options),
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={int(options.tmpfs_size)},mode=1777"},
            shm_size=int(options.tmpfs_size),  # /dev/shm capped like /tmp (and like a local kernel's)
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=options.pids + (RUNSC_PIDS_HEADROOM if self.runtime == "runsc" else 0),
            mem_limit=limit,
            memswap_limit=limit,
            cgroup_parent=group.path if group else None,
            nano_cpus=int(options.cpus * 1e9),
            ulimits=_ulimits(options),
            volumes={
                str(layout.ipc): {"bind": IPC_MOUNT, "mode": "rw"},
                str(layout.work): {"bind": WORK_MOUNT, "mode": "rw"},
                str(layout.inputs): {"bind": INPUTS_MOUNT, "mode": "ro"},
            },
            labels={LABEL: "1", OWNER_LABEL: str(owner.pid), OWNER_START_LABEL: str(owner.start)},
            hostname="sandbox",
        )

    def prepare_fresh(self, options: SandboxOptions) -> None:
        """Where the runtime's restore path runs (off: ``PIXELBOX_RUNSC_RESTORE=0`` / ``PIXELBOX_RUNC_RESTORE=0``):
        start making the checkpoint template."""
        path = self._restore_path()
        if path is not None:
            template = path.template(options, self.environment(options.with_(env={})))
            self._spares_of(path).keep(template, options)

    def start_fresh(self, layout: Layout, options: SandboxOptions, uid: int | None = None) -> KernelHandle | None:
        """A kernel restored from the checkpoint (runsc: :mod:`.restore`; runc with CRIU: :mod:`.criu`);
        None: start cold."""
        path = self._restore_path()
        if path is None:
            return None
        env = self.environment(options.with_(env={}))
        # an option set's checkpoint is made in the background on its second use and used once ready (no
        # sandbox waits for it), or ahead by prepare_fresh and waited for; with the path asked for
        # explicitly (PIXELBOX_RUNSC_RESTORE=1 / PIXELBOX_RUNC_RESTORE=1) on the first use, waited for
        on_demand = not (restore.eager() if self.runtime == "runsc" else criu.eager())
        template = path.template_on_demand(options, env) if on_demand else path.template(options, env)
        if template is None or not template.ready(options.start_timeout):
            return None
        handle = path.restore(template, layout, options, self.environment(options))
        self._spares_of(path).keep(template, options, after=layout)  # the next sandbox of these options
        return handle

    def take_parked(self, options: SandboxOptions) -> ParkedKernel | None:
        """A kernel restored ahead for ``options`` and parked (:mod:`.spares`), when the restore path keeps one."""
        path = self._restore_path() if spares.enabled() else None
        if path is None:
            return None
        key = path.key_of(options, self.environment(options.with_(env={})))
        return self._spares_of(path).take(key, options, self.environment(options))

    def spare(self, options: SandboxOptions, timeout: float = 0.0) -> spares.Spare | None:
        """The spare parked for ``options`` (not taken), waiting up to ``timeout`` for one being restored."""
        parked = self.parked_spares(options, timeout)
        return parked[0] if parked else None

    def parked_spares(self, options: SandboxOptions, timeout: float = 0.0, count: int = 1) -> list[spares.Spare]:
        """The spares parked for ``options`` (not taken), waiting up to ``timeout`` while fewer than ``count``
        are parked and more are being restored."""
        path = self._restore_path()
        if path is None:
            return []
        key = path.key_of(options, self.environment(options.with_(env={})))
        return self._spares_of(path).parked(key, options, timeout, count)

    def _spares_of(self, path: restore.RestorePath) -> spares.Spares:
        with self._spares_lock:  # one per backend, however many threads start sandboxes at once
            if self._spares is None:
                self._spares = spares.Spares(path, self.kernel_uid)
            return self._spares

    def _restore_path(self) -> restore.RestorePath | None:
        """The checkpoint/restore path of this runtime when switched on: runsc's own, or runc's with CRIU."""
        runsc = self.runtime == "runsc"
        if not (restore.enabled() if runsc else self.runtime == "runc" and criu.enabled()):
            return None
        if self._restore is None:
            mounts = restore.Mounts(IPC_MOUNT, WORK_MOUNT, INPUTS_MOUNT)
            path = restore.RestorePath if runsc else criu.RuncRestorePath
            self._restore = path(self.client, self.image, self.image_id, mounts, RUNSC_PIDS_HEADROOM if runsc else 0)
        return self._restore

    def run_command(self, handle: KernelHandle, layout: Layout, options: SandboxOptions, spec: CommandSpec) -> Captured:
        """``docker exec`` into the sandbox's container as its unprivileged uid, under coreutils ``timeout``
        (``runc exec`` for a kernel restored by the runc restore path).

        The container's limits (memory, pids, CPUs, read-only root, no network) hold for the
        command as for the kernel. ``timeout`` stops it at the deadline (TERM, then KILL a second
        later); the host stops reading shortly after that whatever happens in the container.
        """
        if isinstance(handle, restore.RestoredHandle):  # runsc's own container: runsc exec, as Docker would
            return restore.run_command(handle, spec, {**self.environment(options), **spec.env}, WORK_MOUNT)
        if isinstance(handle, criu.RuncRestoredHandle) and self._restore is not None:  # runc's, not Docker's
            env = {**self._restore.image_env(), **self.environment(options), **spec.env}
            return criu.run_command(handle, env, WORK_MOUNT, spec)
        if not isinstance(handle, DockerHandle):
            raise BackendUnavailable(
                "run_command needs a Docker container; this kernel was restored from a checkpoint "
                "outside Docker and its runtime's restore path is gone"
            )
        api = self.client.api
        argv = ["timeout", "--kill-after=1", f"{spec.timeout:g}", *spec.argv]
        created = api.exec_create(
            handle.container.id,
            argv,
            stdout=True,
            stderr=True,
            user=f"{CONTAINER_UID}:{CONTAINER_UID}",
            environment={**self.environment(options), **spec.env},
            workdir=WORK_MOUNT,
        )
        captured = new_capture(spec)
        started = time.monotonic()
        reader = threading.Thread(
            target=_read_exec, args=(api, created["Id"], captured), name="pixelbox-exec-output", daemon=True
        )
        reader.start()
        reader.join(spec.timeout + 1 + DRAIN_S)
        code = api.exec_inspect(created["Id"]).get("ExitCode")
        overran = time.monotonic() - started >= spec.timeout
        captured.timed_out = reader.is_alive() or (code in (124, 137) and overran)
        captured.exit_code = None if captured.timed_out else code
        return captured

    def facts(self, handle: KernelHandle, ready: dict[str, Any], options: SandboxOptions) -> dict[str, Any]:
        if isinstance(handle, restore.RestoredHandle):
            entry = [*restore.exec_prefix(handle.container, WORK_MOUNT), handle.container]
            return {**restore.facts(handle, ready, options, options.pids + RUNSC_PIDS_HEADROOM), "enter": entry}
        if isinstance(handle, criu.RuncRestoredHandle):
            return criu.facts(handle, ready, options, WORK_MOUNT)
        assert isinstance(handle, DockerHandle)
        host = handle.container.attrs.get("HostConfig", {})
        interfaces = ready.get("interfaces") or []
        return {
            "container": True,
            "container_id": handle.container.id,
            "runtime": self.runtime,
            "network": f"{host.get('NetworkMode', 'none')} (interfaces: {', '.join(interfaces) or 'none'})",
            "network_isolated": host.get("NetworkMode") == "none",
            "user": f"uid {ready.get('uid')}",
            "read_only_root": bool(host.get("ReadonlyRootfs")),
            "cap_drop": host.get("CapDrop"),
            "security_opt": host.get("SecurityOpt"),
            "memory_limit": _memory_enforcement(handle),
            "cgroup_parent": host.get("CgroupParent") or "the engine's default",
            "limits": {
                "memory": handle.memory,
                "memory_swap": handle.memory,
                "pids": host.get("PidsLimit"),
                "nano_cpus": host.get("NanoCpus"),
                "tmpfs": host.get("Tmpfs"),
            },
            "environment": "scrubbed (explicit allow-list only)",
        }


def _inside(container: Any, group: KernelCgroup) -> bool:
    """Whether the engine put ``container``'s cgroup inside ``group`` (as this host sees it)."""
    memory_dir = group.memory_dir()
    return memory_dir is not None and (memory_dir / container.id).is_dir()


def _memory_enforcement(handle: DockerHandle) -> str:
    """Which cgroup holds the memory limit, and so where an OOM kill is recorded."""
    group = handle.group
    if group is None:
        return "the container's cgroup (OOM kills known from the engine's OOMKilled flag)"
    return (
        f"pixelbox cgroup {group.path}, which contains the container's (no swap; OOM kills are "
        "recorded there and outlive the container)"
    )


def _read_exec(api: Any, exec_id: str, captured: Captured) -> None:
    """Split the exec's multiplexed output into the captured streams as it arrives (UTF-8 kept whole)."""
    sinks = (
        (captured.stdout, codecs.getincrementaldecoder("utf-8")(errors="replace")),
        (captured.stderr, codecs.getincrementaldecoder("utf-8")(errors="replace")),
    )
    with contextlib.suppress(Exception):  # an engine hiccup ends the output, never the caller
        for chunks in api.exec_start(exec_id, stream=True, demux=True):
            for chunk, (sink, decoder) in zip(chunks, sinks, strict=False):
                if chunk:
                    sink.write(decoder.decode(chunk))
    for sink, decoder in sinks:
        sink.write(decoder.decode(b"", final=True))


def _ulimits(options: SandboxOptions) -> list[Any]:
    from docker.types import Ulimit

    return [
        Ulimit(name="nofile", soft=options.max_open_files, hard=options.max_open_files),
        Ulimit(name="fsize", soft=int(options.max_file_size), hard=int(options.max_file_size)),
        Ulimit(name="core", soft=0, hard=0),
    ]


def _owner(labels: dict[str, str]) -> Owner:
    """A container's owner from its labels (no start label: a container made before it was recorded)."""
    start = labels.get(OWNER_START_LABEL, "")
    return Owner(int(labels.get(OWNER_LABEL, "0") or 0), int(start) if start.isdigit() else None)
