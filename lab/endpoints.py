"""Endpoints and EndpointSlices: what the endpoint controllers derive from Services and pods.

They are computed, never stored: each request renders them from the runtime as it is, and
the store compares renderings to send their watch events.
"""

from __future__ import annotations

import uuid
import zlib
from typing import TYPE_CHECKING, Any

from lab import managedfields
from lab.errors import not_found
from lab.labels import matches_query
from lab.store import DerivedId, Key, timestamp, version_tuple

if TYPE_CHECKING:
    from lab.runtime import Runtime


class EndpointsController:
    """Renders the Endpoints and EndpointSlices of the Services in a runtime."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        # While derived() renders every Service (nothing changes meanwhile): each Service's
        # backends, read once instead of once per rendering (Endpoints, slices, their times).
        self._backends: dict[Key, list[tuple[Key, bool]]] | None = None

    def service_backends(self, key: Key) -> list[tuple[Key, bool]]:
        if self._backends is None:
            return self.runtime.service_backends(key)
        if key not in self._backends:
            self._backends[key] = self.runtime.service_backends(key)
        return self._backends[key]

    @property
    def serves_endpointslices(self) -> bool:
        return version_tuple(self.runtime.profile["kubernetes_version"]) >= (1, 21)

    def _endpoint_groups(
        self, key: Key
    ) -> list[tuple[list[dict[str, Any]], list[tuple[Key, bool]]]]:
        """Backends grouped by their resolved port list, as the controllers split subsets/slices."""
        svc = self.runtime.objects["services"][key]
        groups: dict[tuple, tuple[list[dict[str, Any]], list]] = {}
        for pod_key, ready in self.service_backends(key):
            ports = []
            for sp in svc["spec"].get("ports") or []:
                target = self.runtime.resolve_target_port(sp, pod_key)
                if target is None:
                    continue
                entry = {"port": target, "protocol": sp.get("protocol", "TCP")}
                if sp.get("name"):
                    entry["name"] = sp["name"]
                ports.append(entry)
            sig = tuple((p.get("name", ""), p["port"], p["protocol"]) for p in ports)
            groups.setdefault(sig, (ports, []))[1].append((pod_key, ready))
        return list(groups.values())

    def has_endpoints_object(self, key: Key) -> bool:
        svc = self.runtime.objects["services"].get(key)
        return bool(svc and (svc["spec"].get("selector") or key == ("default", "kubernetes")))

    def _target_ref(self, pod_key: Key) -> dict[str, Any]:
        return {
            "kind": "Pod",
            "namespace": pod_key[0],
            "name": pod_key[1],
            "uid": self.runtime.objects["pods"][pod_key]["metadata"]["uid"],
        }

    def render_endpoints(self, key: Key, in_list: bool = False) -> dict[str, Any]:
        if not self.has_endpoints_object(key):
            raise not_found("endpoints", key[1])
        svc = self.runtime.objects["services"][key]
        meta = {
            "name": key[1],
            "namespace": key[0],
            "uid": svc["metadata"]["uid"],
            "resourceVersion": str(self.runtime.store.resource_version),
            "creationTimestamp": svc["metadata"]["creationTimestamp"],
            "labels": dict(svc["metadata"].get("labels") or {}),
        }
        subsets = []
        if key == ("default", "kubernetes"):
            subsets.append(
                {
                    "addresses": [{"ip": self.runtime.nodes[0].host_ip}],
                    "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}],
                }
            )
        for ports, backends in self._endpoint_groups(key):
            subset: dict[str, Any] = {"ports": ports}
            for pod_key, ready in backends:
                rt = self.runtime.pod_rt[pod_key]
                addr = {
                    "ip": rt.ip,
                    "nodeName": self.runtime.nodes[rt.node].name,
                    "targetRef": self._target_ref(pod_key),
                }
                subset.setdefault("addresses" if ready else "notReadyAddresses", []).append(addr)
            subsets.append(subset)
        obj: dict[str, Any] = {"metadata": meta}
        if subsets:
            obj["subsets"] = subsets
        self._managed("Endpoints", "v1", key, obj)
        return obj if in_list else {"kind": "Endpoints", "apiVersion": "v1", **obj}

    def _managed(self, kind: str, api_version: str, key: Key, obj: dict[str, Any]) -> None:
        """The writer's managedFields entry on OBJ: the endpoints (or endpoint slice) controller
        of kube-controller-manager, an Update of the main resource; for the `kubernetes`
        Service, the apiserver's own endpoint reconciler. Its time is the last change the lab
        tells: the Service's creation, or the start of its latest backend."""
        svc = self.runtime.objects["services"][key]
        times = [str(svc["metadata"]["creationTimestamp"])]
        for pod_key, _ready in self.service_backends(key):
            times.append(timestamp(self.runtime.pod_rt[pod_key].start_at))
        manager = (
            "kube-apiserver" if key == ("default", "kubernetes") else "kube-controller-manager"
        )
        entry = managedfields.controller_entry(
            kind, {}, obj, manager, max(times), api_version=api_version
        )
        if entry is not None:
            obj["metadata"]["managedFields"] = [entry]

    def list_endpoints(self, namespace: str | None, selector: str | None) -> list[dict[str, Any]]:
        return [
            self.render_endpoints(k, in_list=True)
            for k, o in self.runtime.objects["services"].items()
            if (namespace is None or k[0] == namespace)
            and self.has_endpoints_object(k)
            and matches_query(selector, o["metadata"].get("labels"))
        ]

    def _slices(self, key: Key) -> list[dict[str, Any]]:
        svc = self.runtime.objects["services"][key]
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
                rt = self.runtime.pod_rt[pod_key]
                endpoints.append(
                    {
                        "addresses": [rt.ip],
                        "conditions": {"ready": ready, "serving": ready, "terminating": False},
                        "nodeName": self.runtime.nodes[rt.node].name,
                        "targetRef": self._target_ref(pod_key),
                    }
                )
            if key == ("default", "kubernetes"):
                endpoints = [
                    {"addresses": [self.runtime.nodes[0].host_ip], "conditions": {"ready": True}}
                ]
                ports = [{"name": "https", "port": 6443, "protocol": "TCP"}]
            made: dict[str, Any] = {
                "metadata": {
                    "name": key[1] if key == ("default", "kubernetes") else f"{key[1]}-{suffix}",
                    "namespace": key[0],
                    "uid": str(
                        uuid.UUID(
                            int=zlib.crc32(f"{svc['metadata']['uid']}/{index}".encode()),
                            version=4,
                        )
                    ),
                    "resourceVersion": str(self.runtime.store.resource_version),
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
            self._managed("EndpointSlice", "discovery.k8s.io/v1", key, made)
            slices.append(made)
        return slices

    def list_endpointslices(
        self, namespace: str | None, selector: str | None
    ) -> list[dict[str, Any]]:
        out = []
        for key in list(self.runtime.objects["services"]):
            if (namespace is None or key[0] == namespace) and self.has_endpoints_object(key):
                out += [
                    s for s in self._slices(key) if matches_query(selector, s["metadata"]["labels"])
                ]
        return out

    def get_endpointslice(self, namespace: str, name: str) -> dict[str, Any]:
        for item in self.list_endpointslices(namespace, None):
            if item["metadata"]["name"] == name:
                return {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1", **item}
        raise not_found("endpointslices", name, "discovery.k8s.io")

    def derived(self) -> dict[DerivedId, dict[str, Any]]:
        self._backends = {}
        try:
            return self._derived()
        finally:
            self._backends = None

    def _derived(self) -> dict[DerivedId, dict[str, Any]]:
        out: dict[DerivedId, dict[str, Any]] = {}
        for key in self.runtime.objects["services"]:
            if not self.has_endpoints_object(key):
                continue
            out[("endpoints", key)] = self.render_endpoints(key)
            if self.serves_endpointslices:
                for item in self._slices(key):
                    out[("endpointslices", (key[0], item["metadata"]["name"]))] = {
                        "kind": "EndpointSlice",
                        "apiVersion": "discovery.k8s.io/v1",
                        **item,
                    }
        return out
