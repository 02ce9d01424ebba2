"""The container backend: one Docker container per sandbox, runc or gVisor (runsc).

The container has no network interface (``network_mode=none``): the kernel's ZMQ sockets are
Unix-domain sockets in a bind-mounted private directory. Root is read-only with a size-capped
tmpfs on /tmp, the user is uid 1000, all capabilities are dropped, no-new-privileges is set,
and memory (without swap), pids and CPU are capped. The environment is built from scratch.
A waiter thread blocks on the container's exit so a dead kernel is noticed at once.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from typing import Any

from pixelbox.runtime.backends.base import KERNEL_COMMAND, Backend, KernelHandle, KernelPaths, describe_exit
from pixelbox.runtime.errors import BackendUnavailable, ImageMissing
from pixelbox.runtime.options import SandboxOptions
from pixelbox.runtime.workspace import Layout

LABEL = "pixelbox"
OWNER_LABEL = "pixelbox.owner-pid"
CONTAINER_UID = 1000
IPC_MOUNT = "/pixelbox/ipc"
WORK_MOUNT = "/workspace"
INPUTS_MOUNT = "/inputs"
RUNSC_PIDS_HEADROOM = 64
"""gVisor's own host threads (sentry, gofer, one stub per guest task on the ptrace platform)
count against the container's pids cgroup; without headroom a limit of 64 stops the kernel
from starting at all. Added under runsc so ``pids`` means about the same for model code."""
_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def docker_client() -> Any:
    """A shared Docker client (connection pool sized for many concurrent sandboxes)."""
    import docker

    with _clients_lock:
        if "default" not in _clients:
            try:
                client = docker.from_env(timeout=60, max_pool_size=64)
                client.ping()
            except Exception as exc:
                raise BackendUnavailable(
                    f"no Docker engine is reachable ({exc.__class__.__name__}: {exc}); start dockerd "
                    "(`make setup` installs and starts it) or use backend='local'"
                ) from None
            _clients["default"] = client
        return _clients["default"]


REMOVE_PATIENCE_S = 30.0
"""How long a container removal keeps retrying while the Docker engine does not answer."""


class DockerHandle(KernelHandle):
    """A running kernel container, watched by a thread blocked in ``container.wait()``."""

    def __init__(self, container: Any, memory: int) -> None:
        self.container = container
        self.memory = memory
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
            self._reason = describe_exit(self.exit_code, oom=oom, memory=self.memory)
        return self._reason

    def interrupt(self) -> None:
        with contextlib.suppress(Exception):
            self.container.kill(signal="SIGINT")

    def kill(self) -> None:
        """Remove the container; if the engine is briefly unreachable (a dockerd restart), retry.

        A container left behind by a failed removal would outlive its sandbox, so removal is
        retried for up to :data:`REMOVE_PATIENCE_S` while the engine does not answer.
        """
        import docker.errors

        deadline = time.monotonic() + REMOVE_PATIENCE_S
        delay = 0.2
        while True:
            try:
                self.container.remove(force=True)
                return
            except docker.errors.NotFound:
                return
            except Exception:
                if time.monotonic() + delay > deadline:
                    return
                time.sleep(delay)
                delay = min(delay * 2, 3.0)


class DockerBackend(Backend):
    """Starts kernel containers from the pixelbox kernel image."""

    def __init__(self, runtime: str = "runc", image: str | None = None) -> None:
        from pixelbox.runtime.image import BUILD_COMMAND, kernel_image_tag

        self.name = "docker"
        self.runtime = runtime
        self.kernel_uid = CONTAINER_UID
        self.client = docker_client()
        self.image = image or kernel_image_tag()
        self._check_image(BUILD_COMMAND)
        self._check_runtime()

    def _check_image(self, build_command: str) -> None:
        import docker.errors

        try:
            self.image_id = self.client.images.get(self.image).id
        except docker.errors.ImageNotFound:
            others = [t for img in self.client.images.list(name="pixelbox-kernel") for t in img.tags]
            stale = f" (found only other versions: {', '.join(others[:3])})" if others else ""
            raise ImageMissing(
                f"the kernel image {self.image} is not built{stale}; build it with `{build_command}`"
            ) from None

    def _check_runtime(self) -> None:
        runtimes = self.client.info().get("Runtimes", {})
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
        container = self.client.containers.run(
            self.image,
            command=["python", *KERNEL_COMMAND, IPC_MOUNT],
            name=f"pixelbox-{uuid.uuid4().hex[:12]}",
            detach=True,
            init=True,
            runtime=self.runtime,
            user=f"{CONTAINER_UID}:{CONTAINER_UID}",
            working_dir=WORK_MOUNT,
            environment=self.environment(options),
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={int(options.tmpfs_size)},mode=1777"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=options.pids + (RUNSC_PIDS_HEADROOM if self.runtime == "runsc" else 0),
            mem_limit=memory,
            memswap_limit=memory,
            nano_cpus=int(options.cpus * 1e9),
            ulimits=_ulimits(options),
            volumes={
                str(layout.ipc): {"bind": IPC_MOUNT, "mode": "rw"},
                str(layout.work): {"bind": WORK_MOUNT, "mode": "rw"},
                str(layout.inputs): {"bind": INPUTS_MOUNT, "mode": "ro"},
            },
            labels={LABEL: "1", OWNER_LABEL: str(os.getpid())},
            hostname="sandbox",
        )
        return DockerHandle(container, memory)

    def facts(self, handle: KernelHandle, ready: dict[str, Any], options: SandboxOptions) -> dict[str, Any]:
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
            "limits": {
                "memory": host.get("Memory"),
                "memory_swap": host.get("MemorySwap"),
                "pids": host.get("PidsLimit"),
                "nano_cpus": host.get("NanoCpus"),
                "tmpfs": host.get("Tmpfs"),
            },
            "environment": "scrubbed (explicit allow-list only)",
        }


def _ulimits(options: SandboxOptions) -> list[Any]:
    from docker.types import Ulimit

    return [
        Ulimit(name="nofile", soft=options.max_open_files, hard=options.max_open_files),
        Ulimit(name="fsize", soft=int(options.max_file_size), hard=int(options.max_file_size)),
        Ulimit(name="core", soft=0, hard=0),
    ]
