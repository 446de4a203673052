"""Core v1 Events, as the scheduler and the kubelet record them for the lab's pods.

A real cluster's `kubectl get events` and `kubectl describe pod` show why a pod is where it is:
the scheduler's `Scheduled` (or `FailedScheduling` while no node takes it) and the kubelet's
`Pulled`, `Created` and `Started` per container. The lab derives the same events from its pods'
state when asked, so they are never out of step with it; an event is named as the recorders
name theirs (`POD.HEX`, the hex a function of the event, so the name stays the same between
reads). Events are read-only here: list and get, no watch.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from lab.errors import ApiError, not_found
from lab.runtime import NO_NODE
from lab.store import timestamp
from lab.watch import selector_terms

if TYPE_CHECKING:
    from lab.cluster import Cluster


def _event(
    pod: dict[str, Any],
    reason: str,
    message: str,
    at: float,
    source: dict[str, str],
    field_path: str = "",
    type_: str = "Normal",
) -> dict[str, Any]:
    meta = pod["metadata"]
    digest = zlib.crc32(f"{meta['uid']}/{reason}/{field_path}".encode())
    stamp = timestamp(at)
    involved = {
        "kind": "Pod",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta["uid"],
        "apiVersion": "v1",
    }
    if field_path:
        involved["fieldPath"] = field_path
    return {
        "metadata": {
            "name": f"{meta['name']}.{digest:016x}",
            "namespace": meta["namespace"],
            "uid": f"{digest:08x}-{zlib.crc32(meta['uid'].encode()) & 0xFFFF:04x}-4000-8000-"
            f"{zlib.crc32(reason.encode()):012x}",
            "resourceVersion": meta.get("resourceVersion", ""),
            "creationTimestamp": stamp,
        },
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "source": source,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "type": type_,
        "eventTime": None,
        "reportingComponent": source["component"],
        "reportingInstance": source.get("host", ""),
    }


def _pod_events(cluster: Cluster, key: tuple[str, str]) -> list[dict[str, Any]]:
    rt = cluster.pod_rt.get(key)
    if rt is None:
        return []
    pod = cluster.render("pods", key)
    spec = pod.get("spec") or {}
    scheduler = {"component": "default-scheduler"}
    if rt.node == NO_NODE:
        if spec.get("nodeName"):
            return []  # bound to a node that does not exist: no scheduler, no kubelet
        scheduled: dict[str, Any] = next(
            (
                c
                for c in (pod.get("status") or {}).get("conditions") or []
                if c.get("type") == "PodScheduled"
            ),
            {},
        )
        return [
            _event(
                pod,
                "FailedScheduling",
                scheduled.get("message", ""),
                rt.created,
                scheduler,
                type_="Warning",
            )
        ]
    node = cluster.nodes[rt.node].name
    ns, name = key
    out = [
        _event(
            pod,
            "Scheduled",
            f"Successfully assigned {ns}/{name} to {node}",
            rt.created,
            scheduler,
        )
    ]
    if not rt.started:
        return out
    kubelet = {"component": "kubelet", "host": node}
    for c in spec.get("containers") or []:
        where = f"spec.containers{{{c.get('name')}}}"
        for reason, message in (
            ("Pulled", f'Container image "{c.get("image")}" already present on machine'),
            ("Created", f"Created container {c.get('name')}"),
            ("Started", f"Started container {c.get('name')}"),
        ):
            out.append(_event(pod, reason, message, rt.start_at, kubelet, where))
    return out


def list_events(cluster: Cluster, namespace: str | None) -> list[dict[str, Any]]:
    """The events of every pod in NAMESPACE (None: every namespace), oldest first."""
    keys = sorted(k for k in cluster.objects["pods"] if namespace is None or k[0] == namespace)
    found = [e for key in keys for e in _pod_events(cluster, key)]
    return sorted(found, key=lambda e: e["lastTimestamp"])  # stable: a pod's in their order


def get_event(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    for event in list_events(cluster, namespace):
        if event["metadata"]["name"] == name:
            return {"kind": "Event", "apiVersion": "v1", **event}
    raise not_found("events", name)


# The field selectors the API server takes for core v1 Events (pkg/registry/core/event).
_FIELDS = {
    "involvedObject.kind": lambda e: e["involvedObject"].get("kind"),
    "involvedObject.namespace": lambda e: e["involvedObject"].get("namespace"),
    "involvedObject.name": lambda e: e["involvedObject"].get("name"),
    "involvedObject.uid": lambda e: e["involvedObject"].get("uid"),
    "involvedObject.apiVersion": lambda e: e["involvedObject"].get("apiVersion"),
    "involvedObject.resourceVersion": lambda e: e["involvedObject"].get("resourceVersion"),
    "involvedObject.fieldPath": lambda e: e["involvedObject"].get("fieldPath", ""),
    "reason": lambda e: e.get("reason"),
    "reportingComponent": lambda e: e.get("reportingComponent"),
    "source": lambda e: e["source"].get("component"),
    "type": lambda e: e.get("type"),
    "metadata.name": lambda e: e["metadata"].get("name"),
    "metadata.namespace": lambda e: e["metadata"].get("namespace"),
}


def field_matches(selector: str | None, event: dict[str, Any]) -> bool:
    """`fieldSelector` on an Event (what `kubectl describe` asks: involvedObject.name=…)."""
    for key, value, negate in selector_terms(selector):
        if key not in _FIELDS:
            raise ApiError(400, f"field label not supported: {key}")
        if ((_FIELDS[key](event) or "") == value) == negate:
            return False
    return True
