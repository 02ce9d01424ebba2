"""Joining a Ray cluster and the custom resource that says how many sandboxes a node holds.

Every node that may run sandboxes declares ``pixelbox_sandbox: N`` (``ray start --resources``);
episodes and :class:`~pixelbox.ray.actors.SandboxActor` each take one unit, so other Ray work on the
cluster (a trainer's GPUs, its CPUs) is never starved by sandboxes, and a node without the resource
never gets one.
"""

from __future__ import annotations

import os
from typing import Any

import ray

RESOURCE = "pixelbox_sandbox"
"""The custom resource: one unit per sandbox a node can hold at once."""

SANDBOX_MEMORY = 1 << 30
"""Memory set aside per sandbox when sizing a node (a kernel with NumPy, OpenCV and a few images)."""


class ClusterError(ValueError):
    """The Ray cluster cannot run sandboxes (none of its nodes declares the resource, or no Ray at the address)."""


def node_capacity(cpus: float, memory_bytes: int, *, per_cpu: float = 2.0, sandbox_memory: int = SANDBOX_MEMORY) -> int:
    """How many sandboxes a node holds: ``per_cpu`` per CPU (kernels mostly wait on the model), bounded
    by memory at ``sandbox_memory`` each; at least one."""
    by_cpu = int(cpus * per_cpu)
    by_memory = int(memory_bytes // sandbox_memory)
    return max(1, min(by_cpu, by_memory))


def connect(address: str | None, *, num_cpus: int | None = None, object_store_memory: int | None = None) -> int:
    """Join the cluster at ``address`` (``auto``: the one this machine belongs to), or start a local one
    (``None``) whose node declares its sandbox capacity. Returns the cluster's sandbox capacity.

    Raises :class:`ClusterError` when the cluster declares no ``pixelbox_sandbox`` resource.
    """
    if not ray.is_initialized():
        if address is None:
            cpus = num_cpus or os.cpu_count() or 1
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            resources = {RESOURCE: float(node_capacity(cpus, memory))}
            ray.init(
                num_cpus=cpus,
                resources=resources,
                object_store_memory=object_store_memory or 200 * 1024 * 1024,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        else:
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
            except ConnectionError as exc:
                raise ClusterError(f"no Ray cluster at {address!r}: {exc}; start one with `ray start --head`") from exc
    return sandbox_capacity()


def sandbox_capacity() -> int:
    """The cluster's total ``pixelbox_sandbox`` units (:class:`ClusterError` when there are none)."""
    total: dict[str, Any] = ray.cluster_resources()
    capacity = int(total.get(RESOURCE, 0))
    if capacity < 1:
        raise ClusterError(
            f"no node of this Ray cluster declares the {RESOURCE!r} resource, so no sandbox can be placed; "
            f"start the sandbox nodes with `ray start ... --resources '{{\"{RESOURCE}\": N}}'` "
            "(N sandboxes per node: see pixelbox.ray.node_capacity and docs/scale.md)"
        )
    return capacity
