"""What kube-proxy knows on a node: the Service ports it programs, the mode it runs in.

`lab.iptables`, `lab.nftables` and `lab.nodetools` (ipvsadm) print these facts as the real
tools would; the cluster is read through `NodeView` only.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lab.nodes import Node
    from lab.runtime import PodRuntime

Key = tuple[str, str]


class NodeView(Protocol):
    """What the node tools read of a cluster (its runtime provides it), and nothing more."""

    @property
    def profile(self) -> dict[str, Any]: ...
    @property
    def objects(self) -> dict[str, dict[Key, dict[str, Any]]]: ...
    @property
    def nodes(self) -> list[Node]: ...
    @property
    def pod_rt(self) -> dict[Key, PodRuntime]: ...

    def clock(self) -> float: ...
    def pod_is_ready(self, key: Key) -> bool: ...
    def lb_ip(self, key: Key) -> str | None: ...
    def service_backends(self, key: Key) -> list[tuple[Key, bool]]: ...
    def resolve_target_port(self, svc_port: dict[str, Any], pod_key: Key) -> int | None: ...


POD_CIDR = "10.244.0.0/16"


def rule_hash(text: str, length: int = 16) -> str:
    # kube-proxy's portProtoHash / hostportChainName: base32(sha256(...)) truncated.
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:length]


@dataclass
class ServicePort:
    namespace: str
    name: str
    port_name: str
    protocol: str  # upper-case
    cluster_ip: str | None
    port: int
    node_port: int | None
    lb_ip: str | None
    endpoints: list[tuple[str, int]]  # ready (ip, targetPort)

    @property
    def spn(self) -> str:
        # ServicePortName.String(): "ns/svc" plus ":port" only for a named port.
        return f"{self.namespace}/{self.name}" + (f":{self.port_name}" if self.port_name else "")

    @property
    def proto(self) -> str:
        return self.protocol.lower()


def service_ports(cluster: NodeView) -> list[ServicePort]:
    out: list[ServicePort] = []
    for key in sorted(cluster.objects["services"]):
        svc = cluster.objects["services"][key]
        spec = svc["spec"]
        if spec.get("type") == "ExternalName":
            continue
        cluster_ip = spec.get("clusterIP")
        if cluster_ip == "None":
            continue  # headless: kube-proxy ignores it
        for sp in spec.get("ports") or []:
            endpoints: list[tuple[str, int]] = []
            if key == ("default", "kubernetes"):
                endpoints = [(cluster.nodes[0].host_ip, 6443)]
            for pod, ready in cluster.service_backends(key):
                target = cluster.resolve_target_port(sp, pod)
                if ready and target is not None:
                    endpoints.append((cluster.pod_rt[pod].ip, target))
            out.append(
                ServicePort(
                    key[0],
                    key[1],
                    sp.get("name") or "",
                    sp.get("protocol", "TCP"),
                    cluster_ip,
                    sp["port"],
                    sp.get("nodePort"),
                    cluster.lb_ip(key),
                    sorted(set(endpoints)),
                )
            )
    return out


def kube_router_ipvs(cluster: NodeView) -> bool:
    return cluster.profile.get("service_dataplane") == "kube-router-ipvs"


def kube_proxy_mode(cluster: NodeView) -> str:
    """The mode kube-proxy really runs (profile `kube_proxy`), not the one registered."""
    return str(cluster.profile.get("kube_proxy") or cluster.profile["proxier"])
