"""The in-memory state of one emulated cluster.

Pods move through their lifecycle lazily: every request first calls `advance()`, which starts
the pods whose start time has passed (in start-time order), so a GET reflects time passing
without a thread per pod. A one-shot pod's outcome (connect verdict, node tool output) is
computed at the moment it starts, against the state of the cluster at that moment.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import random
import threading
import time
import uuid
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lab import dataplane, nodetools, validation
from lab.errors import ApiError, already_exists, invalid, not_found
from lab.labels import matches_query, service_selector_matches
from lab.workloads import Workload, read_pod

POD_CIDR = "10.244.0.0/16"
NO_NODE = -1  # PodRuntime.node of a pod bound to a node the cluster does not have
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/16")
LB_CIDR = ipaddress.ip_network("172.18.255.0/24")
NODE_PORT_RANGE = (30000, 32767)
KUBERNETES_SERVICE_IP = "10.96.0.1"
LB_DELAY_S = 0.2
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
PROTECTED_NAMESPACES = ("default", "kube-public", "kube-system")

KIND_OF = {
    "pods": "Pod",
    "services": "Service",
    "networkpolicies": "NetworkPolicy",
    "deployments": "Deployment",
}
GROUP_OF = {
    "pods": "",
    "services": "",
    "networkpolicies": "networking.k8s.io",
    "deployments": "apps",
}
API_VERSION_OF = {
    "pods": "v1",
    "services": "v1",
    "networkpolicies": "networking.k8s.io/v1",
    "deployments": "apps/v1",
}


def timestamp(when: float) -> str:
    return datetime.fromtimestamp(when, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def version_tuple(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


@dataclass
class Node:
    index: int
    name: str
    host_ip: str
    sctp_loaded: bool = False
    schedulable: bool = True


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


@dataclass
class ServiceRuntime:
    lb_ip: str | None = None
    lb_ready_at: float | None = None
    lb_announced: bool = False  # the MODIFIED event for the published ingress IP was sent


WATCH_HISTORY = 5000  # events kept for watches resuming from a resourceVersion (etcd compaction)


@dataclass
class WatchEvent:
    """One change, as a watch stream sends it; `resource` is the URL plural."""

    rv: int
    resource: str
    type: str  # ADDED | MODIFIED | DELETED
    obj: dict[str, Any]


@dataclass
class ModuleEvent:
    """Why sctp.ko got loaded on a node; kept so tests and humans can see the cause."""

    at: float
    node: str
    cause: str


@dataclass
class Cluster:
    profile: dict[str, Any]
    clock: Callable[[], float] = time.time
    lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        self.name: str = self.profile["name"]
        seed = self.profile.get("seed")
        if seed is None:
            seed = zlib.crc32(self.name.encode())
        # Separate streams: error injection must not shift when allocation order changes.
        self.fault_rng = random.Random(seed)
        self.alloc_rng = random.Random(seed + 1)
        self.resource_version = 1000
        self.started_at = self.clock()
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {
            kind: {} for kind in KIND_OF
        }
        self.pod_rt: dict[tuple[str, str], PodRuntime] = {}
        self.svc_rt: dict[tuple[str, str], ServiceRuntime] = {}
        self.module_events: list[ModuleEvent] = []
        # Pods deleted while the endpoints_never_removed fault holds (see dataplane).
        self.ghost_pods: set[tuple[str, str]] = set()
        self.events: deque[WatchEvent] = deque(maxlen=WATCH_HISTORY)
        self.changed = threading.Condition(self.lock)
        # Endpoints and EndpointSlices are computed; their last rendering, to tell what changed.
        self._derived: dict[tuple[str, tuple[str, str]], tuple[str, dict[str, Any]]] = {}
        self.nodes = self._make_nodes()
        self._next_pod_host = [2] * len(self.nodes)
        self._rr = 0
        self._next_lb = 200
        for ns in SYSTEM_NAMESPACES:
            self._new_namespace({"metadata": {"name": ns}})
        self._create_kubernetes_service()

    # ------------------------------------------------------------------ basics

    @property
    def faults(self) -> dict[str, Any]:
        return self.profile["faults"]

    @property
    def dataplane(self) -> dict[str, Any]:
        return self.profile["dataplane"]

    def _make_nodes(self) -> list[Node]:
        count = self.profile["nodes"]
        loaded = bool(self.profile["sctp_module_loaded_at_start"])
        nodes: list[Node] = []
        for i in range(count):
            if i == 0:
                name = f"{self.name}-control-plane"
            else:
                name = f"{self.name}-worker" + ("" if i == 1 else str(i))
            # Like kind: the control plane is tainted once there are workers to schedule on.
            nodes.append(
                Node(i, name, f"172.18.0.{i + 2}", loaded, schedulable=(count == 1 or i > 0))
            )
        return nodes

    def next_rv(self) -> str:
        self.resource_version += 1
        return str(self.resource_version)

    def _metadata(self, body: dict[str, Any], namespace: str | None, name: str) -> dict[str, Any]:
        meta = copy.deepcopy(body.get("metadata") or {})
        meta["name"] = name
        if namespace is not None:
            meta["namespace"] = namespace
        meta["uid"] = str(uuid.UUID(int=self.alloc_rng.getrandbits(128), version=4))
        meta["resourceVersion"] = self.next_rv()
        meta["creationTimestamp"] = timestamp(self.clock())
        for key in ("deletionTimestamp", "selfLink", "managedFields"):
            meta.pop(key, None)
        return meta

    def _name_for(self, body: dict[str, Any], kind: str) -> str:
        meta = body.get("metadata") or {}
        name = meta.get("name")
        if not name and meta.get("generateName"):
            alphabet = "bcdfghjklmnpqrstvwxz2456789"
            name = meta["generateName"] + "".join(self.alloc_rng.choice(alphabet) for _ in range(5))
        return str(name or "")

    def module_load(self, node: Node, cause: str) -> None:
        if not node.sctp_loaded:
            node.sctp_loaded = True
            self.module_events.append(ModuleEvent(self.clock(), node.name, cause))

    def node_by_name(self, name: str) -> Node | None:
        return next((n for n in self.nodes if n.name == name), None)

    # ------------------------------------------------------------------ lifecycle

    def advance(self) -> None:
        """Start every pod whose time has come, oldest first."""
        now = self.clock()
        for key, srt in list(self.svc_rt.items()):
            if srt.lb_ready_at is not None and not srt.lb_announced and now >= srt.lb_ready_at:
                srt.lb_announced = True
                self.objects["services"][key]["metadata"]["resourceVersion"] = self.next_rv()
                self._emit("services", "MODIFIED", self.render("services", key))
        if self.faults["stuck_pending"]:
            return
        due = sorted(
            (rt.start_at, key)
            for key, rt in self.pod_rt.items()
            if not rt.started and rt.start_at <= now and rt.node != NO_NODE
        )
        for _start, key in due:
            self._start_pod(key, now)
            self._announce_started(key)

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

    def _announce_started(self, key: tuple[str, str]) -> None:
        """A started pod is a new version of it (MODIFIED to watchers)."""
        if key in self.objects["pods"]:
            self.objects["pods"][key]["metadata"]["resourceVersion"] = self.next_rv()
            self._emit("pods", "MODIFIED", self.render("pods", key))

    def _start_pod(self, key: tuple[str, str], now: float) -> None:
        rt = self.pod_rt[key]
        rt.started = True
        node = self.nodes[rt.node]
        work = rt.workload
        dataplane.pod_started(self, key)
        pod_name = f"{key[0]}/{key[1]}"
        if any(proto == "SCTP" for proto, _port in work.listens):
            self.module_load(node, f"pod {pod_name} serves SCTP")
        if work.long_running:
            return
        if work.bad_usage:
            rt.exit_code, rt.log = 1, work.bad_usage + "\n"
        elif work.connect is not None:
            if work.connect.protocol == "SCTP":
                self.module_load(node, f"pod {pod_name} opened an SCTP socket")
            failure = dataplane.connect_verdict(self, key, work.connect)
            rt.exit_code, rt.log = (0, "") if failure is None else (1, failure + "\n")
        elif work.hostexec is not None:
            rt.exit_code, rt.log = nodetools.run(self, node, work.hostexec)
        elif work.curl is not None:
            rt.exit_code, rt.log = dataplane.curl(self, key, work.curl)
        else:
            rt.exit_code, rt.log = 0, ""
        rt.finished_at = now

    def pod_is_ready(self, key: tuple[str, str]) -> bool:
        rt = self.pod_rt.get(key)
        return bool(rt and rt.started and rt.workload.long_running)

    # ------------------------------------------------------------------ namespaces

    def _new_namespace(self, body: dict[str, Any]) -> dict[str, Any]:
        name = self._name_for(body, "Namespace")
        meta = self._metadata(body, None, name)
        labels = meta.setdefault("labels", {}) or {}
        meta["labels"] = labels
        if version_tuple(self.profile["kubernetes_version"]) >= (1, 21):
            labels["kubernetes.io/metadata.name"] = name
        obj = {
            "metadata": meta,
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        self.namespaces[name] = obj
        self._emit("namespaces", "ADDED", self.render_namespace(obj))
        return obj

    def create_namespace(self, body: dict[str, Any]) -> dict[str, Any]:
        name = self._name_for(body, "Namespace")
        # Cluster-scoped: a namespace set on the object is cleared, not refused (rest.BeforeCreate).
        body = {
            **body,
            "metadata": {k: v for k, v in (body.get("metadata") or {}).items() if k != "namespace"},
        }
        causes = validation.validate_namespace({**body["metadata"], "name": name})
        if causes:
            raise invalid("Namespace", name, causes)
        if name in self.namespaces:
            raise already_exists("namespaces", name)
        return self.render_namespace(
            self._new_namespace(
                {**body, "metadata": {**(body.get("metadata") or {}), "name": name}}
            )
        )

    def render_namespace(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "Namespace", "apiVersion": "v1", **copy.deepcopy(obj)}

    def get_namespace(self, name: str) -> dict[str, Any]:
        if name not in self.namespaces:
            raise not_found("namespaces", name)
        return self.render_namespace(self.namespaces[name])

    def list_namespaces(self, selector: str | None) -> list[dict[str, Any]]:
        return [
            self.render_namespace(o)
            for o in self.namespaces.values()
            if matches_query(selector, o["metadata"].get("labels"))
        ]

    def delete_namespace(self, name: str) -> dict[str, Any]:
        if name not in self.namespaces:
            raise not_found("namespaces", name)
        if name in PROTECTED_NAMESPACES:
            raise ApiError(
                403,
                f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                details={"name": name, "kind": "namespaces"},
            )
        obj = self.render_namespace(self.namespaces.pop(name))
        # A real namespace lingers in Terminating while its content goes; the lab drops it at once.
        for kind in KIND_OF:
            for key in [k for k in self.objects[kind] if k[0] == name]:
                gone = self.render(kind, key)
                self._drop(kind, key)
                gone["metadata"]["resourceVersion"] = str(self.resource_version)
                self._emit(kind, "DELETED", gone)
        obj["metadata"]["deletionTimestamp"] = timestamp(self.clock())
        obj["metadata"]["resourceVersion"] = self.next_rv()
        obj["status"] = {"phase": "Terminating"}
        self._emit("namespaces", "DELETED", copy.deepcopy(obj))
        return obj

    def _require_namespace(self, namespace: str) -> None:
        if namespace not in self.namespaces:
            raise not_found("namespaces", namespace)

    # ------------------------------------------------------------------ namespaced objects

    def create(self, kind: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        self._require_namespace(namespace)
        name = self._name_for(body, KIND_OF[kind])
        body_ns = (body.get("metadata") or {}).get("namespace")
        if body_ns and body_ns != namespace:
            raise ApiError(
                400,
                "the namespace of the provided object does not match the "
                "namespace sent on the request",
            )
        if (namespace, name) in self.ghost_pods and kind == "pods":
            self._drop(kind, (namespace, name))  # the name of a stale endpoint's pod is free
        spec = copy.deepcopy(body.get("spec") or {})
        if kind == "pods":
            obj = self._create_pod(namespace, name, body, spec)
        elif kind == "services":
            obj = self._create_service(namespace, name, body, spec)
        elif kind == "deployments":
            from lab import deployments

            obj = deployments.create(self, namespace, name, body, spec)
        else:
            obj = self._create_network_policy(namespace, name, body, spec)
        if self.faults["basic_loads_module"] and dataplane.has_sctp_port(kind, obj["spec"]):
            for node in self.nodes:
                self.module_load(
                    node,
                    f"{KIND_OF[kind]} {namespace}/{name} has an SCTP port "
                    "(basic_loads_module fault)",
                )
        rendered = self.render(kind, (namespace, name))
        self._emit(kind, "ADDED", copy.deepcopy(rendered))
        if kind == "deployments":
            from lab import deployments

            deployments.reconcile(self, (namespace, name))
            rendered = self.render(kind, (namespace, name))
        return rendered

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        if (namespace, name) not in self.objects[kind] or (namespace, name) in self.ghost_pods:
            raise not_found(kind, name, GROUP_OF[kind])
        return self.render(kind, (namespace, name))

    def list_objects(
        self, kind: str, namespace: str | None, selector: str | None
    ) -> list[dict[str, Any]]:
        keys = [
            k
            for k, o in self.objects[kind].items()
            if (namespace is None or k[0] == namespace)
            and k not in self.ghost_pods
            and matches_query(selector, o["metadata"].get("labels"))
        ]
        return [self.render(kind, k, in_list=True) for k in keys]

    def delete(
        self, kind: str, namespace: str, name: str, propagation: str | None = None
    ) -> dict[str, Any]:
        key = (namespace, name)
        if key not in self.objects[kind] or key in self.ghost_pods:
            raise not_found(kind, name, GROUP_OF[kind])
        if propagation not in (None, "", "Orphan", "Background", "Foreground"):
            raise ApiError(
                422,
                f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                f'"{propagation}": supported values: "Foreground", "Background", "Orphan", "nil"',
            )
        rendered = self.render(kind, key)
        if kind == "deployments" and propagation != "Orphan":
            from lab import deployments

            for pod_key in deployments.owned_pods(self, key):
                self.delete("pods", *pod_key)
        if kind == "pods" and self.faults.get("endpoints_never_removed"):
            self.ghost_pods.add(key)  # gone for the API, still listed as an endpoint
            self.next_rv()
        else:
            self._drop(kind, key)
        rendered["metadata"]["resourceVersion"] = str(self.resource_version)
        self._emit(kind, "DELETED", copy.deepcopy(rendered))
        if kind in ("networkpolicies", "deployments"):
            # Like the real server: objects without graceful deletion answer a Success Status.
            return {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": {
                    "name": name,
                    "group": GROUP_OF[kind],
                    "kind": kind,
                    "uid": rendered["metadata"]["uid"],
                },
            }
        rendered["metadata"]["deletionTimestamp"] = timestamp(self.clock())
        if kind == "pods":
            rendered["metadata"]["deletionGracePeriodSeconds"] = 30
        return rendered

    def _drop(self, kind: str, key: tuple[str, str]) -> None:
        self.objects[kind].pop(key, None)
        if kind == "pods":
            self.ghost_pods.discard(key)
            self.pod_rt.pop(key, None)
        if kind == "services":
            self.svc_rt.pop(key, None)
        self.next_rv()

    # ------------------------------------------------------------------ watch events

    def _emit(self, resource: str, type_: str, obj: dict[str, Any]) -> None:
        """Log a change for watchers, then the Endpoints/EndpointSlices it changed."""
        self.events.append(
            WatchEvent(int(obj["metadata"]["resourceVersion"]), resource, type_, obj)
        )
        self._sync_derived()
        with self.changed:
            self.changed.notify_all()

    def _derived_now(self) -> dict[tuple[str, tuple[str, str]], dict[str, Any]]:
        out: dict[tuple[str, tuple[str, str]], dict[str, Any]] = {}
        if not hasattr(self, "nodes"):
            return out  # still building the cluster
        for key in self.objects["services"]:
            if not self._has_endpoints_object(key):
                continue
            out[("endpoints", key)] = self.render_endpoints(key)
            if self.serves_endpointslices():
                for item in self._slices(key):
                    out[("endpointslices", (key[0], item["metadata"]["name"]))] = {
                        "kind": "EndpointSlice",
                        "apiVersion": "discovery.k8s.io/v1",
                        **item,
                    }
        return out

    @staticmethod
    def _signature(obj: dict[str, Any]) -> str:
        meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
        return json.dumps({**obj, "metadata": meta}, sort_keys=True)

    def _sync_derived(self) -> None:
        now = self._derived_now()
        for ident, obj in now.items():
            sig = self._signature(obj)
            before = self._derived.get(ident)
            if before is not None and before[0] == sig:
                continue
            obj["metadata"]["resourceVersion"] = self.next_rv()
            self._derived[ident] = (sig, obj)
            self.events.append(
                WatchEvent(
                    int(obj["metadata"]["resourceVersion"]),
                    ident[0],
                    "ADDED" if before is None else "MODIFIED",
                    copy.deepcopy(obj),
                )
            )
        for ident in [i for i in self._derived if i not in now]:
            _sig, obj = self._derived.pop(ident)
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = self.next_rv()
            self.events.append(
                WatchEvent(int(obj["metadata"]["resourceVersion"]), ident[0], "DELETED", obj)
            )

    def render(self, kind: str, key: tuple[str, str], in_list: bool = False) -> dict[str, Any]:
        obj = copy.deepcopy(self.objects[kind][key])
        if kind == "pods":
            obj["status"] = self._pod_status(key)
        elif kind == "services":
            obj["status"] = self._service_status(key)
        elif kind == "deployments":
            from lab import deployments

            obj["status"] = deployments.status(self, key)
        if in_list:
            return obj
        return {"kind": KIND_OF[kind], "apiVersion": API_VERSION_OF[kind], **obj}

    # ------------------------------------------------------------------ pods

    def _meta_for_validation(
        self, body: dict[str, Any], namespace: str, name: str
    ) -> dict[str, Any]:
        return {**(body.get("metadata") or {}), "name": name, "namespace": namespace}

    def _create_pod(
        self, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
    ) -> dict[str, Any]:
        validation.default_pod(spec)
        causes = validation.validate_pod(
            self._meta_for_validation(body, namespace, name),
            spec,
            sctp=bool(self.profile["sctp_feature_gate"]),
        )
        if causes:
            raise invalid("Pod", name, causes)
        refusal = dataplane.admission_refusal(self.profile, name, spec)
        if refusal is not None:
            raise refusal
        if (namespace, name) in self.objects["pods"]:
            raise already_exists("pods", name)
        node = self._schedule(spec.get("nodeName"))
        spec["nodeName"] = node.name if node is not None else spec["nodeName"]
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("securityContext", {})
        meta = self._metadata(body, namespace, name)
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
            return self.node_by_name(wanted)
        candidates = [n for n in self.nodes if n.schedulable]
        node = candidates[self._rr % len(candidates)]
        self._rr += 1
        return node

    def _pod_ip(self, node: Node) -> str:
        used = {rt.ip for rt in self.pod_rt.values()}
        for _ in range(253):
            host = self._next_pod_host[node.index]
            self._next_pod_host[node.index] = 2 if host >= 254 else host + 1
            ip = f"10.244.{node.index}.{host}"
            if ip not in used:
                return ip
        raise ApiError(500, f"node {node.name} has no free pod IP left")

    def _pod_status(self, key: tuple[str, str]) -> dict[str, Any]:
        obj = self.objects["pods"][key]
        rt = self.pod_rt[key]
        if rt.node == NO_NODE:
            # Bound by nodeName to a node that does not exist: no kubelet ever reports on it.
            return {"phase": "Pending", "qosClass": "BestEffort"}
        node = self.nodes[rt.node]
        spec = obj["spec"]
        created = timestamp(rt.created)
        status: dict[str, Any] = {
            "hostIP": node.host_ip,
            "hostIPs": [{"ip": node.host_ip}],
            "qosClass": "BestEffort",
            "startTime": created,
        }
        containers = spec.get("containers") or []

        def cstatus(
            c: dict[str, Any],
            ready: bool,
            state: dict[str, Any],
            restarts: int = 0,
            last: dict[str, Any] | None = None,
        ) -> dict[str, Any]:
            out = {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": c.get("image", "") + "@sha256:" + "0" * 64,
                "ready": ready,
                "restartCount": restarts,
                "started": "running" in state,
                "state": state,
                "lastState": last or {},
            }
            if "waiting" not in state:
                out["containerID"] = (
                    "containerd://"
                    + zlib.crc32((rt.uid + c["name"]).encode()).to_bytes(4, "big").hex() * 16
                )
            return out

        conditions = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": created}]
        if not rt.started:
            status["phase"] = "Pending"
            status["containerStatuses"] = [
                cstatus(c, False, {"waiting": {"reason": "ContainerCreating"}}) for c in containers
            ]
            conditions += [
                {
                    "type": t,
                    "status": "False",
                    "lastTransitionTime": created,
                    "reason": "ContainersNotReady",
                }
                for t in ("Ready", "ContainersReady")
            ]
            status["conditions"] = conditions
            return status
        started = timestamp(rt.start_at)
        status["podIP"] = rt.ip
        status["podIPs"] = [{"ip": rt.ip}]
        conditions.append({"type": "Initialized", "status": "True", "lastTransitionTime": created})
        if rt.exit_code is None:
            status["phase"] = "Running"
            status["containerStatuses"] = [
                cstatus(c, True, {"running": {"startedAt": started}}) for c in containers
            ]
            ready = "True"
        else:
            finished = timestamp(rt.finished_at or rt.start_at)
            terminated = {
                "terminated": {
                    "exitCode": rt.exit_code,
                    "reason": "Completed" if rt.exit_code == 0 else "Error",
                    "startedAt": started,
                    "finishedAt": finished,
                    "containerID": "containerd://" + "0" * 64,
                }
            }
            policy = spec.get("restartPolicy", "Always")
            if policy == "Never" or (policy == "OnFailure" and rt.exit_code == 0):
                status["phase"] = "Succeeded" if rt.exit_code == 0 else "Failed"
                status["containerStatuses"] = [cstatus(c, False, terminated) for c in containers]
            else:
                # The kubelet restarts it; what callers see is a crash-looping Running pod.
                status["phase"] = "Running"
                status["containerStatuses"] = [
                    cstatus(
                        c,
                        False,
                        {
                            "waiting": {
                                "reason": "CrashLoopBackOff",
                                "message": "back-off 10s restarting failed container",
                            }
                        },
                        restarts=1,
                        last=terminated,
                    )
                    for c in containers
                ]
            ready = "False"
        conditions += [
            {"type": t, "status": ready, "lastTransitionTime": started}
            for t in ("ContainersReady", "Ready")
        ]
        status["conditions"] = conditions
        return status

    def pod_log(self, namespace: str, name: str, container: str | None) -> str:
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
        return rt.log

    # ------------------------------------------------------------------ services

    def _create_kubernetes_service(self) -> None:
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
        self._create_service("default", "kubernetes", body, copy.deepcopy(body["spec"]))

    def _used_cluster_ips(self) -> set[str]:
        return {o["spec"].get("clusterIP") for o in self.objects["services"].values()}

    def _used_node_ports(self) -> set[int]:
        return {
            p.get("nodePort")
            for o in self.objects["services"].values()
            for p in o["spec"].get("ports") or []
        }

    def _create_service(
        self, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
    ) -> dict[str, Any]:
        validation.default_service(spec)
        svc_type = spec["type"]
        ports = spec.get("ports") or []
        if (namespace, name) != ("default", "kubernetes"):
            causes = validation.validate_service(
                self._meta_for_validation(body, namespace, name),
                spec,
                sctp=bool(self.profile["sctp_feature_gate"]),
            )
            if causes:
                raise invalid("Service", name, causes)
            if (namespace, name) in self.objects["services"]:
                raise already_exists("services", name)
        # The allocators run after validation and answer their own 422 (registry/core/service).
        causes = []
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
        used_node_ports = self._used_node_ports()
        for pi, port in enumerate(ports):
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
        if causes:
            raise invalid("Service", name, causes)
        if svc_type != "ExternalName":
            if wanted_ip == "None":
                spec["clusterIPs"] = ["None"]
            else:
                ip = wanted_ip or self._free_cluster_ip()
                spec["clusterIP"] = ip
                spec["clusterIPs"] = [ip]
            spec.setdefault("ipFamilies", ["IPv4"])
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
        obj = {"metadata": self._metadata(body, namespace, name), "spec": spec}
        key = (namespace, name)
        self.objects["services"][key] = obj
        rt = ServiceRuntime()
        if svc_type == "LoadBalancer" and self.profile["load_balancer"]:
            rt.lb_ip = self._free_lb_ip()
            rt.lb_ready_at = self.clock() + LB_DELAY_S
        self.svc_rt[key] = rt
        return obj

    def _free_cluster_ip(self) -> str:
        used = self._used_cluster_ips()
        for _ in range(10000):
            ip = str(SERVICE_CIDR[self.alloc_rng.randrange(11, SERVICE_CIDR.num_addresses - 1)])
            if ip not in used:
                return ip
        raise ApiError(
            500, "Internal error occurred: failed to allocate a serviceIP: range is full"
        )

    def _free_node_port(self, used: set[int]) -> int:
        for _ in range(10000):
            port = self.alloc_rng.randint(*NODE_PORT_RANGE)
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

    def lb_ip(self, key: tuple[str, str]) -> str | None:
        """The load balancer IP once the (emulated) controller has published it."""
        rt = self.svc_rt.get(key)
        if rt is None or rt.lb_ip is None or rt.lb_ready_at is None:
            return None
        return rt.lb_ip if self.clock() >= rt.lb_ready_at else None

    def _service_status(self, key: tuple[str, str]) -> dict[str, Any]:
        ip = self.lb_ip(key)
        if ip is None:
            return {"loadBalancer": {}}
        return {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}}

    # ------------------------------------------------------------------ endpoints

    def service_backends(self, key: tuple[str, str]) -> list[tuple[tuple[str, str], bool]]:
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

    def resolve_target_port(self, svc_port: dict[str, Any], pod_key: tuple[str, str]) -> int | None:
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

    def _endpoint_groups(
        self, key: tuple[str, str]
    ) -> list[tuple[list[dict[str, Any]], list[tuple[tuple[str, str], bool]]]]:
        """Backends grouped by their resolved port list, as the controllers split subsets/slices."""
        svc = self.objects["services"][key]
        groups: dict[tuple, tuple[list[dict[str, Any]], list]] = {}
        for pod_key, ready in self.service_backends(key):
            ports = []
            for sp in svc["spec"].get("ports") or []:
                target = self.resolve_target_port(sp, pod_key)
                if target is None:
                    continue
                entry = {"port": target, "protocol": sp.get("protocol", "TCP")}
                if sp.get("name"):
                    entry["name"] = sp["name"]
                ports.append(entry)
            sig = tuple((p.get("name", ""), p["port"], p["protocol"]) for p in ports)
            groups.setdefault(sig, (ports, []))[1].append((pod_key, ready))
        return list(groups.values())

    def _has_endpoints_object(self, key: tuple[str, str]) -> bool:
        svc = self.objects["services"].get(key)
        return bool(svc and (svc["spec"].get("selector") or key == ("default", "kubernetes")))

    def _target_ref(self, pod_key: tuple[str, str]) -> dict[str, Any]:
        return {
            "kind": "Pod",
            "namespace": pod_key[0],
            "name": pod_key[1],
            "uid": self.objects["pods"][pod_key]["metadata"]["uid"],
        }

    def render_endpoints(self, key: tuple[str, str], in_list: bool = False) -> dict[str, Any]:
        if not self._has_endpoints_object(key):
            raise not_found("endpoints", key[1])
        svc = self.objects["services"][key]
        meta = {
            "name": key[1],
            "namespace": key[0],
            "uid": svc["metadata"]["uid"],
            "resourceVersion": str(self.resource_version),
            "creationTimestamp": svc["metadata"]["creationTimestamp"],
            "labels": dict(svc["metadata"].get("labels") or {}),
        }
        subsets = []
        if key == ("default", "kubernetes"):
            subsets.append(
                {
                    "addresses": [{"ip": self.nodes[0].host_ip}],
                    "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
                }
            )
        for ports, backends in self._endpoint_groups(key):
            subset: dict[str, Any] = {"ports": ports}
            for pod_key, ready in backends:
                rt = self.pod_rt[pod_key]
                addr = {
                    "ip": rt.ip,
                    "nodeName": self.nodes[rt.node].name,
                    "targetRef": self._target_ref(pod_key),
                }
                subset.setdefault("addresses" if ready else "notReadyAddresses", []).append(addr)
            subsets.append(subset)
        obj: dict[str, Any] = {"metadata": meta}
        if subsets:
            obj["subsets"] = subsets
        return obj if in_list else {"kind": "Endpoints", "apiVersion": "v1", **obj}

    def list_endpoints(self, namespace: str | None, selector: str | None) -> list[dict[str, Any]]:
        return [
            self.render_endpoints(k, in_list=True)
            for k, o in self.objects["services"].items()
            if (namespace is None or k[0] == namespace)
            and self._has_endpoints_object(k)
            and matches_query(selector, o["metadata"].get("labels"))
        ]

    def _slices(self, key: tuple[str, str]) -> list[dict[str, Any]]:
        svc = self.objects["services"][key]
        labels = dict(svc["metadata"].get("labels") or {})
        labels["kubernetes.io/service-name"] = key[1]
        labels["endpointslice.kubernetes.io/managed-by"] = "endpointslice-controller.k8s.io"
        groups = self._endpoint_groups(key)
        if key == ("default", "kubernetes"):
            labels["endpointslice.kubernetes.io/managed-by"] = (
                "endpointslicemirroring-controller.k8s.io"
            )
        slices = []
        for index, (ports, backends) in enumerate(groups or [([], [])]):
            suffix = "".join(
                "bcdfghjklmnpqrstvwxz2456789"[b % 27]
                for b in zlib.crc32(f"{svc['metadata']['uid']}/{index}".encode()).to_bytes(4, "big")
                + b"x"
            )
            endpoints = []
            for pod_key, ready in backends:
                rt = self.pod_rt[pod_key]
                endpoints.append(
                    {
                        "addresses": [rt.ip],
                        "conditions": {"ready": ready, "serving": ready, "terminating": False},
                        "nodeName": self.nodes[rt.node].name,
                        "targetRef": self._target_ref(pod_key),
                    }
                )
            if key == ("default", "kubernetes"):
                endpoints = [{"addresses": [self.nodes[0].host_ip], "conditions": {"ready": True}}]
                ports = [{"name": "https", "port": 6443, "protocol": "TCP"}]
            slices.append(
                {
                    "metadata": {
                        "name": key[1]
                        if key == ("default", "kubernetes")
                        else f"{key[1]}-{suffix}",
                        "namespace": key[0],
                        "uid": str(
                            uuid.UUID(
                                int=zlib.crc32(f"{svc['metadata']['uid']}/{index}".encode()),
                                version=4,
                            )
                        ),
                        "resourceVersion": str(self.resource_version),
                        "creationTimestamp": svc["metadata"]["creationTimestamp"],
                        "generateName": f"{key[1]}-",
                        "labels": labels,
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "Service",
                                "name": key[1],
                                "uid": svc["metadata"]["uid"],
                                "controller": True,
                                "blockOwnerDeletion": True,
                            }
                        ],
                    },
                    "addressType": "IPv4",
                    "endpoints": endpoints,
                    "ports": ports,
                }
            )
        return slices

    def list_endpointslices(
        self, namespace: str | None, selector: str | None
    ) -> list[dict[str, Any]]:
        out = []
        for key in list(self.objects["services"]):
            if (namespace is None or key[0] == namespace) and self._has_endpoints_object(key):
                out += [
                    s for s in self._slices(key) if matches_query(selector, s["metadata"]["labels"])
                ]
        return out

    def get_endpointslice(self, namespace: str, name: str) -> dict[str, Any]:
        for item in self.list_endpointslices(namespace, None):
            if item["metadata"]["name"] == name:
                return {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1", **item}
        raise not_found("endpointslices", name, "discovery.k8s.io")

    # ------------------------------------------------------------------ network policies

    def _create_network_policy(
        self, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
    ) -> dict[str, Any]:
        spec.setdefault("podSelector", {})
        for direction in ("ingress", "egress"):
            for rule in spec.get(direction) or []:
                for port in rule.get("ports") or []:
                    port.setdefault("protocol", "TCP")
        causes = validation.validate_network_policy(
            self._meta_for_validation(body, namespace, name),
            spec,
            sctp=bool(self.profile["sctp_feature_gate"]),
        )
        if causes:
            raise invalid("NetworkPolicy", name, causes, group="networking.k8s.io")
        if (namespace, name) in self.objects["networkpolicies"]:
            raise already_exists("networkpolicies", name, "networking.k8s.io")
        if "policyTypes" not in spec:
            # The apiserver defaults policyTypes from the rules present.
            spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
        obj = {"metadata": self._metadata(body, namespace, name), "spec": spec}
        obj["metadata"]["generation"] = 1
        self.objects["networkpolicies"][(namespace, name)] = obj
        return obj

    # ------------------------------------------------------------------ nodes, version

    def render_node(self, node: Node, in_list: bool = False) -> dict[str, Any]:
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
        created = timestamp(self.started_at)
        obj = {
            "metadata": {
                "name": node.name,
                "uid": str(uuid.UUID(int=zlib.crc32(node.name.encode()), version=4)),
                "resourceVersion": str(self.resource_version),
                "creationTimestamp": created,
                "labels": labels,
            },
            "spec": spec,
            "status": {
                "addresses": [
                    {"type": "InternalIP", "address": node.host_ip},
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
                    "bootID": f"lab-{node.index}",
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

    def version(self) -> dict[str, Any]:
        version = self.profile["kubernetes_version"]
        major, minor = version_tuple(version)
        return {
            "major": str(major),
            "minor": str(minor),
            "gitVersion": f"v{version}",
            "gitCommit": f"{zlib.crc32(version.encode()):08x}" * 5,
            "gitTreeState": "clean",
            "buildDate": "2024-10-22T20:28:14Z",
            "goVersion": "go1.22.8",
            "compiler": "gc",
            "platform": "linux/amd64",
            "emulated": True,
        }  # evidence policy: the lab always says it is an emulator

    def serves_endpointslices(self) -> bool:
        return version_tuple(self.profile["kubernetes_version"]) >= (1, 21)
