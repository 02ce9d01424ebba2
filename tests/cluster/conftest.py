"""A real Ray cluster of three nodes on this machine (``ray.cluster_utils.Cluster``): a head without
sandbox capacity (the driver's) and two sandbox nodes with two ``pixelbox_sandbox`` units each.

Kept small for a shared two-core machine: one CPU per node, 80 MB object stores. Ray workers import
these test helpers by name (PYTHONPATH is the checkout). Containers left by workers that a test
killed are removed by their owner pids, which the helpers record, so no one else's are touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_backend

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'pixelbox[ray]')")
from ray.cluster_utils import Cluster  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
STORE_BYTES = 80 * 1024 * 1024
SANDBOXES_PER_NODE = 2


def sandbox_node(cluster: Any) -> Any:
    """Add one sandbox node to ``cluster``."""
    return cluster.add_node(
        num_cpus=1, resources={"pixelbox_sandbox": SANDBOXES_PER_NODE}, object_store_memory=STORE_BYTES
    )


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Any]:
    """A fresh three-node cluster per test (a test may kill nodes), joined by this process."""
    require_backend("runc")
    pids_dir = tmp_path / "worker-pids"
    pids_dir.mkdir()
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "PIXELBOX_TEST_PIDS")}
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), saved["PYTHONPATH"]]))
    os.environ["PIXELBOX_TEST_PIDS"] = str(pids_dir)
    made = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "object_store_memory": STORE_BYTES, "include_dashboard": False},
    )
    try:
        for _ in range(2):
            sandbox_node(made)
        made.wait_for_nodes()
        ray.init(address=made.address, log_to_driver=False, configure_logging=False)
        yield made
    finally:
        ray.shutdown()
        made.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        remove_worker_leftovers(pids_dir)


def remove_worker_leftovers(pids_dir: Path) -> None:
    """Containers and workspaces of the Ray workers this test started (recorded by pid), now dead."""
    from pixelbox.runtime.cleanup import remove_leftovers_of

    for marker in pids_dir.iterdir():
        remove_leftovers_of(int(marker.name))
