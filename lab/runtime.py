"""The runtime side of pods and Services: scheduling, IPs, ports, load balancers, lifecycle.

The API store keeps the objects; this keeps what a real cluster's kubelets, allocators and
controllers keep beside them (which node a pod runs on, its IP, when it starts, a Service's
load balancer IP), and answers the questions the dataplane asks (which pods back a Service).
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab import admission, families, managedfields, podstatus, validation
from lab.errors import ApiError, already_exists, invalid, not_found
from lab.labels import service_selector_matches
from lab.nodes import Node, NodeSet
from lab.store import ApiStore, Key, timestamp
from lab.workloads import Workload, read_pod

NO_NODE = -1  # PodRuntime.node of a pod bound to a node the cluster does not have
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/16")
LB_CIDR = ipaddress.ip_network("172.18.255.0/24")
NODE_PORT_RANGE = (30000, 32767)
KUBERNETES_SERVICE_IP = "10.96.0.1"
LB_DELAY_S = 0.2
PROBER_CONTAINER = "prober"  # the container that runs a probing loop (kernel.battery.pods)
PROBER_LOG_LINES = 4000  # a loop's log kept in memory (the kubelet rotates logs as well)


@dataclass
class PodRuntime:
    node: int
    ip: str
    created: float
    start_at: float
    workload: Workload
    started: bool = False
    exit_code: int | None = None  # set when a one-shot pod has run
    log: str = ""
    finished_at: float | None = None
    uid: str = ""
    # A probing loop's own container log (lab.workloads.Prober) and its rounds so far.
    prober_log: list[str] = field(default_factory=list)
    rounds: int = 0
    next_round_at: float = 0.0


@dataclass
class ServiceRuntime:
    lb_ip: str | None = None
    lb_ready_at: float | None = None
    lb_announced: bool = False  # the MODIFIED event for the published ingress IP was sent
    # When kube-proxy has programmed the Service's rules (fault service_programming_delay_s).
    programmed_at: float = 0.0


class Runtime:
    """Pods' and Services' runtime state, kept beside the store's objects."""

    def __init__(
        self,
        profile: dict[str, Any],
        clock: Callable[[], float],
        store: ApiStore,
        nodes: NodeSet,
    ) -> None:
        self.profile = profile
        self.clock = clock
        self.store = store
        self.node_set = nodes
        self.pod_rt: dict[Key, PodRuntime] = {}
        self.svc_rt: dict[Key, ServiceRuntime] = {}
        # Pods deleted while the endpoints_never_removed fault holds (see dataplane).
        self.ghost_pods: set[Key] = set()
        self._next_pod_host = [2] * len(nodes.nodes)
        self._rr = 0
        self._next_lb = 200

    @property
    def nodes(self) -> list[Node]:
        return self.node_set.nodes

    @property
    def faults(self) -> dict[str, Any]:
        return self.profile["faults"]

    @property
    def objects(self) -> dict[str, dict[Key, dict[str, Any]]]:
        return self.store.objects

    # ------------------------------------------------------------------ lifecycle

    def due_announcements(self, now: float) -> list[Key]:
        """Services whose load balancer IP is published by now (marked announced)."""
        due = []
        for key, srt in list(self.svc_rt.items()):
            if srt.lb_ready_at is not None and not srt.lb_announced and now >= srt.lb_ready_at:
                srt.lb_announced = True
                due.append(key)
        return due

    def due_pods(self, now: float) -> list[Key]:
        """Pods whose start time has come, oldest first."""
        due = sorted(
            (rt.start_at, key)
            for key, rt in self.pod_rt.items()
            if not rt.started and rt.start_at <= now and rt.node != NO_NODE
        )
        return [key for _start, key in due]

    def next_due(self) -> float | None:
        """When the next change that time alone makes is due (a pod start, an LB IP)."""
        times = [
            rt.lb_ready_at
            for rt in self.svc_rt.values()
            if rt.lb_ready_at is not None and not rt.lb_announced
        ]
        if not self.faults["stuck_pending"]:
            times += [
                rt.start_at for rt in self.pod_rt.values() if not rt.started and rt.node != NO_NODE
            ]
        return min(times) if times else None

    def pod_is_ready(self, key: Key) -> bool:
        rt = self.pod_rt.get(key)
        return bool(rt and rt.started and rt.workload.long_running)

    def forget(self, kind: str, key: Key) -> None:
        if kind == "pods":
            self.ghost_pods.discard(key)
            self.pod_rt.pop(key, None)
        if kind == "services":
            self.svc_rt.pop(key, None)

    # ------------------------------------------------------------------ pods

    def create_pod(
        self, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
    ) -> dict[str, Any]:
        validation.default_pod(spec)
        causes = validation.validate_pod(
            {**(body.get("metadata") or {}), "name": name, "namespace": namespace},
            spec,
            sctp=bool(self.profile["sctp_feature_gate"]),
        )
        if causes:
            raise invalid("Pod", name, causes)
        labels = (self.store.namespaces.get(namespace) or {}).get("metadata", {}).get("labels")
        refusal = admission.admission_refusal(self.profile, name, spec, labels)
        if refusal is not None:
            raise refusal
        if (namespace, name) in self.objects["pods"]:
            raise already_exists("pods", name)
        node = self._schedule(spec.get("nodeName"))
        if node is not None:
            spec["nodeName"] = node.name
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("securityContext", {})
        meta = self.store.new_metadata(body, namespace, name)
        obj = {"metadata": meta, "spec": spec}
        key = (namespace, name)
        self.objects["pods"][key] = obj
        now = self.clock()
        if node is None:
            ip = ""
        else:
            ip = node.host_ip if spec.get("hostNetwork") else self._pod_ip(node)
        self.pod_rt[key] = PodRuntime(
            node=node.index if node is not None else NO_NODE,
            ip=ip,
            created=now,
            start_at=now + float(self.faults["pod_start_delay_s"]),
            workload=read_pod(spec),
            uid=meta["uid"],
        )
        return obj

    def _schedule(self, wanted: str | None) -> Node | None:
        if wanted:
            # A pod bound to a node that does not exist is accepted, as a real server does;
            # no kubelet ever picks it up, so it stays Pending (None: no node).
            return self.node_set.node_by_name(wanted)
        candidates = [n for n in self.nodes if n.takes_pods]
        if not candidates:
            return None  # every node cordoned or tainted: Pending, as the scheduler leaves it
        node = candidates[self._rr % len(candidates)]
        self._rr += 1
        return node

    def schedule_waiting(self) -> list[Key]:
        """Place the pods the scheduler could not place (every node cordoned or tainted) on the
        nodes that take pods now, as the scheduler retries them; the pods placed."""
        placed = []
        for key, rt in sorted(self.pod_rt.items(), key=lambda item: item[1].created):
            spec = self.objects["pods"].get(key, {}).get("spec")
            if rt.node != NO_NODE or spec is None or spec.get("nodeName"):
                continue
            node = self._schedule(None)
            if node is None:
                break
            spec["nodeName"] = node.name
            rt.node = node.index
            rt.ip = node.host_ip if spec.get("hostNetwork") else self._pod_ip(node)
            rt.start_at = self.clock() + float(self.faults["pod_start_delay_s"])
            placed.append(key)
        return placed

    def _pod_ip(self, node: Node) -> str:
        used = {rt.ip for rt in self.pod_rt.values()}
        for _ in range(253):
            host = self._next_pod_host[node.index]
            self._next_pod_host[node.index] = 2 if host >= 254 else host + 1
            ip = f"10.244.{node.index}.{host}"
            if ip not in used:
                return ip
        raise ApiError(500, f"node {node.name} has no free pod IP left")

    def pod_status(self, key: Key) -> dict[str, Any]:
        rt = self.pod_rt[key]
        node = None if rt.node == NO_NODE else self.nodes[rt.node]
        return podstatus.pod_status(self, self.objects["pods"][key]["spec"], rt, node)

    def kubelet_entry(self, key: Key, status: dict[str, Any]) -> dict[str, Any] | None:
        """The kubelet's managedFields entry (`subresource: status`) for the rendered STATUS."""
        rt = self.pod_rt.get(key)
        if rt is None:
            return None
        node = None if rt.node == NO_NODE else self.nodes[rt.node]
        return podstatus.kubelet_entry(status, rt, node)

    def pod_log(
        self, namespace: str, name: str, container: str | None, tail_lines: int | None = None
    ) -> str:
        key = (namespace, name)
        if key not in self.objects["pods"]:
            raise not_found("pods", name)
        rt = self.pod_rt[key]
        names = [c["name"] for c in self.objects["pods"][key]["spec"].get("containers", [])]
        if container and container not in names:
            raise ApiError(400, f"container {container} is not valid for pod {name}")
        if container is None and len(names) > 1:
            raise ApiError(
                400,
                f"a container name must be specified for pod {name}, "
                f"choose one of: [{' '.join(names)}]",
            )
        if not rt.started:
            raise ApiError(
                400,
                f'container "{container or names[0]}" in pod "{name}" is waiting '
                "to start: ContainerCreating",
            )
        if rt.workload.prober is not None and container == PROBER_CONTAINER:
            lines = rt.prober_log[-tail_lines:] if tail_lines else rt.prober_log
            return "".join(f"{line}\n" for line in lines)
        if tail_lines:
            return "".join(rt.log.splitlines(keepends=True)[-tail_lines:])
        return rt.log

    # ------------------------------------------------------------------ services

    def create_kubernetes_service(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "metadata": {
                "name": "kubernetes",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "type": "ClusterIP",
                "clusterIP": KUBERNETES_SERVICE_IP,
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
            },
        }
        return self.create_service("default", "kubernetes", body, copy.deepcopy(body["spec"]))

    def _used_cluster_ips(self) -> set[str]:
        return {o["spec"].get("clusterIP") for o in self.objects["services"].values()}

    def _used_node_ports(self) -> set[int]:
        return {
            p.get("nodePort")
            for o in self.objects["services"].values()
            for p in o["spec"].get("ports") or []
        }

    def _allocation_causes(
        self, spec: dict[str, Any], used_node_ports: set[int]
    ) -> list[tuple[str, str, str]]:
        """The allocators run after validation and answer their own 422 (registry/core/service)."""
        causes = []
        svc_type = spec["type"]
        wanted_ip = spec.get("clusterIP")
        if wanted_ip and wanted_ip != "None" and svc_type != "ExternalName":
            in_range = ipaddress.ip_address(wanted_ip) in SERVICE_CIDR
            if not in_range:
                causes.append(
                    validation.invalid(
                        "spec.clusterIPs",
                        [wanted_ip],
                        f"failed to allocate IP {wanted_ip}: the provided IP ({wanted_ip}) is not in the "
                        f"valid range. The range of valid IPs is {SERVICE_CIDR}",
                    )
                )
            elif wanted_ip in self._used_cluster_ips():
                causes.append(
                    validation.invalid(
                        "spec.clusterIPs",
                        [wanted_ip],
                        f"failed to allocate IP {wanted_ip}: provided IP is already allocated",
                    )
                )
        for pi, port in enumerate(spec.get("ports") or []):
            wanted_np = port.get("nodePort")
            if wanted_np and svc_type in ("NodePort", "LoadBalancer"):
                if not NODE_PORT_RANGE[0] <= wanted_np <= NODE_PORT_RANGE[1]:
                    causes.append(
                        validation.invalid(
                            f"spec.ports[{pi}].nodePort",
                            wanted_np,
                            "provided port is not in the valid range. The range of valid ports is 30000-32767",
                        )
                    )
                elif wanted_np in used_node_ports:
                    causes.append(
                        validation.invalid(
                            f"spec.ports[{pi}].nodePort",
                            wanted_np,
                            "provided port is already allocated",
                        )
                    )
        return causes

    def create_service(
        self, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
    ) -> dict[str, Any]:
        validation.default_service(spec)
        svc_type = spec["type"]
        ports = spec.get("ports") or []
        if (namespace, name) != ("default", "kubernetes"):
            causes = validation.validate_service(
                {**(body.get("metadata") or {}), "name": name, "namespace": namespace},
                spec,
                sctp=bool(self.profile["sctp_feature_gate"]),
            )
            if causes:
                raise invalid("Service", name, causes)
            if (namespace, name) in self.objects["services"]:
                raise already_exists("services", name)
        used_node_ports = self._used_node_ports()
        causes = self._allocation_causes(spec, used_node_ports)
        if causes:
            raise invalid("Service", name, causes)
        wanted_ip = spec.get("clusterIP")
        if svc_type != "ExternalName":
            if wanted_ip == "None":
                spec["clusterIPs"] = ["None"]
            else:
                ip = wanted_ip or self._free_cluster_ip()
                fams = families.service_families(self, spec)
                # The IPv4 address stays the lab's own key (clusterIP) on IPv4-primary
                # clusters; clusterIPs lists every family's address, as the apiserver does.
                spec["clusterIP"] = families.present(self, ip, fams[0])
                spec["clusterIPs"] = [families.present(self, ip, f) for f in fams]
                spec["ipFamilies"] = fams
            spec.setdefault("ipFamilies", [families.families(self)[0]])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("internalTrafficPolicy", "Cluster")
        spec.setdefault("sessionAffinity", "None")
        if svc_type in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
            for port in ports:
                if not port.get("nodePort"):
                    port["nodePort"] = self._free_node_port(used_node_ports)
                    used_node_ports.add(port["nodePort"])
        if svc_type == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
        obj = {"metadata": self.store.new_metadata(body, namespace, name), "spec": spec}
        key = (namespace, name)
        self.objects["services"][key] = obj
        rt = ServiceRuntime(
            programmed_at=self.clock() + float(self.faults["service_programming_delay_s"])
        )
        if svc_type == "LoadBalancer" and self.profile["load_balancer"]:
            rt.lb_ip = self._free_lb_ip()
            rt.lb_ready_at = self.clock() + LB_DELAY_S
        self.svc_rt[key] = rt
        return obj

    def _free_cluster_ip(self) -> str:
        used = self._used_cluster_ips()
        rng = self.store.alloc_rng
        for _ in range(10000):
            ip = str(SERVICE_CIDR[rng.randrange(11, SERVICE_CIDR.num_addresses - 1)])
            if ip not in used:
                return ip
        raise ApiError(
            500, "Internal error occurred: failed to allocate a serviceIP: range is full"
        )

    def _free_node_port(self, used: set[int]) -> int:
        for _ in range(10000):
            port = self.store.alloc_rng.randint(*NODE_PORT_RANGE)
            if port not in used:
                return port
        raise ApiError(500, "Internal error occurred: failed to allocate a nodePort: range is full")

    def _free_lb_ip(self) -> str:
        used = {rt.lb_ip for rt in self.svc_rt.values()}
        for _ in range(254):
            ip = str(LB_CIDR[self._next_lb])
            self._next_lb = 1 if self._next_lb >= 254 else self._next_lb + 1
            if ip not in used:
                return ip
        raise ApiError(500, "the load balancer pool 172.18.255.0/24 is exhausted")

    def lb_ip(self, key: Key) -> str | None:
        """The load balancer IP once the (emulated) controller has published it."""
        rt = self.svc_rt.get(key)
        if rt is None or rt.lb_ip is None or rt.lb_ready_at is None:
            return None
        return rt.lb_ip if self.clock() >= rt.lb_ready_at else None

    def service_programmed(self, key: Key) -> bool:
        """Whether the Service's rules are on the nodes yet (kube-proxy's programming lag)."""
        rt = self.svc_rt.get(key)
        return rt is None or self.clock() >= rt.programmed_at

    def service_status(self, key: Key) -> dict[str, Any]:
        ip = self.lb_ip(key)
        if ip is None:
            return {"loadBalancer": {}}
        return {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}}

    def load_balancer_entry(self, key: Key, status: dict[str, Any]) -> dict[str, Any] | None:
        """The load balancer controller's managedFields entry once it published the ingress
        IP: MetalLB's `controller` (its binary's name, the prefix of its User-Agent), through
        the status subresource."""
        rt = self.svc_rt.get(key)
        if rt is None or rt.lb_ready_at is None or self.lb_ip(key) is None:
            return None
        return managedfields.controller_entry(
            "Service",
            {"status": {"loadBalancer": {}}},
            {"status": status},
            "controller",
            timestamp(rt.lb_ready_at),
            subresource="status",
            api_version="v1",
        )

    # ------------------------------------------------------------------ backends

    def service_backends(self, key: Key) -> list[tuple[Key, bool]]:
        """(pod key, ready) for every pod with an IP that the service selects, oldest first."""
        svc = self.objects["services"][key]
        selector = svc["spec"].get("selector")
        out = []
        for pod_key, pod in self.objects["pods"].items():
            if pod_key[0] != key[0] or not service_selector_matches(
                selector, pod["metadata"].get("labels")
            ):
                continue
            rt = self.pod_rt[pod_key]
            if rt.started:
                out.append((pod_key, self.pod_is_ready(pod_key)))
        return out

    def resolve_target_port(self, svc_port: dict[str, Any], pod_key: Key) -> int | None:
        target = svc_port.get("targetPort", svc_port["port"])
        if isinstance(target, int):
            return target
        if isinstance(target, str) and target.isdigit():
            return int(target)
        for container in self.objects["pods"][pod_key]["spec"].get("containers") or []:
            for port in container.get("ports") or []:
                if port.get("name") == target and port.get("protocol", "TCP") == svc_port.get(
                    "protocol", "TCP"
                ):
                    return int(port["containerPort"])
        return None
