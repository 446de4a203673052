"""The API store of one emulated cluster: objects, resourceVersions, watch events, generic CRUD.

The store knows nothing of pods running or of nodes. What is kind-specific (how a pod or a
Service is made and what its status says, which objects the dataplane derives from them) it
asks of its `StoreHooks`, which the cluster facade provides.
"""

from __future__ import annotations

import copy
import json
import random
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from lab import managedfields, validation
from lab.errors import ApiError, already_exists, invalid, not_found
from lab.labels import matches_query

SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
PROTECTED_NAMESPACES = ("default", "kube-public", "kube-system")

_SCALARS = (str, int, float, bool, type(None))


def clone(obj: Any) -> Any:
    """A deep copy of a JSON-shaped value (dicts, lists, scalars: what the store holds), several
    times quicker than copy.deepcopy, which the store's every read and write paid; anything
    else goes through copy.deepcopy."""
    kind = type(obj)
    if kind is dict:
        return {k: v if type(v) in _SCALARS else clone(v) for k, v in obj.items()}
    if kind is list:
        return [v if type(v) in _SCALARS else clone(v) for v in obj]
    if kind in _SCALARS:
        return obj
    return copy.deepcopy(obj)


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

WATCH_HISTORY = 5000  # events kept for watches resuming from a resourceVersion (etcd compaction)

Key = tuple[str, str]
DerivedId = tuple[str, Key]


def timestamp(when: float) -> str:
    return datetime.fromtimestamp(when, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def version_tuple(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


@dataclass
class WatchEvent:
    """One change, as a watch stream sends it; `resource` is the URL plural."""

    rv: int
    resource: str
    type: str  # ADDED | MODIFIED | DELETED
    obj: dict[str, Any]


class StoreHooks(Protocol):
    """What the store asks of the rest of the cluster (the facade provides it)."""

    def make_object(
        self, kind: str, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
    ) -> dict[str, Any]:
        """Validate, default and store a new object of KIND; return it."""
        ...

    def object_made(self, kind: str, key: Key, obj: dict[str, Any]) -> None:
        """Side effects of a new object, before its ADDED event."""
        ...

    def object_announced(self, kind: str, key: Key) -> bool:
        """After the ADDED event; True when the object changed again (render it anew)."""
        ...

    def status(self, kind: str, key: Key) -> dict[str, Any] | None:
        """The status of a stored object, None for kinds without one."""
        ...

    def controller_entries(self, kind: str, key: Key, obj: dict[str, Any]) -> list[dict[str, Any]]:
        """The managedFields entries of the controllers that wrote to the rendered object OBJ
        (the kubelet's status entry on a pod), in place of any stored entry of theirs."""
        ...

    def hidden(self, key: Key) -> bool:
        """Gone for the API although still stored (a ghost pod)."""
        ...

    def as_released(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """The rendered OBJ as the cluster's release shows it (fields it lacks dropped)."""
        ...

    def before_delete(self, kind: str, key: Key, propagation: str | None) -> None: ...

    def keep_deleted(self, kind: str, key: Key) -> bool:
        """True when a deleted object stays stored (hidden) instead of being dropped."""
        ...

    def dropped(self, kind: str, key: Key) -> None:
        """An object left the store: forget its runtime state."""
        ...

    def derived(self) -> dict[DerivedId, dict[str, Any]]:
        """The computed objects (Endpoints, EndpointSlices) as they are now, rendered."""
        ...


class ApiStore:
    """Namespaces and namespaced objects, their resourceVersions and the watch event log."""

    def __init__(
        self,
        profile: dict[str, Any],
        clock: Callable[[], float],
        lock: threading.RLock,
        alloc_rng: random.Random,
    ) -> None:
        self.profile = profile
        self.clock = clock
        self.lock = lock
        self.alloc_rng = alloc_rng
        self.resource_version = 1000
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.objects: dict[str, dict[Key, dict[str, Any]]] = {kind: {} for kind in KIND_OF}
        self.events: deque[WatchEvent] = deque(maxlen=WATCH_HISTORY)
        self.changed = threading.Condition(self.lock)
        self.hooks: StoreHooks | None = None
        # Endpoints and EndpointSlices are computed; their last rendering, to tell what changed.
        self._derived: dict[DerivedId, tuple[str, dict[str, Any]]] = {}

    def attach(self, hooks: StoreHooks) -> None:
        self.hooks = hooks
        for ns in SYSTEM_NAMESPACES:
            self._new_namespace({"metadata": {"name": ns}})

    @property
    def _hooks(self) -> StoreHooks:
        assert self.hooks is not None, "the store has no hooks attached"
        return self.hooks

    # ------------------------------------------------------------------ basics

    def next_rv(self) -> str:
        self.resource_version += 1
        return str(self.resource_version)

    def new_metadata(
        self, body: dict[str, Any], namespace: str | None, name: str
    ) -> dict[str, Any]:
        """The metadata of a new object: the caller's, with what the server sets."""
        meta = clone(body.get("metadata") or {})
        meta["name"] = name
        if namespace is not None:
            meta["namespace"] = namespace
        meta["uid"] = str(uuid.UUID(int=self.alloc_rng.getrandbits(128), version=4))
        meta["resourceVersion"] = self.next_rv()
        meta["creationTimestamp"] = timestamp(self.clock())
        # managedFields stay: a server-side apply records its field manager there
        for key in ("deletionTimestamp", "selfLink"):
            meta.pop(key, None)
        return meta

    def name_for(self, body: dict[str, Any]) -> str:
        meta = body.get("metadata") or {}
        name = meta.get("name")
        if not name and meta.get("generateName"):
            alphabet = "bcdfghjklmnpqrstvwxz2456789"
            name = meta["generateName"] + "".join(self.alloc_rng.choice(alphabet) for _ in range(5))
        return str(name or "")

    # ------------------------------------------------------------------ namespaces

    def _new_namespace(self, body: dict[str, Any]) -> dict[str, Any]:
        name = self.name_for(body)
        meta = self.new_metadata(body, None, name)
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
        self.emit("namespaces", "ADDED", self.render_namespace(obj))
        return obj

    def create_namespace(self, body: dict[str, Any]) -> dict[str, Any]:
        name = self.name_for(body)
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
        return {"kind": "Namespace", "apiVersion": "v1", **clone(obj)}

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
                self.drop(kind, key)
                gone["metadata"]["resourceVersion"] = str(self.resource_version)
                self.emit(kind, "DELETED", gone)
        obj["metadata"]["deletionTimestamp"] = timestamp(self.clock())
        obj["metadata"]["resourceVersion"] = self.next_rv()
        obj["status"] = {"phase": "Terminating"}
        self.emit("namespaces", "DELETED", clone(obj))
        return obj

    def require_namespace(self, namespace: str) -> None:
        if namespace not in self.namespaces:
            raise not_found("namespaces", namespace)

    # ------------------------------------------------------------------ namespaced objects

    def create(self, kind: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        hooks = self._hooks
        self.require_namespace(namespace)
        name = self.name_for(body)
        body_ns = (body.get("metadata") or {}).get("namespace")
        if body_ns and body_ns != namespace:
            raise ApiError(
                400,
                "the namespace of the provided object does not match the "
                "namespace sent on the request",
            )
        if hooks.hidden((namespace, name)) and kind == "pods":
            self.drop(kind, (namespace, name))  # the name of a stale endpoint's pod is free
        spec = clone(body.get("spec") or {})
        obj = hooks.make_object(kind, namespace, name, body, spec)
        hooks.object_made(kind, (namespace, name), obj)
        rendered = self.render(kind, (namespace, name))
        self.emit(kind, "ADDED", clone(rendered))
        if hooks.object_announced(kind, (namespace, name)):
            rendered = self.render(kind, (namespace, name))
        return rendered

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        if (namespace, name) not in self.objects[kind] or self._hooks.hidden((namespace, name)):
            raise not_found(kind, name, GROUP_OF[kind])
        return self.render(kind, (namespace, name))

    def list_objects(
        self, kind: str, namespace: str | None, selector: str | None
    ) -> list[dict[str, Any]]:
        keys = [
            k
            for k, o in self.objects[kind].items()
            if (namespace is None or k[0] == namespace)
            and not self._hooks.hidden(k)
            and matches_query(selector, o["metadata"].get("labels"))
        ]
        return [self.render(kind, k, in_list=True) for k in keys]

    def delete(
        self, kind: str, namespace: str, name: str, propagation: str | None = None
    ) -> dict[str, Any]:
        hooks = self._hooks
        key = (namespace, name)
        if key not in self.objects[kind] or hooks.hidden(key):
            raise not_found(kind, name, GROUP_OF[kind])
        if propagation not in (None, "", "Orphan", "Background", "Foreground"):
            raise ApiError(
                422,
                f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                f'"{propagation}": supported values: "Foreground", "Background", "Orphan", "nil"',
            )
        rendered = self.render(kind, key)
        hooks.before_delete(kind, key, propagation)
        if hooks.keep_deleted(kind, key):
            self.next_rv()
        else:
            self.drop(kind, key)
        rendered["metadata"]["resourceVersion"] = str(self.resource_version)
        self.emit(kind, "DELETED", clone(rendered))
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

    def drop(self, kind: str, key: Key) -> None:
        self.objects[kind].pop(key, None)
        self._hooks.dropped(kind, key)
        self.next_rv()

    def render(self, kind: str, key: Key, in_list: bool = False) -> dict[str, Any]:
        obj = clone(self.objects[kind][key])
        status = self._hooks.status(kind, key)
        if status is not None:
            obj["status"] = status
        # As the release shows it (a field it lacks is not there, so no controller owns it),
        # then the controllers' entries, themselves entries of that release.
        obj = self._hooks.as_released(KIND_OF[kind], obj)
        theirs = self._hooks.controller_entries(kind, key, obj)
        if theirs:
            obj["metadata"]["managedFields"] = managedfields.with_entries(
                obj["metadata"].get("managedFields") or [], theirs
            )
            obj = self._hooks.as_released(KIND_OF[kind], obj)
        if in_list:
            return obj
        return {"kind": KIND_OF[kind], "apiVersion": API_VERSION_OF[kind], **obj}

    def touch(self, kind: str, key: Key) -> None:
        """A stored object changed outside the API (a pod started): MODIFIED to watchers."""
        self.objects[kind][key]["metadata"]["resourceVersion"] = self.next_rv()
        self.emit(kind, "MODIFIED", self.render(kind, key))

    # ------------------------------------------------------------------ network policies

    def create_network_policy(
        self, namespace: str, name: str, body: dict[str, Any], spec: dict[str, Any]
    ) -> dict[str, Any]:
        spec.setdefault("podSelector", {})
        for direction in ("ingress", "egress"):
            for rule in spec.get(direction) or []:
                for port in rule.get("ports") or []:
                    port.setdefault("protocol", "TCP")
        causes = validation.validate_network_policy(
            {**(body.get("metadata") or {}), "name": name, "namespace": namespace},
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
        obj = {"metadata": self.new_metadata(body, namespace, name), "spec": spec}
        obj["metadata"]["generation"] = 1
        self.objects["networkpolicies"][(namespace, name)] = obj
        return obj

    # ------------------------------------------------------------------ watch events

    def emit(self, resource: str, type_: str, obj: dict[str, Any]) -> None:
        """Log a change for watchers, then the Endpoints/EndpointSlices it changed."""
        self.events.append(
            WatchEvent(int(obj["metadata"]["resourceVersion"]), resource, type_, obj)
        )
        self._sync_derived()
        with self.changed:
            self.changed.notify_all()

    @staticmethod
    def _signature(obj: dict[str, Any]) -> str:
        meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
        return json.dumps({**obj, "metadata": meta}, sort_keys=True)

    def _sync_derived(self) -> None:
        now = self._hooks.derived()
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
                    clone(obj),
                )
            )
        for ident in [i for i in self._derived if i not in now]:
            _sig, obj = self._derived.pop(ident)
            obj = clone(obj)
            obj["metadata"]["resourceVersion"] = self.next_rv()
            self.events.append(
                WatchEvent(int(obj["metadata"]["resourceVersion"]), ident[0], "DELETED", obj)
            )
