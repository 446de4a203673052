"""The DaemonSets an emulated cluster runs: its CNI's (profile `cni`) and kube-proxy's.

Names, namespaces and labels are those of each CNI's upstream manifests, so the battery's
CNI detection meets here what it meets on a real cluster.
"""

from __future__ import annotations

import uuid
import zlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.cluster import Cluster

# cni -> (namespace, DaemonSet name, pod labels, image)
CNI_DAEMONSETS: dict[str, tuple[str, str, dict[str, str], str]] = {
    "calico": (
        "calico-system",
        "calico-node",
        {"k8s-app": "calico-node"},
        "docker.io/calico/node:v{v}",
    ),
    "cilium": ("kube-system", "cilium", {"k8s-app": "cilium"}, "quay.io/cilium/cilium:v{v}"),
    "flannel": (
        "kube-flannel",
        "kube-flannel-ds",
        {"app": "flannel", "k8s-app": "flannel"},
        "docker.io/flannel/flannel:v{v}",
    ),
    "ovn-kubernetes": (
        "ovn-kubernetes",
        "ovnkube-node",
        {"name": "ovnkube-node"},
        "ghcr.io/ovn-org/ovn-kubernetes/ovn-kube-ubuntu:v{v}",
    ),
    "antrea": (
        "kube-system",
        "antrea-agent",
        {"app": "antrea", "component": "antrea-agent"},
        "antrea/antrea-agent-ubuntu:v{v}",
    ),
    "kube-router": (
        "kube-system",
        "kube-router",
        {"k8s-app": "kube-router"},
        "docker.io/cloudnativelabs/kube-router:v{v}",
    ),
}


def _daemonset(
    cluster: Cluster, namespace: str, name: str, labels: dict[str, str], image: str
) -> dict[str, Any]:
    count = len(cluster.nodes)
    uid = str(uuid.UUID(int=zlib.crc32(f"{cluster.name}/{namespace}/{name}".encode()), version=4))
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "generation": 1,
            "resourceVersion": str(cluster.resource_version),
            "creationTimestamp": "2024-10-22T20:30:00Z",
            "labels": dict(labels),
        },
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"hostNetwork": True, "containers": [{"name": name, "image": image}]},
            },
            "updateStrategy": {"type": "RollingUpdate"},
        },
        "status": {
            "currentNumberScheduled": count,
            "desiredNumberScheduled": count,
            "numberAvailable": count,
            "numberMisscheduled": 0,
            "numberReady": count,
            "observedGeneration": 1,
            "updatedNumberScheduled": count,
        },
    }


def daemonsets(cluster: Cluster, namespace: str | None = None) -> list[dict[str, Any]]:
    profile = cluster.profile
    out: list[dict[str, Any]] = []
    cni = profile["cni"]
    version = profile.get("plugin_version") or "1.0.0"
    if cni != "kubenet":  # kubenet is the kubelet's own: no DaemonSet
        ns, name, labels, image = CNI_DAEMONSETS.get(
            cni, ("kube-system", cni, {"k8s-app": cni}, f"example.com/{cni}:v{{v}}")
        )
        out.append(_daemonset(cluster, ns, name, labels, image.format(v=version)))
    if profile["kube_proxy"] != "none":
        out.append(
            _daemonset(
                cluster,
                "kube-system",
                "kube-proxy",
                {"k8s-app": "kube-proxy"},
                f"registry.k8s.io/kube-proxy:v{profile['kubernetes_version']}",
            )
        )
    return [d for d in out if namespace is None or d["metadata"]["namespace"] == namespace]
