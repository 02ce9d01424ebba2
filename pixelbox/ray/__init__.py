"""pixelbox on Ray: runs spread over a cluster, and sandboxes as Ray actors for RL rollouts.

Needs the ``ray`` extra (``pip install 'pixelbox[ray]'``). Nodes that may run sandboxes declare the
custom resource ``pixelbox_sandbox`` (:data:`RESOURCE`), one unit per sandbox they can hold.

- :class:`RayExecutor` plays a run's episodes as Ray tasks (``pixelbox run --ray``); the driver alone
  writes the traces, images travel through the run store (:class:`ArtifactStore`).
- :class:`RemoteSandbox`, :class:`SandboxActorPool`: sandboxes held by :class:`SandboxActor` actors,
  with ``execute``, ``call_tool``, ``upload``, ``download`` and ``artifacts``, for rollout workers on
  any node. ``docs/scale.md`` has the guide, the Kubernetes manifests and the sizing.
"""

from pixelbox.ray.actors import RemoteSandbox, SandboxActor, SandboxActorPool, actor_class
from pixelbox.ray.cluster import RESOURCE, ClusterError, connect, node_capacity, sandbox_capacity
from pixelbox.ray.executor import RayExecutor, default_store
from pixelbox.ray.store import ArtifactStore

__all__ = [
    "RESOURCE",
    "ArtifactStore",
    "ClusterError",
    "RayExecutor",
    "RemoteSandbox",
    "SandboxActor",
    "SandboxActorPool",
    "actor_class",
    "connect",
    "default_store",
    "node_capacity",
    "sandbox_capacity",
]
