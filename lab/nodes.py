"""The nodes of an emulated cluster and what is true on them: names, IPs, loaded kernel modules.

`nodetools` prints node-side facts in the real tools' formats; this module keeps the facts
themselves (which node has sctp.ko loaded, and why) and renders the Node API objects.
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lab import families
from lab.daemonsets import node_annotations
from lab.store import timestamp


@dataclass
class Node:
    index: int
    name: str
    host_ip: str
    sctp_loaded: bool = False
    schedulable: bool = True
    # What clients changed through the API (kubectl label, annotate, cordon, taint): the whole
    # labels and annotations maps, spec.unschedulable and spec.taints; None while unchanged.
    edited: dict[str, Any] | None = None

    @property
    def cordoned(self) -> bool:
        return bool((self.edited or {}).get("unschedulable"))

    @property
    def takes_pods(self) -> bool:
        """Whether the scheduler places new pods here: not cordoned, no NoSchedule or NoExecute
        taint (the lab's pods carry no tolerations)."""
        if self.edited is None:
            return self.schedulable
        return not self.cordoned and not any(
            t.get("effect") in ("NoSchedule", "NoExecute") for t in self.edited["taints"]
        )


@dataclass
class ModuleEvent:
    """Why sctp.ko got loaded on a node; kept so tests and humans can see the cause."""

    at: float
    node: str
    cause: str


def make_nodes(name: str, profile: dict[str, Any]) -> list[Node]:
    count = profile["nodes"]
    loaded = bool(profile["sctp_module_loaded_at_start"])
    nodes: list[Node] = []
    for i in range(count):
        if i == 0:
            node_name = f"{name}-control-plane"
        else:
            node_name = f"{name}-worker" + ("" if i == 1 else str(i))
        # Like kind: the control plane is tainted once there are workers to schedule on.
        nodes.append(
            Node(i, node_name, f"172.18.0.{i + 2}", loaded, schedulable=(count == 1 or i > 0))
        )
    return nodes


class NodeSet:
    """The cluster's nodes and the kernel-module events on them."""

    def __init__(self, name: str, profile: dict[str, Any], clock: Callable[[], float]) -> None:
        self.name = name
        self.profile = profile
        self.clock = clock
        self.started_at = clock()
        self.nodes = make_nodes(name, profile)
        self.module_events: list[ModuleEvent] = []

    def node_by_name(self, name: str) -> Node | None:
        return next((n for n in self.nodes if n.name == name), None)

    def module_load(self, node: Node, cause: str) -> None:
        # Nodes sharing the host's kernel (kind) share its modules: loaded on one, on all.
        shared = self.profile.get("shared_kernel")
        for each in self.nodes if shared else [node]:
            if not each.sctp_loaded:
                each.sctp_loaded = True
                self.module_events.append(ModuleEvent(self.clock(), each.name, cause))

    def boot_id(self, node: Node) -> str:
        """/proc/sys/kernel/random/boot_id as the kubelet reports it: one per kernel."""
        seed = self.name if self.profile.get("shared_kernel") else f"{self.name}/{node.name}"
        return str(uuid.UUID(int=zlib.crc32(seed.encode()) << 64 | 0x4000, version=4))

    def render_node(
        self, node: Node, resource_version: int, in_list: bool = False
    ) -> dict[str, Any]:
        version = "v" + self.profile["kubernetes_version"]
        labels = {
            "kubernetes.io/hostname": node.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
        }
        spec: dict[str, Any] = {
            "podCIDR": f"10.244.{node.index}.0/24",
            "podCIDRs": [f"10.244.{node.index}.0/24"],
            "providerID": f"kind://docker/{self.name}/{node.name}",
        }
        if node.index == 0:
            labels["node-role.kubernetes.io/control-plane"] = ""
            if not node.schedulable:
                spec["taints"] = [
                    {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
                ]
        annotations = node_annotations(self, node.host_ip)
        if node.edited is not None:
            labels = dict(node.edited["labels"])
            annotations = dict(node.edited["annotations"])
            spec.pop("taints", None)
            if node.edited["taints"]:
                spec["taints"] = [dict(t) for t in node.edited["taints"]]
            if node.edited["unschedulable"]:
                spec["unschedulable"] = True
        created = timestamp(self.started_at)
        obj = {
            "metadata": {
                "name": node.name,
                "uid": str(uuid.UUID(int=zlib.crc32(node.name.encode()), version=4)),
                "resourceVersion": str(resource_version),
                "creationTimestamp": created,
                "labels": labels,
                "annotations": annotations,
            },
            "spec": spec,
            "status": {
                "addresses": [
                    *(
                        [{"type": "ExternalIP", "address": f"198.51.100.{node.index + 2}"}]
                        if (self.profile.get("faults") or {}).get("external_ip_unreachable")
                        else []
                    ),
                    *(
                        {"type": "InternalIP", "address": ip}
                        for ip in families.addresses(self, node.host_ip)
                    ),
                    {"type": "Hostname", "address": node.name},
                ],
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kubelet is posting ready status",
                        "lastHeartbeatTime": timestamp(self.clock()),
                        "lastTransitionTime": created,
                    }
                ],
                "nodeInfo": {
                    "architecture": "amd64",
                    # kind's nodes are containers on one host: one kernel, one boot ID.
                    "bootID": self.boot_id(node),
                    "containerRuntimeVersion": "containerd://1.7.18",
                    "kernelVersion": "6.8.0-45-generic",
                    "kubeProxyVersion": version,
                    "kubeletVersion": version,
                    "machineID": f"{zlib.crc32(node.name.encode()):032x}",
                    "operatingSystem": "linux",
                    "osImage": "Debian GNU/Linux 12 (bookworm)",
                    "systemUUID": str(uuid.UUID(int=zlib.crc32(node.name.encode()))),
                },
                "capacity": {"cpu": "8", "memory": "16318476Ki", "pods": "110"},
                "allocatable": {"cpu": "8", "memory": "16318476Ki", "pods": "110"},
            },
        }
        return obj if in_list else {"kind": "Node", "apiVersion": "v1", **obj}


def edit_node(node_set: NodeSet, node: Node, new: dict[str, Any]) -> None:
    """Keep what a client may change on a Node (a PUT's body or a patched copy): labels,
    annotations, spec.unschedulable and spec.taints. The node lifecycle controller's
    `node.kubernetes.io/unschedulable` taint follows a cordon as on a real cluster. The rest
    (addresses, capacity, conditions) is the kubelet's, and stays as the lab renders it."""
    meta = new.get("metadata") or {}
    spec = new.get("spec") or {}
    unschedulable = bool(spec.get("unschedulable"))
    taints = [dict(t) for t in spec.get("taints") or [] if isinstance(t, dict)]
    key = "node.kubernetes.io/unschedulable"
    had = node.cordoned
    if unschedulable and not had and not any(t.get("key") == key for t in taints):
        taints.append(
            {"key": key, "effect": "NoSchedule", "timeAdded": timestamp(node_set.clock())}
        )
    if not unschedulable and had:
        taints = [t for t in taints if t.get("key") != key]
    node.edited = {
        "labels": {str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        "annotations": {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
        "unschedulable": unschedulable,
        "taints": taints,
    }
