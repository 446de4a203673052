"""The DaemonSets an emulated cluster runs: its CNI's (profile `cni`) and kube-proxy's.

Names, namespaces, labels and images come from the one CNI table (workers/cni.py), taken
from each CNI's upstream manifests, so the battery's CNI detection meets here what it meets
on a real cluster.
"""

from __future__ import annotations

import uuid
import zlib
from typing import TYPE_CHECKING, Any

from workers.cni import BY_SLUG

if TYPE_CHECKING:
    from lab.cluster import Cluster


def cni_daemonset(cni: str) -> tuple[str, str, dict[str, str], str]:
    """(namespace, DaemonSet name, pod labels, image template) of a CNI, from the one table
    (workers/cni.py) the battery and ingest detect with; an unknown CNI gets a plain one."""
    plugin = BY_SLUG.get(cni)
    if plugin is None:
        return "kube-system", cni, {"k8s-app": cni}, f"example.com/{cni}:v{{v}}"
    labels = dict(plugin.labels) or {"k8s-app": plugin.daemonsets[0]}
    return plugin.namespace, plugin.daemonsets[0], labels, plugin.image


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
        ns, name, labels, image = cni_daemonset(cni)
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


def _configmap(cluster: Cluster, namespace: str, name: str, data: dict[str, str]) -> dict[str, Any]:
    uid = str(
        uuid.UUID(int=zlib.crc32(f"{cluster.name}/cm/{namespace}/{name}".encode()), version=4)
    )
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "resourceVersion": str(cluster.resource_version),
            "creationTimestamp": "2024-10-22T20:30:00Z",
        },
        "data": dict(data),
    }


def configmaps(cluster: Cluster, namespace: str | None = None) -> list[dict[str, Any]]:
    """The ConfigMaps that say a CNI's mode (named and keyed as the CNIs' own manifests do)
    and kube-proxy's: what the battery reads to tell who really programs Services."""
    profile = cluster.profile
    out: list[dict[str, Any]] = []
    cni = profile["cni"]
    replaced = profile["kube_proxy"] == "none"
    if cni == "cilium":
        out.append(
            _configmap(
                cluster,
                "kube-system",
                "cilium-config",
                {
                    "kube-proxy-replacement": "true" if replaced else "false",
                    "cni-chaining-mode": "none",
                    "tunnel-protocol": "vxlan",
                },
            )
        )
    if profile["kube_proxy"] != "none":
        mode = profile["kube_proxy"]
        out.append(
            _configmap(
                cluster,
                "kube-system",
                "kube-proxy",
                {
                    "config.conf": (
                        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
                        "kind: KubeProxyConfiguration\n"
                        f'mode: "{"" if mode == "iptables" else mode}"\n'
                    )
                },
            )
        )
    return [c for c in out if namespace is None or c["metadata"]["namespace"] == namespace]
