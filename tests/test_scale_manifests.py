"""The Kubernetes manifests of docs/scale/ are valid against the Kubernetes schemas (offline, the schemas
bundled with kubernetes-validate, strict: unknown fields fail), the RayCluster's pod templates too, and
they agree with pixelbox: the custom resource's name, the RuntimeClass the sandbox pods use, and a
sandbox count per worker pod that ``pixelbox.ray.node_capacity`` gives for the pod's limits."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

kubernetes_validate = pytest.importorskip("kubernetes_validate")
yaml = pytest.importorskip("yaml")

MANIFESTS = Path(__file__).resolve().parents[1] / "docs" / "scale"
VERSION = kubernetes_validate.latest_version()


def documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        found += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


def pod_templates(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """The head's and every worker group's pod template, as core/v1 PodTemplate objects."""
    spec = cluster["spec"]
    templates = [spec["headGroupSpec"]["template"], *(g["template"] for g in spec["workerGroupSpecs"])]
    return [{"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": t} for t in templates]


def validate(doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, VERSION, strict=True)


def test_every_manifest_is_valid_kubernetes() -> None:
    docs = documents()
    kinds = sorted(doc["kind"] for _, doc in docs)
    assert kinds == ["DaemonSet", "NetworkPolicy", "PersistentVolumeClaim", "RayCluster", "RuntimeClass"]
    for name, doc in docs:
        if doc["kind"] == "RayCluster":
            assert doc["apiVersion"] == "ray.io/v1", name
            for template in pod_templates(doc):
                validate(template)
        else:
            validate(doc)


def test_the_validation_would_catch_a_mistake() -> None:
    cluster = next(doc for _, doc in documents() if doc["kind"] == "RayCluster")
    broken = copy.deepcopy(pod_templates(cluster)[1])
    broken["template"]["spec"]["containers"][0]["resource"] = broken["template"]["spec"]["containers"][0].pop(
        "resources"
    )
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)


def test_the_cluster_matches_pixelbox() -> None:
    from pixelbox.ray import RESOURCE, node_capacity

    docs = dict((doc["kind"], doc) for _, doc in documents())
    cluster = docs["RayCluster"]
    head = json.loads(json.loads(cluster["spec"]["headGroupSpec"]["rayStartParams"]["resources"]))
    assert head == {RESOURCE: 0}  # the head never holds a sandbox
    for group in cluster["spec"]["workerGroupSpecs"]:
        params = group["rayStartParams"]
        declared = json.loads(json.loads(params["resources"]))[RESOURCE]
        pod = group["template"]["spec"]
        assert pod["runtimeClassName"] == docs["RuntimeClass"]["metadata"]["name"]
        limits = pod["containers"][0]["resources"]["limits"]
        memory = int(limits["memory"].removesuffix("Gi")) << 30
        assert int(params["num-cpus"]) == int(limits["cpu"])
        assert declared == node_capacity(int(limits["cpu"]), memory)
