"""One emulated cluster: a thin facade over its API store, its runtime and its nodes.

- `lab.store.ApiStore`: objects, resourceVersions, watch events, the generic CRUD;
- `lab.runtime.Runtime` (with `lab.endpoints`, `lab.podstatus` and the connect verdicts
  of `lab.dataplane`): pods' and Services' runtime state;
- `lab.nodes.NodeSet` (with the outputs of `lab.nodetools`): the nodes and what is true on them.

The facade wires them together (it is the store's `StoreHooks`) and keeps the one public
surface the server and the other lab modules use.

Pods move through their lifecycle lazily: every request first calls `advance()`, which starts
the pods whose start time has passed (in start-time order), so a GET reflects time passing
without a thread per pod. A one-shot pod's outcome (connect verdict, node tool output) is
computed at the moment it starts, against the state of the cluster at that moment.
"""

from __future__ import annotations

import copy
import random
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab import admission, dataplane, deployments, fields, nodetools, openapi, runtime
from lab.endpoints import EndpointsController
from lab.nodes import ModuleEvent, Node, NodeSet
from lab.runtime import NO_NODE, PodRuntime, Runtime, ServiceRuntime
from lab.store import (
    API_VERSION_OF,
    GROUP_OF,
    KIND_OF,
    ApiStore,
    DerivedId,
    Key,
    WatchEvent,
    version_tuple,
)

__all__ = [
    "API_VERSION_OF",
    "GROUP_OF",
    "KIND_OF",
    "NO_NODE",
    "Cluster",
    "ModuleEvent",
    "Node",
    "PodRuntime",
    "ServiceRuntime",
    "WatchEvent",
]


# What the lab's controllers keep in `addons` that a dry run must not change (ReplicaSet
# history, the ReplicaSet controller's last failure).
_CONTROLLER_STATE = ("replicasets", "deployment_failures")


@dataclass
class Cluster:
    profile: dict[str, Any]
    clock: Callable[[], float] = time.time
    lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        self.name: str = self.profile["name"]
        # The serving CA's PEM (the LabServer sets it), published in every namespace's
        # kube-root-ca.crt ConfigMap as kube-controller-manager does.
        self.root_ca_pem: str = ""
        seed = self.profile.get("seed")
        if seed is None:
            seed = zlib.crc32(self.name.encode())
        # Separate streams: error injection must not shift when allocation order changes.
        self.fault_rng = random.Random(seed)
        alloc_rng = random.Random(seed + 1)
        # The parts read the time through `now`: a test may set `clock` on a running cluster.
        self.node_set = NodeSet(self.name, self.profile, self.now)
        self.store = ApiStore(self.profile, self.now, self.lock, alloc_rng)
        self.runtime = Runtime(self.profile, self.now, self.store, self.node_set)
        self.endpoints = EndpointsController(self.runtime)
        # State other lab modules keep per cluster (RBAC objects, Deployment failures), by name.
        self.addons: dict[str, Any] = {}
        self.store.attach(self)
        self.runtime.create_kubernetes_service()

    def now(self) -> float:
        return self.clock()

    # ------------------------------------------------------------------ the parts' state

    @property
    def faults(self) -> dict[str, Any]:
        return self.profile["faults"]

    @property
    def dataplane(self) -> dict[str, Any]:
        return self.profile["dataplane"]

    @property
    def started_at(self) -> float:
        return self.node_set.started_at

    @property
    def resource_version(self) -> int:
        return self.store.resource_version

    @property
    def namespaces(self) -> dict[str, dict[str, Any]]:
        return self.store.namespaces

    @property
    def objects(self) -> dict[str, dict[Key, dict[str, Any]]]:
        return self.store.objects

    @property
    def events(self) -> deque[WatchEvent]:
        return self.store.events

    @property
    def changed(self) -> threading.Condition:
        return self.store.changed

    @property
    def nodes(self) -> list[Node]:
        return self.node_set.nodes

    @property
    def module_events(self) -> list[ModuleEvent]:
        return self.node_set.module_events

    @property
    def pod_rt(self) -> dict[Key, PodRuntime]:
        return self.runtime.pod_rt

    @property
    def svc_rt(self) -> dict[Key, ServiceRuntime]:
        return self.runtime.svc_rt

    @property
    def ghost_pods(self) -> set[Key]:
        return self.runtime.ghost_pods

    # ------------------------------------------------------------------ dry runs

    def snapshot(self) -> dict[str, Any]:
        """Copies of the state a change can touch, for `restore` to put back (a dry run)."""
        return {
            "namespaces": copy.deepcopy(self.store.namespaces),
            "objects": copy.deepcopy(self.store.objects),
            "pod_rt": copy.deepcopy(self.runtime.pod_rt),
            "svc_rt": copy.deepcopy(self.runtime.svc_rt),
            "ghost_pods": copy.deepcopy(self.runtime.ghost_pods),
            "resource_version": self.store.resource_version,
            "events": len(self.store.events),
            "node_edits": [copy.deepcopy(n.edited) for n in self.nodes],
            "controllers": {
                k: copy.deepcopy(self.addons[k]) for k in _CONTROLLER_STATE if k in self.addons
            },
        }

    def restore(self, saved: dict[str, Any]) -> None:
        """Put back a `snapshot`, and forget the watch events sent since."""
        self.store.namespaces = saved["namespaces"]
        self.store.objects = saved["objects"]
        self.runtime.pod_rt = saved["pod_rt"]
        self.runtime.svc_rt = saved["svc_rt"]
        self.runtime.ghost_pods = saved["ghost_pods"]
        self.store.resource_version = saved["resource_version"]
        for node, edited in zip(self.nodes, saved["node_edits"], strict=True):
            node.edited = edited
        for k in _CONTROLLER_STATE:
            self.addons.pop(k, None)
        self.addons.update(saved["controllers"])
        while len(self.store.events) > saved["events"]:
            self.store.events.pop()

    # ------------------------------------------------------------------ store

    def next_rv(self) -> str:
        return self.store.next_rv()

    def new_metadata(
        self, body: dict[str, Any], namespace: str | None, name: str
    ) -> dict[str, Any]:
        return self.store.new_metadata(body, namespace, name)

    def emit(self, resource: str, type_: str, obj: dict[str, Any]) -> None:
        self.store.emit(resource, type_, obj)

    def render(self, kind: str, key: Key, in_list: bool = False) -> dict[str, Any]:
        return self.store.render(kind, key, in_list)

    def require_namespace(self, namespace: str) -> None:
        self.store.require_namespace(namespace)

    def create_namespace(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.store.create_namespace(body)

    def render_namespace(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.store.render_namespace(obj)

    def get_namespace(self, name: str) -> dict[str, Any]:
        return self.store.get_namespace(name)

    def list_namespaces(self, selector: str | None) -> list[dict[str, Any]]:
        return self.store.list_namespaces(selector)

    def delete_namespace(self, name: str) -> dict[str, Any]:
        return self.store.delete_namespace(name)

    def create(self, kind: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.store.create(kind, namespace, body)

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        return self.store.get(kind, namespace, name)

    def list_objects(
        self, kind: str, namespace: str | None, selector: str | None
    ) -> list[dict[str, Any]]:
        return self.store.list_objects(kind, namespace, selector)

    def delete(
        self, kind: str, namespace: str, name: str, propagation: str | None = None
    ) -> dict[str, Any]:
        return self.store.delete(kind, namespace, name, propagation)

    def build_service(
        self, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
    ) -> dict[str, Any]:
        """Validate, allocate and store a Service (no event): the create and replace step."""
        return self.runtime.create_service(namespace, name, body, spec)

    def build_network_policy(
        self, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
    ) -> dict[str, Any]:
        """Validate, default and store a NetworkPolicy (no event)."""
        return self.store.create_network_policy(namespace, name, body, spec)

    # ------------------------------------------------------------------ StoreHooks

    def make_object(
        self, kind: str, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
    ) -> dict[str, Any]:
        if kind == "pods":
            return self.runtime.create_pod(namespace, name, body, spec)
        if kind == "services":
            return self.runtime.create_service(namespace, name, body, spec)
        if kind == "deployments":
            return deployments.create(self, namespace, name, body, spec)
        return self.store.create_network_policy(namespace, name, body, spec)

    def object_made(self, kind: str, key: Key, obj: dict[str, Any]) -> None:
        if self.faults["basic_loads_module"] and admission.has_sctp_port(kind, obj["spec"]):
            for node in self.nodes:
                self.module_load(
                    node,
                    f"{KIND_OF[kind]} {key[0]}/{key[1]} has an SCTP port "
                    "(basic_loads_module fault)",
                )

    def object_announced(self, kind: str, key: Key) -> bool:
        if kind != "deployments":
            return False
        deployments.reconcile(self, key)
        return True

    def status(self, kind: str, key: Key) -> dict[str, Any] | None:
        if kind == "pods":
            return self.runtime.pod_status(key)
        if kind == "services":
            return self.runtime.service_status(key)
        if kind == "deployments":
            return deployments.status(self, key)
        return None

    def controller_entries(self, kind: str, key: Key, obj: dict[str, Any]) -> list[dict[str, Any]]:
        if kind == "pods":
            found = self.runtime.kubelet_entry(key, obj.get("status") or {})
        elif kind == "services":
            found = self.runtime.load_balancer_entry(key, obj.get("status") or {})
        elif kind == "deployments":
            found = deployments.controller_entry(self, key, obj)
        else:
            found = None
        return [found] if found else []

    def hidden(self, key: Key) -> bool:
        return key in self.runtime.ghost_pods

    def as_released(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        release = openapi.release(self)
        # From v1.28 on every field the lab writes exists (tests/lab/test_openapi.py checks it
        # on every stored release): the walk, a third of a pod's rendering, is spared there.
        if tuple(int(p) for p in release.removeprefix("v").split(".")) >= (1, 28):
            return obj
        return fields.drop_unknown(kind, obj, release)

    def before_delete(self, kind: str, key: Key, propagation: str | None) -> None:
        if kind == "deployments" and propagation != "Orphan":
            for pod_key in deployments.owned_pods(self, key):
                self.delete("pods", *pod_key)

    def keep_deleted(self, kind: str, key: Key) -> bool:
        if kind == "pods" and self.faults.get("endpoints_never_removed"):
            self.runtime.ghost_pods.add(key)  # gone for the API, still listed as an endpoint
            return True
        return False

    def dropped(self, kind: str, key: Key) -> None:
        self.runtime.forget(kind, key)
        if kind == "deployments":
            deployments.forget(self, key)

    def derived(self) -> dict[DerivedId, dict[str, Any]]:
        return self.endpoints.derived()

    # ------------------------------------------------------------------ lifecycle

    def advance(self) -> None:
        """Start every pod whose time has come, oldest first."""
        now = self.clock()
        for key in self.runtime.due_announcements(now):
            self.store.touch("services", key)
        if self.faults["stuck_pending"]:
            return
        for key in self.runtime.due_pods(now):
            self._start_pod(key, now)
            if key in self.objects["pods"]:
                # A started pod is a new version of it (MODIFIED to watchers).
                self.store.touch("pods", key)
        for key, rt in list(self.pod_rt.items()):
            if rt.started and rt.workload.prober is not None and now >= rt.next_round_at:
                self._probe_round(key, now)

    def _probe_round(self, key: Key, now: float) -> None:
        """One round of a pod's probing loop, against the cluster as it is at this request
        (rounds happen as requests come, at most one per the loop's `sleep`)."""
        rt = self.pod_rt[key]
        prober = rt.workload.prober
        assert prober is not None
        rt.rounds += 1
        lines = [f"round {rt.rounds} start"]
        for target in prober.targets:
            if target.protocol == "SCTP":
                self.module_load(self.nodes[rt.node], f"pod {key[0]}/{key[1]} probed over SCTP")
            failure = dataplane.connect_verdict(self, key, target)
            shown = (
                f"[{target.host}]:{target.port}"
                if ":" in target.host
                else (f"{target.host}:{target.port}")
            )
            outcome = "ok" if failure is None else f"fail {failure[:160]}"
            lines.append(f"probe {rt.rounds} {shown} {outcome}")
        lines.append(f"round {rt.rounds} done")
        rt.prober_log.extend(lines)
        del rt.prober_log[: -runtime.PROBER_LOG_LINES]
        rt.next_round_at = now + prober.interval

    def next_due(self) -> float | None:
        return self.runtime.next_due()

    def schedule_waiting(self) -> None:
        """After a node takes pods again (uncordon, a taint removed): the waiting pods placed."""
        for key in self.runtime.schedule_waiting():
            self.store.touch("pods", key)

    def _start_pod(self, key: Key, now: float) -> None:
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
        elif work.hostexec is not None and work.nsenter and self.faults["nsenter_refused"]:
            rt.exit_code, rt.log = (
                1,
                "nsenter: can't open '/rootfs/proc/1/ns/mnt': Permission denied\n",
            )
        elif work.hostexec is not None:
            rt.exit_code, rt.log = nodetools.run(self, node, work.hostexec)
        elif work.curl is not None:
            rt.exit_code, rt.log = dataplane.curl(self, key, work.curl)
        else:
            rt.exit_code, rt.log = 0, ""
        rt.finished_at = now

    def pod_is_ready(self, key: Key) -> bool:
        return self.runtime.pod_is_ready(key)

    def pod_log(
        self, namespace: str, name: str, container: str | None, tail_lines: int | None = None
    ) -> str:
        return self.runtime.pod_log(namespace, name, container, tail_lines)

    def lb_ip(self, key: Key) -> str | None:
        return self.runtime.lb_ip(key)

    def service_backends(self, key: Key) -> list[tuple[Key, bool]]:
        return self.runtime.service_backends(key)

    def service_programmed(self, key: Key) -> bool:
        return self.runtime.service_programmed(key)

    def resolve_target_port(self, svc_port: dict[str, Any], pod_key: Key) -> int | None:
        return self.runtime.resolve_target_port(svc_port, pod_key)

    # ------------------------------------------------------------------ endpoints

    def render_endpoints(self, key: Key, in_list: bool = False) -> dict[str, Any]:
        return self.endpoints.render_endpoints(key, in_list)

    def list_endpoints(self, namespace: str | None, selector: str | None) -> list[dict[str, Any]]:
        return self.endpoints.list_endpoints(namespace, selector)

    def list_endpointslices(
        self, namespace: str | None, selector: str | None
    ) -> list[dict[str, Any]]:
        return self.endpoints.list_endpointslices(namespace, selector)

    def get_endpointslice(self, namespace: str, name: str) -> dict[str, Any]:
        return self.endpoints.get_endpointslice(namespace, name)

    # ------------------------------------------------------------------ nodes, version

    def node_by_name(self, name: str) -> Node | None:
        return self.node_set.node_by_name(name)

    def module_load(self, node: Node, cause: str) -> None:
        self.node_set.module_load(node, cause)

    def render_node(self, node: Node, in_list: bool = False) -> dict[str, Any]:
        return self.node_set.render_node(node, self.resource_version, in_list)

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
        return self.endpoints.serves_endpointslices
