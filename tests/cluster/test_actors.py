"""``pixelbox.ray`` for rollout workers, on a real three-node cluster with the Docker backend (runc):
sandbox actors run traced code and hand back the Execution with its events and artifact bytes; a pool
spreads its actors over the sandbox nodes and replaces one whose process died."""

from __future__ import annotations

import io
import os
import signal
import time
from typing import Any

import numpy as np
import pytest
from PIL import Image

from pixelbox.ray import RemoteSandbox, SandboxActorPool
from pixelbox.runtime.options import SandboxOptions
from tests.cluster.helpers import note_worker

RUNC = SandboxOptions(backend="docker", runtime="runc", memory="1g", io={"enabled": True, "profile": "agentic-mme"})


def picture() -> bytes:
    pixels = np.zeros((60, 80, 3), dtype=np.uint8)
    pixels[10:30, 20:60] = (200, 30, 30)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def record_pid(sandbox: RemoteSandbox) -> dict[str, Any]:
    """Where the actor runs; its pid is recorded so the fixture removes what a killed actor leaves."""
    where = sandbox.where()
    pids = os.environ["PIXELBOX_TEST_PIDS"]
    open(os.path.join(pids, str(where["pid"])), "w").close()
    return where


def test_a_sandbox_actor_runs_traced_code_and_returns_its_artifacts(cluster: Any) -> None:
    sandbox = RemoteSandbox.start(RUNC)
    try:
        where = record_pid(sandbox)
        assert where["node_id"] in {node.node_id for node in cluster.worker_nodes}  # never the head
        path = sandbox.upload(picture(), "photo.png")
        code = (
            "from PIL import Image\n"
            f"img = Image.open({path!r})\n"
            "for k in range(2):\n"
            "    img = img.crop((5, 5, img.width - 5, img.height - 5))\n"
            "img.save('zoom.png')\n"
            "marker = 41\n"
        )
        result = sandbox.execute(code)
        assert result.status == "ok", result.error
        assert [e["op"] for e in result.events].count("crop") == 2  # the loop ran twice, both traced
        (artifact,) = result.artifacts
        assert (artifact["width"], artifact["height"]) == (60, 40)
        files = sandbox.artifacts(result)
        with Image.open(io.BytesIO(files[artifact["name"]])) as image:
            assert image.size == (60, 40)
        assert sandbox.execute("print(marker + 1)").stdout.strip() == "42"  # state kept between calls
        rotated = sandbox.call_tool("rotate", {"image_index": artifact["index"], "angle": 90})
        assert rotated.status == "ok" and rotated.events[0]["op"] == "rotate" and rotated.artifacts
        assert sandbox.download(artifact["relpath"]) == files[artifact["name"]]
        sandbox.reset()
        assert sandbox.execute("print('marker' in dir())").stdout.strip() == "False"
    finally:
        sandbox.close()


def test_a_pool_spreads_over_the_nodes_and_survives_dead_actors(cluster: Any) -> None:
    import ray

    pool = SandboxActorPool(4, RUNC)
    try:
        held = [pool.acquire(timeout=300) for _ in range(4)]
        places = [record_pid(sandbox) for sandbox in held]
        workers = {node.node_id for node in cluster.worker_nodes}
        assert {p["node_id"] for p in places} == workers  # two units per node: both nodes hold some
        assert held[0].execute("x = 1").status == "ok"
        os.kill(places[0]["pid"], signal.SIGKILL)  # the actor's process dies with its sandbox: Ray restarts it
        restarted = wait_for_new_pid(held[0], places[0]["pid"])
        assert restarted != places[0]["pid"]
        assert held[0].execute("print('x' in dir())").stdout.strip() == "False"  # a fresh sandbox
        ray.kill(held[1].actor, no_restart=True)  # an actor gone for good: the pool replaces it on release
        for sandbox in held:
            pool.release(sandbox)
        again = [pool.acquire(timeout=300) for _ in range(4)]
        assert held[1] not in again
        for sandbox in again:
            record_pid(sandbox)
            assert sandbox.execute("print(6 * 7)").stdout.strip() == "42"
        for sandbox in again:
            pool.release(sandbox)
    finally:
        pool.close()
    assert note_worker()  # the driver is still connected


def wait_for_new_pid(sandbox: RemoteSandbox, old: int, limit: float = 240) -> int:
    """The pid of the restarted actor (recorded for cleanup), once Ray has brought it back."""
    import ray

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            where = ray.get(sandbox.actor.where.remote(), timeout=30)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            continue
        open(os.path.join(os.environ["PIXELBOX_TEST_PIDS"], str(where["pid"])), "w").close()
        if where["pid"] != old:
            return int(where["pid"])
    pytest.fail(f"the actor was not restarted within {limit} s")
