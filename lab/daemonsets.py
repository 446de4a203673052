"""The DaemonSets an emulated cluster runs: its CNI's (profile `cni`) and kube-proxy's.

Names, namespaces, labels and images come from the one CNI table (kernel/cni.py), taken
from each CNI's upstream manifests, so the battery's CNI detection meets here what it meets
on a real cluster.
"""

from __future__ import annotations

import uuid
import zlib
from typing import TYPE_CHECKING, Any

from kernel.cni import BY_SLUG

if TYPE_CHECKING:
    from lab.cluster import Cluster
    from lab.families import Profiled


def cni_daemonset(cni: str) -> tuple[str, str, dict[str, str], str]:
    """(namespace, DaemonSet name, pod labels, image template) of a CNI, from the one table
    (kernel/cni.py) the battery and ingest detect with; an unknown CNI gets a plain one."""
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


def _with_container(ds: dict[str, Any], **fields: Any) -> dict[str, Any]:
    ds["spec"]["template"]["spec"]["containers"][0].update(fields)
    return ds


SERVICE_DATAPLANE_OWNER = {
    "cilium-ebpf": "cilium",
    "calico-ebpf": "calico",
    "antrea-proxy": "antrea",
    "ovn": "ovn-kubernetes",
    "kube-router-ipvs": "kube-router",
}
# The platform's own system DaemonSets, as each platform names them.
FLAVOR_DAEMONSETS: dict[str, list[str]] = {
    "eks": ["amazon-vpc-cni"],
    "aks": ["azure-cni"],
    "gke-dpv2": ["gke-dataplane-v2"],
    "k3s": [],  # flannel and the policy controller are built into the k3s binary
}


def _cni_daemonset(cluster: Cluster, cni: str, version: str) -> dict[str, Any] | None:
    profile = cluster.profile
    if cni == "kubenet" or (cni == "flannel" and profile["flavor"] == "k3s"):
        return None  # the kubelet's own / built into k3s: no DaemonSet
    ns, name, labels, image = cni_daemonset(cni)
    ds = _daemonset(cluster, ns, name, labels, image.format(v=version))
    dataplane = profile["service_dataplane"]
    if cni == "calico" and dataplane == "calico-ebpf":
        _with_container(ds, env=[{"name": "FELIX_BPFENABLED", "value": "true"}])
    if cni == "calico" and cni != profile["cni"]:  # policy only on top of another CNI
        _with_container(ds, env=[{"name": "CALICO_NETWORKING_BACKEND", "value": "none"}])
    if cni == "kube-router":
        service_proxy = "true" if dataplane == "kube-router-ipvs" else "false"
        _with_container(
            ds,
            args=[
                f"--run-router={'true' if cni == profile['cni'] else 'false'}",
                "--run-firewall=true",
                f"--run-service-proxy={service_proxy}",
            ],
        )
    return ds


def daemonsets(cluster: Cluster, namespace: str | None = None) -> list[dict[str, Any]]:
    profile = cluster.profile
    out: list[dict[str, Any]] = []
    version = profile.get("plugin_version") or "1.0.0"
    cnis = list(FLAVOR_DAEMONSETS.get(profile["flavor"] or "", []))
    for cni in (profile["cni"], profile["policy_by"]):
        if cni and cni not in cnis:
            cnis.append(cni)
    # A Service dataplane runs as its CNI's agent (AKS: Azure CNI powered by Cilium).
    owner = SERVICE_DATAPLANE_OWNER.get(profile["service_dataplane"])
    if owner and owner not in cnis and not (owner == "cilium" and "gke-dataplane-v2" in cnis):
        cnis.append(owner)
    for cni in cnis:
        ds = _cni_daemonset(cluster, cni, version if cni == profile["cni"] else "1.0.0")
        if ds is not None:
            out.append(ds)
    if profile["kube_proxy"] != "none" and profile["flavor"] != "k3s":  # k3s embeds it
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
    names = {d["metadata"]["name"] for d in daemonsets(cluster)}
    dataplane = profile["service_dataplane"]
    if names & {"cilium", "anetd"}:
        chaining = "none"
        data = {
            "kube-proxy-replacement": "true" if dataplane == "cilium-ebpf" else "false",
            "cni-chaining-mode": chaining,
            "enable-ipv4": "true" if "IPv4" in profile["ip_families"] else "false",
            "enable-ipv6": "true" if "IPv6" in profile["ip_families"] else "false",
        }
        if profile["flavor"] == "aks":
            data["ipam"] = "delegated-plugin"
        out.append(_configmap(cluster, "kube-system", "cilium-config", data))
    if "antrea-agent" in names:
        proxy_all = "true" if dataplane == "antrea-proxy" else "false"
        conf = (
            "featureGates:\n  AntreaProxy: true\n"
            f"antreaProxy:\n  enable: true\n  proxyAll: {proxy_all}\n"
        )
        out.append(_configmap(cluster, "kube-system", "antrea-config", {"antrea-agent.conf": conf}))
    if "aws-node" in names:
        # The network policy agent enforces policy only when the VPC CNI is the plugin under
        # test; with Calico (or another) on top, that one does policy and the agent is off.
        own = profile["cni"] == "amazon-vpc-cni" and profile["policy_by"] in (
            None,
            "amazon-vpc-cni",
        )
        enabled = "true" if own and profile["dataplane"]["network_policy"] != "none" else "false"
        out.append(
            _configmap(
                cluster,
                "kube-system",
                "amazon-vpc-cni",
                {"enable-network-policy-controller": enabled},
            )
        )
    if profile["kube_proxy"] != "none" and profile["flavor"] != "k3s":
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
    # kube-controller-manager's root-ca-cert-publisher (pkg/controller/certificates/rootcacertpublisher):
    # every namespace gets kube-root-ca.crt with the API server's CA; upstream's e2e framework
    # waits for it in each test namespace before any spec runs (framework.go, BeforeEach).
    for ns in sorted(cluster.store.namespaces):
        out.append(_configmap(cluster, ns, "kube-root-ca.crt", {"ca.crt": cluster.root_ca_pem}))
    return [c for c in out if namespace is None or c["metadata"]["namespace"] == namespace]


def node_annotations(cluster: Profiled, node_ip: str) -> dict[str, str]:
    """What a platform writes on its nodes: k3s its arguments and its built-in flannel's."""
    if cluster.profile["flavor"] != "k3s":
        return {}
    return {
        "k3s.io/node-args": '["server"]',
        "k3s.io/internal-ip": node_ip,
        "flannel.alpha.coreos.com/backend-type": "vxlan",
        "flannel.alpha.coreos.com/kube-subnet-manager": "true",
        "flannel.alpha.coreos.com/public-ip": node_ip,
    }
