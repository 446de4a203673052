"""`as=Table` answers (meta.k8s.io/v1 Table), with the columns of upstream's printers.

kubectl asks for lists and single objects as Tables
(`Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...`), and prints the columns the
server chose; `-o wide` shows the columns of priority 1 too. The columns here are those of
kubernetes/pkg/printers/internalversion/printers.go for the kinds the lab serves; any other
kind gets the default table (Name, Created At), as the API server's default convertor does.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

TABLE_V1 = "application/json;as=Table;v=v1;g=meta.k8s.io"
TABLE_V1BETA1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"


def wants_table(accept: str | None) -> str | None:
    for part in (accept or "").split(","):
        params = {
            k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])
        }
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return "meta.k8s.io/v1" if params.get("v") == "v1" else "meta.k8s.io/v1beta1"
    return None


def _col(name: str, type_: str = "string", priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": "", "priority": priority}


def age(stamp: str | None, now: float | None = None) -> str:
    """A duration as kubectl prints it (duration.HumanDuration): 5s, 3m, 2m30s, 4h, 3d."""
    if not stamp:
        return "<unknown>"
    then = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    seconds = int(max(0, (now or time.time()) - then))
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


def _pod(obj: dict[str, Any]) -> list[Any]:
    status = obj.get("status") or {}
    statuses = status.get("containerStatuses") or []
    containers = (obj.get("spec") or {}).get("containers") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    reason = status.get("phase", "Unknown")
    for c in statuses:
        state = c.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state and state["terminated"].get("reason"):
            reason = state["terminated"]["reason"]
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    return [
        obj["metadata"]["name"],
        f"{ready}/{len(containers)}",
        reason,
        restarts,
        age(obj["metadata"].get("creationTimestamp")),
        status.get("podIP") or "<none>",
        (obj.get("spec") or {}).get("nodeName") or "<none>",
        "<none>",
        "<none>",
    ]


POD_COLUMNS = [
    _col("Name", fmt="name"),
    _col("Ready"),
    _col("Status"),
    _col("Restarts", "string"),
    _col("Age"),
    _col("IP", priority=1),
    _col("Node", priority=1),
    _col("Nominated Node", priority=1),
    _col("Readiness Gates", priority=1),
]


def _node(obj: dict[str, Any]) -> list[Any]:
    meta, status = obj["metadata"], obj.get("status") or {}
    ready: dict[str, Any] = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {}
    )
    state = "Ready" if ready.get("status") == "True" else "NotReady"
    if (obj.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    roles = sorted(
        k.split("/", 1)[1]
        for k in (meta.get("labels") or {})
        if k.startswith("node-role.kubernetes.io/")
    )
    addresses = status.get("addresses") or []
    info = status.get("nodeInfo") or {}

    def address(kind: str) -> str:
        return next((a["address"] for a in addresses if a.get("type") == kind), "<none>")

    return [
        meta["name"],
        state,
        ",".join(roles) or "<none>",
        age(meta.get("creationTimestamp")),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage", ""),
        info.get("kernelVersion", ""),
        info.get("containerRuntimeVersion", ""),
    ]


NODE_COLUMNS = [
    _col("Name", fmt="name"),
    _col("Status"),
    _col("Roles"),
    _col("Age"),
    _col("Version"),
    _col("Internal-IP", priority=1),
    _col("External-IP", priority=1),
    _col("OS-Image", priority=1),
    _col("Kernel-Version", priority=1),
    _col("Container-Runtime", priority=1),
]


def _service(obj: dict[str, Any]) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ingress = ((status.get("loadBalancer") or {}).get("ingress")) or []
    external = ",".join(i.get("ip") or i.get("hostname", "") for i in ingress)
    if not external:
        external = ",".join(spec.get("externalIPs") or []) or (
            "<pending>" if spec.get("type") == "LoadBalancer" else "<none>"
        )
    ports = []
    for p in spec.get("ports") or []:
        text = f"{p.get('port')}"
        if p.get("nodePort"):
            text += f":{p['nodePort']}"
        ports.append(f"{text}/{p.get('protocol', 'TCP')}")
    selector = spec.get("selector") or {}
    return [
        obj["metadata"]["name"],
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        external,
        ",".join(ports) or "<none>",
        age(obj["metadata"].get("creationTimestamp")),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


SERVICE_COLUMNS = [
    _col("Name", fmt="name"),
    _col("Type"),
    _col("Cluster-IP"),
    _col("External-IP"),
    _col("Port(s)"),
    _col("Age"),
    _col("Selector", priority=1),
]


def _template_columns(obj: dict[str, Any]) -> list[Any]:
    """Containers, Images, Selector: the wide columns of the workload kinds (TEMPLATE_COLUMNS)."""
    spec = obj.get("spec") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    return [
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())),
    ]


TEMPLATE_COLUMNS = [
    _col("Containers", priority=1),
    _col("Images", priority=1),
    _col("Selector", priority=1),
]


def _deployment(obj: dict[str, Any]) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        age(obj["metadata"].get("creationTimestamp")),
        *_template_columns(obj),
    ]


DEPLOYMENT_COLUMNS = [
    _col("Name", fmt="name"),
    _col("Ready"),
    _col("Up-to-date", "integer"),
    _col("Available", "integer"),
    _col("Age"),
    *TEMPLATE_COLUMNS,
]


def _netpol(obj: dict[str, Any]) -> list[Any]:
    selector = ((obj.get("spec") or {}).get("podSelector") or {}).get("matchLabels") or {}
    return [
        obj["metadata"]["name"],
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
        age(obj["metadata"].get("creationTimestamp")),
    ]


def _namespace(obj: dict[str, Any]) -> list[Any]:
    return [
        obj["metadata"]["name"],
        (obj.get("status") or {}).get("phase", "Active"),
        age(obj["metadata"].get("creationTimestamp")),
    ]


def _endpoints(obj: dict[str, Any]) -> list[Any]:
    found = []
    for subset in obj.get("subsets") or []:
        for address in subset.get("addresses") or []:
            for port in subset.get("ports") or [{}]:
                found.append(f"{address.get('ip')}:{port.get('port')}" if port else address["ip"])
    shown = ",".join(found[:3]) + (f" + {len(found) - 3} more..." if len(found) > 3 else "")
    return [
        obj["metadata"]["name"],
        shown or "<none>",
        age(obj["metadata"].get("creationTimestamp")),
    ]


def _daemonset(obj: dict[str, Any]) -> list[Any]:
    status = obj.get("status") or {}
    template = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    node_selector = template.get("nodeSelector") or {}
    return [
        obj["metadata"]["name"],
        int(status.get("desiredNumberScheduled") or 0),
        int(status.get("currentNumberScheduled") or 0),
        int(status.get("numberReady") or 0),
        int(status.get("updatedNumberScheduled") or 0),
        int(status.get("numberAvailable") or 0),
        ",".join(f"{k}={v}" for k, v in sorted(node_selector.items())) or "<none>",
        age(obj["metadata"].get("creationTimestamp")),
        *_template_columns(obj),
    ]


def _replicaset(obj: dict[str, Any]) -> list[Any]:
    status = obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        int((obj.get("spec") or {}).get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        age(obj["metadata"].get("creationTimestamp")),
        *_template_columns(obj),
    ]


def _configmap(obj: dict[str, Any]) -> list[Any]:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [obj["metadata"]["name"], count, age(obj["metadata"].get("creationTimestamp"))]


def _serviceaccount(obj: dict[str, Any]) -> list[Any]:
    return [
        obj["metadata"]["name"],
        len(obj.get("secrets") or []),
        age(obj["metadata"].get("creationTimestamp")),
    ]


def _event(obj: dict[str, Any]) -> list[Any]:
    """printEvent: the last seen age ("5s (x3 over 2m)" when repeated), the involved object as
    kind/name, the source as "component, host"."""
    involved = obj.get("involvedObject") or {}
    count = int(obj.get("count") or 1)
    last = age(obj.get("lastTimestamp"))
    first = age(obj.get("firstTimestamp"))
    if count > 1:
        last = f"{last} (x{count} over {first})"
    source = obj.get("source") or {}
    return [
        last,
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        ", ".join(p for p in (source.get("component", ""), source.get("host", "")) if p),
        str(obj.get("message", "")).strip(),
        first,
        count,
        obj["metadata"]["name"],
    ]


def _default(obj: dict[str, Any]) -> list[Any]:
    return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp")]


PRINTERS: dict[str, tuple[list[dict[str, Any]], Any]] = {
    "pods": (POD_COLUMNS, _pod),
    "nodes": (NODE_COLUMNS, _node),
    "services": (SERVICE_COLUMNS, _service),
    "deployments": (DEPLOYMENT_COLUMNS, _deployment),
    "networkpolicies": (
        [_col("Name", fmt="name"), _col("Pod-Selector"), _col("Age")],
        _netpol,
    ),
    "namespaces": ([_col("Name", fmt="name"), _col("Status"), _col("Age")], _namespace),
    "endpoints": ([_col("Name", fmt="name"), _col("Endpoints"), _col("Age")], _endpoints),
    "daemonsets": (
        [
            _col("Name", fmt="name"),
            _col("Desired", "integer"),
            _col("Current", "integer"),
            _col("Ready", "integer"),
            _col("Up-to-date", "integer"),
            _col("Available", "integer"),
            _col("Node Selector"),
            _col("Age"),
            *TEMPLATE_COLUMNS,
        ],
        _daemonset,
    ),
    "replicasets": (
        [
            _col("Name", fmt="name"),
            _col("Desired", "integer"),
            _col("Current", "integer"),
            _col("Ready", "integer"),
            _col("Age"),
            *TEMPLATE_COLUMNS,
        ],
        _replicaset,
    ),
    "configmaps": ([_col("Name", fmt="name"), _col("Data"), _col("Age")], _configmap),
    "serviceaccounts": ([_col("Name", fmt="name"), _col("Secrets"), _col("Age")], _serviceaccount),
    "events": (
        [
            _col("Last Seen"),
            _col("Type"),
            _col("Reason"),
            _col("Object"),
            _col("Subobject", priority=1),
            _col("Source", priority=1),
            _col("Message"),
            _col("First Seen", priority=1),
            _col("Count", priority=1),
            _col("Name", priority=1, fmt="name"),
        ],
        _event,
    ),
}
DEFAULT = ([_col("Name", fmt="name"), _col("Created At", "date")], _default)


def _row_object(obj: dict[str, Any], include: str, api_version: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": obj.get("metadata") or {},
    }


def table(
    resource: str,
    objects: list[dict[str, Any]],
    *,
    resource_version: str,
    api_version: str = "meta.k8s.io/v1",
    include: str = "Metadata",
    with_columns: bool = True,
) -> dict[str, Any]:
    columns, printer = PRINTERS.get(resource, DEFAULT)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": printer(obj)}
        shown = _row_object(obj, include, api_version)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    out: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": {"resourceVersion": resource_version},
        "rows": rows,
    }
    if with_columns:
        out["columnDefinitions"] = columns
    return out
