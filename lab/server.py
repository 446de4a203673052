"""The lab HTTP server: many emulated Kubernetes API servers behind one port.

Cluster NAME lives under `/clusters/NAME`; see docs/lab-protocol.md for what it answers.
Run it standalone with `python -m lab.server --profiles lab/profiles --port 8081`.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import re
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from lab import (
    defaulting,
    deployments,
    discovery,
    events,
    fields,
    managedfields,
    openapi,
    patch,
    protobuf,
    rbac,
    tables,
    updates,
)
from lab.cluster import KIND_OF, Cluster
from lab.daemonsets import configmaps, daemonsets
from lab.errors import ApiError, invalid
from lab.labels import matches_query
from lab.profiles import load_profiles, validate_profile
from lab.tls import DEFAULT_HOSTS, KeyPair, LabCA, peer_identity
from lab.watch import (
    DerivedWatch,
    WatchStream,
    check_list_resource_version,
    field_matches,
    is_watch,
)

_NS = r"(?P<ns>[a-z0-9.-]+)"
_NAME = r"(?P<name>[^/]+)"
LIST_KIND = {
    "pods": "PodList",
    "services": "ServiceList",
    "networkpolicies": "NetworkPolicyList",
    "deployments": "DeploymentList",
}
LIST_API_VERSION = {
    "pods": "v1",
    "services": "v1",
    "networkpolicies": "networking.k8s.io/v1",
    "deployments": "apps/v1",
}
PREFIX = {
    "pods": "/api/v1",
    "services": "/api/v1",
    "networkpolicies": "/apis/networking.k8s.io/v1",
    "deployments": "/apis/apps/v1",
}

Handler = Callable[[Cluster, dict[str, str], dict[str, list[str]], Any], tuple[int, Any]]


def _list(
    kind: str, api_version: str, items: list[dict[str, Any]], cluster: Cluster
) -> dict[str, Any]:
    return {
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {"resourceVersion": str(cluster.resource_version)},
        "items": items,
    }


# The kind and apiVersion of each list's items, for watch events (list items carry neither).
ITEM_TYPE = {
    "pods": ("Pod", "v1"),
    "services": ("Service", "v1"),
    "networkpolicies": ("NetworkPolicy", "networking.k8s.io/v1"),
    "namespaces": ("Namespace", "v1"),
    "nodes": ("Node", "v1"),
    "endpoints": ("Endpoints", "v1"),
    "endpointslices": ("EndpointSlice", "discovery.k8s.io/v1"),
    "deployments": ("Deployment", "apps/v1"),
    "events": ("Event", "v1"),
    "replicasets": ("ReplicaSet", "apps/v1"),
    "daemonsets": ("DaemonSet", "apps/v1"),
    "configmaps": ("ConfigMap", "v1"),
}


class Answer:
    """A payload with its own media type and extra headers (aggregated discovery, warnings)."""

    def __init__(
        self,
        payload: Any,
        content_type: str | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        self.payload = payload
        self.content_type = content_type
        self.headers = headers or []


def _request_header(name: str) -> str | None:
    headers = getattr(_ROUTER.local, "headers", None)
    return headers.get(name) if headers is not None else None


def _as_table_stream(stream: WatchStream, resource: str, query: dict[str, list[str]]) -> None:
    """kubectl's `get -w` asks for Tables: each event's object becomes a one-row Table, the
    column definitions on the first."""
    version = tables.wants_table(_request_header("Accept"))
    if version is None:
        return
    include = _q(query, "includeObject") or "Metadata"
    first = [True]
    table_version: str = version

    def as_table(obj: dict[str, Any]) -> dict[str, Any]:
        out = tables.table(
            resource,
            [obj],
            resource_version=str(obj.get("metadata", {}).get("resourceVersion", "")),
            api_version=table_version,
            include=include,
            with_columns=first[0],
        )
        first[0] = False
        return out

    stream.transform = as_table


def _table_or(
    resource: str, obj: dict[str, Any], cluster: Cluster, query: dict[str, list[str]]
) -> Any:
    """One object, or its one-row Table when the client asked for `as=Table`."""
    version = tables.wants_table(_request_header("Accept"))
    if version is None:
        return obj
    return _table(resource, [obj], cluster, query, version)


def _table(
    resource: str,
    items: list[dict[str, Any]],
    cluster: Cluster,
    query: dict[str, list[str]],
    version: str,
) -> Any:
    """The Table of these objects at the cluster's resourceVersion (`includeObject` as asked)."""
    return tables.table(
        resource,
        items,
        resource_version=str(cluster.resource_version),
        api_version=version,
        include=_q(query, "includeObject") or "Metadata",
    )


def _list_answer(
    resource: str,
    list_kind: str,
    api_version: str,
    items: list[dict[str, Any]],
    cluster: Cluster,
    query: dict[str, list[str]],
) -> tuple[int, Any]:
    """A list, or its Table when the client asked for `as=Table`."""
    version = tables.wants_table(_request_header("Accept"))
    if version is None:
        return 200, _list(list_kind, api_version, items, cluster)
    kind, item_version = ITEM_TYPE[resource]
    typed = [{"kind": kind, "apiVersion": item_version, **i} for i in items]
    return 200, _table(resource, typed, cluster, query, version)


def _list_or_watch(
    resource: str,
    list_kind: str,
    api_version: str,
    cluster: Cluster,
    namespace: str | None,
    query: dict[str, list[str]],
    produce: Callable[[], list[dict[str, Any]]],
) -> tuple[int, Any]:
    """A list answer, or with ?watch=true the watch stream of the same collection."""
    if is_watch(query):
        kind, item_version = ITEM_TYPE[resource]
        snapshot = [
            {
                "kind": kind,
                "apiVersion": item_version,
                **{k: v for k, v in item.items() if k not in ("kind", "apiVersion")},
            }
            for item in produce()
        ]
        stream = WatchStream(cluster, resource, namespace, query, snapshot, _ROUTER.stopping)
        stream.item_type = ITEM_TYPE[resource]
        _as_table_stream(stream, resource, query)
        return 200, stream
    check_list_resource_version(cluster, query)
    selector = _q(query, "fieldSelector")
    items = [i for i in produce() if field_matches(selector, i)]
    return _list_answer(resource, list_kind, api_version, items, cluster, query)


def _read_only_list(
    resource: str,
    list_kind: str,
    api_version: str,
    cluster: Cluster,
    query: dict[str, list[str]],
    produce: Callable[[], list[dict[str, Any]]],
    matches: Callable[[str | None, dict[str, Any]], bool] = field_matches,
    namespace: str | None = None,
) -> tuple[int, Any]:
    """A list the lab derives from its state (events, ReplicaSets, the CNI's DaemonSets and
    ConfigMaps): field and label selectors, `as=Table`, and watches (lab/watch.DerivedWatch)."""
    if is_watch(query):
        kind, item_version = ITEM_TYPE[resource]

        def typed() -> list[dict[str, Any]]:
            return [{"kind": kind, "apiVersion": item_version, **i} for i in produce()]

        stream = DerivedWatch(cluster, resource, namespace, query, typed, _ROUTER.stopping, matches)
        stream.item_type = ITEM_TYPE[resource]
        _as_table_stream(stream, resource, query)
        return 200, stream
    items = produce()
    selector = _q(query, "fieldSelector")
    items = [i for i in items if matches(selector, i) and _labels_ok(query, i)]
    return _list_answer(resource, list_kind, api_version, items, cluster, query)


def _rbac_answer(
    cluster: Cluster, query: dict[str, list[str]], served: tuple[int, Any]
) -> tuple[int, Any]:
    """An RBAC or ServiceAccount answer, as a Table when kubectl asks for one."""
    code, payload = served
    version = tables.wants_table(_request_header("Accept"))
    if version is None or code != 200 or not isinstance(payload, dict):
        return served
    kind = str(payload.get("kind", ""))
    items = payload["items"] if kind.endswith("List") else [payload]
    if kind.endswith("List"):
        kind, api_version = kind.removesuffix("List"), payload.get("apiVersion", "v1")
        items = [{"kind": kind, "apiVersion": api_version, **i} for i in items]
    resource = {"ServiceAccount": "serviceaccounts"}.get(kind, kind.lower() + "s")
    return 200, _table(resource, items, cluster, query, version)


def _q(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def _tail_lines(query: dict[str, list[str]]) -> int | None:
    """`tailLines` of a log request (the kubelet's: the last N lines); None when absent."""
    value = _q(query, "tailLines")
    return int(value) if value and value.isdigit() and int(value) > 0 else None


class _Router:
    def __init__(self) -> None:
        self.routes: list[tuple[re.Pattern[str], dict[str, Handler]]] = []
        # Set per request by the handler thread: the serving lab's stop event (ends watches).
        self.local = threading.local()

    @property
    def stopping(self) -> threading.Event:
        return self.local.stopping

    def add(self, pattern: str, **methods: Handler) -> None:
        self.routes.append((re.compile(f"^{pattern}/?$"), methods))

    def match(self, method: str, path: str) -> tuple[Handler, dict[str, str]]:
        for regex, methods in self.routes:
            found = regex.match(path)
            if found:
                if method not in methods:
                    raise ApiError(
                        405,
                        "the server does not allow this method on the requested resource",
                        reason="MethodNotAllowed",
                    )
                return methods[method], found.groupdict()
        raise ApiError(404, "the server could not find the requested resource")


def _build_router() -> _Router:
    r = _Router()
    r.add("/version", GET=lambda c, a, q, b: (200, c.version()))
    r.add("/(healthz|readyz|livez)", GET=lambda c, a, q, b: (200, "ok"))
    r.add("/api", GET=lambda c, a, q, b: _discovery_root(c, core=True))
    r.add("/apis", GET=lambda c, a, q, b: _discovery_root(c, core=False))
    r.add("/api/v1", GET=lambda c, a, q, b: _served(discovery.resource_list(c, "v1")))
    r.add(
        r"/apis/(?P<group>[a-z0-9.-]+)",
        GET=lambda c, a, q, b: _served(discovery.api_group(c, a["group"])),
    )
    r.add(
        r"/apis/(?P<group>[a-z0-9.-]+)/(?P<version>v[0-9a-z]+)",
        GET=lambda c, a, q, b: _served(discovery.resource_list(c, f"{a['group']}/{a['version']}")),
    )
    r.add("/openapi/v3", GET=lambda c, a, q, b: (200, openapi.root(c)))
    r.add(
        r"/openapi/v3/(?P<doc>api/v1|apis/[a-z0-9.-]+/v[0-9a-z]+)",
        GET=lambda c, a, q, b: (200, openapi.document(c, a["doc"])),
    )
    r.add("/openapi/v2", GET=lambda c, a, q, b: _openapi_v2_missing())
    r.add(
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        POST=lambda c, a, q, b: (201, _self_subject_access_review(c, _body(b))),
    )

    def list_nodes(c: Cluster, a: dict[str, str], q: Any, b: Any) -> tuple[int, Any]:
        return _list_or_watch(
            "nodes",
            "NodeList",
            "v1",
            c,
            None,
            q,
            lambda: [
                node
                for node in (c.render_node(n, in_list=True) for n in c.nodes)
                if _labels_ok(q, node)
            ],
        )

    r.add("/api/v1/nodes", GET=list_nodes)

    def get_node(c: Cluster, a: dict[str, str], q: Any, b: Any) -> tuple[int, Any]:
        node = c.node_by_name(a["name"])
        if node is None:
            raise ApiError(
                404, f'nodes "{a["name"]}" not found', details={"name": a["name"], "kind": "nodes"}
            )
        return 200, _table_or("nodes", c.render_node(node), c, q)

    def node_now(c: Cluster, name: str) -> dict[str, Any]:
        node = c.node_by_name(name)
        if node is None:
            raise ApiError(
                404, f'nodes "{name}" not found', details={"name": name, "kind": "nodes"}
            )
        return c.render_node(node)

    # kubectl cordon, uncordon, label, annotate and taint patch the node; edit and replace PUT it.
    r.add(
        f"/api/v1/nodes/{_NAME}",
        GET=get_node,
        PUT=lambda c, a, q, b: _updated(
            q,
            "Node",
            _body(b),
            lambda: updates.replace_node(c, a["name"], _body(b)),
            lambda: node_now(c, a["name"]),
        ),
        PATCH=lambda c, a, q, b: _patched(
            c,
            q,
            b,
            "Node",
            node_now(c, a["name"]),
            lambda new: updates.replace_node(c, a["name"], new),
        ),
    )
    r.add(
        "/api/v1/namespaces",
        GET=lambda c, a, q, b: _list_or_watch(
            "namespaces",
            "NamespaceList",
            "v1",
            c,
            None,
            q,
            lambda: [
                {k: v for k, v in ns.items() if k not in ("kind", "apiVersion")}
                for ns in c.list_namespaces(_q(q, "labelSelector"))
            ],
        ),
        POST=lambda c, a, q, b: _created(
            q, "Namespace", _body(b), lambda: c.create_namespace(_body(b))
        ),
    )
    r.add(
        f"/api/v1/namespaces/{_NAME}",
        GET=lambda c, a, q, b: (200, _table_or("namespaces", c.get_namespace(a["name"]), c, q)),
        DELETE=lambda c, a, q, b: (200, c.delete_namespace(a["name"])),
        PUT=lambda c, a, q, b: _updated(
            q,
            "Namespace",
            _body(b),
            lambda: updates.replace_namespace(c, a["name"], _body(b)),
            lambda: c.get_namespace(a["name"]),
        ),
        PATCH=lambda c, a, q, b: _patched_or_applied(
            c,
            q,
            b,
            "Namespace",
            a["name"],
            lambda: c.get_namespace(a["name"]),
            lambda new: updates.replace_namespace(c, a["name"], new),
            lambda body: c.create_namespace(body),
        ),
    )
    for kind in KIND_OF:
        _add_kind(r, kind)
    r.add(
        f"/api/v1/namespaces/{_NS}/pods/{_NAME}/log",
        GET=lambda c, a, q, b: (
            200,
            _Text(c.pod_log(a["ns"], a["name"], _q(q, "container"), _tail_lines(q))),
        ),
    )
    r.add(
        f"/api/v1/namespaces/{_NS}/endpoints",
        GET=lambda c, a, q, b: _list_or_watch(
            "endpoints",
            "EndpointsList",
            "v1",
            c,
            a["ns"],
            q,
            lambda: c.list_endpoints(a["ns"], _q(q, "labelSelector")),
        ),
    )
    r.add(
        f"/api/v1/namespaces/{_NS}/endpoints/{_NAME}",
        GET=lambda c, a, q, b: (
            200,
            _table_or("endpoints", _endpoints(c, a["ns"], a["name"]), c, q),
        ),
    )
    r.add(
        "/api/v1/endpoints",
        GET=lambda c, a, q, b: _list_or_watch(
            "endpoints",
            "EndpointsList",
            "v1",
            c,
            None,
            q,
            lambda: c.list_endpoints(None, _q(q, "labelSelector")),
        ),
    )
    r.add(
        f"/apis/discovery.k8s.io/v1/namespaces/{_NS}/endpointslices",
        GET=lambda c, a, q, b: _list_or_watch(
            "endpointslices",
            "EndpointSliceList",
            "discovery.k8s.io/v1",
            c,
            a["ns"],
            q,
            lambda: c.list_endpointslices(a["ns"], _q(q, "labelSelector")),
        ),
    )
    r.add(
        f"/apis/discovery.k8s.io/v1/namespaces/{_NS}/endpointslices/{_NAME}",
        GET=lambda c, a, q, b: (200, c.get_endpointslice(a["ns"], a["name"])),
    )
    r.add(
        "/apis/discovery.k8s.io/v1/endpointslices",
        GET=lambda c, a, q, b: _list_or_watch(
            "endpointslices",
            "EndpointSliceList",
            "discovery.k8s.io/v1",
            c,
            None,
            q,
            lambda: c.list_endpointslices(None, _q(q, "labelSelector")),
        ),
    )
    # The CNI's and kube-proxy's DaemonSets (lab/daemonsets.py), read to detect the CNI; the
    # Deployments' ReplicaSets, current and old (lab/deployments.py); the ConfigMaps that say a
    # CNI's mode and kube-proxy's (lab/daemonsets.py); the scheduler's and kubelets' events for
    # the pods (lab/events.py).
    # (looked up at each call: tests put a refusing lister in its place)
    _add_derived(r, "daemonsets", "DaemonSetList", "apps/v1", lambda c, ns: daemonsets(c, ns))
    _add_derived(r, "replicasets", "ReplicaSetList", "apps/v1", deployments.replicasets)
    r.add(
        f"/apis/apps/v1/namespaces/{_NS}/replicasets/{_NAME}",
        GET=lambda c, a, q, b: (
            200,
            _table_or("replicasets", deployments.get_replicaset(c, a["ns"], a["name"]), c, q),
        ),
    )
    _add_derived(r, "configmaps", "ConfigMapList", "v1", configmaps)
    _add_derived(r, "events", "EventList", "v1", events.list_events, events.field_matches)
    r.add(
        f"/api/v1/namespaces/{_NS}/events/{_NAME}",
        GET=lambda c, a, q, b: (
            200,
            _table_or("events", events.get_event(c, a["ns"], a["name"]), c, q),
        ),
    )
    return r


def _add_derived(
    r: _Router,
    resource: str,
    list_kind: str,
    api_version: str,
    produce: Callable[[Cluster, str | None], list[dict[str, Any]]],
    matches: Callable[[str | None, dict[str, Any]], bool] = field_matches,
) -> None:
    """The cluster-wide and the namespaced list (and watch) of a kind the lab derives from its
    state: `produce(cluster, namespace or None)` makes the items."""
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    r.add(
        f"{prefix}/{resource}",
        GET=lambda c, a, q, b: _read_only_list(
            resource, list_kind, api_version, c, q, lambda: produce(c, None), matches
        ),
    )
    r.add(
        f"{prefix}/namespaces/{_NS}/{resource}",
        GET=lambda c, a, q, b: _read_only_list(
            resource,
            list_kind,
            api_version,
            c,
            q,
            lambda: produce(c, a["ns"]),
            matches,
            namespace=a["ns"],
        ),
    )


def _add_kind(r: _Router, k: str) -> None:
    """The routes of one kind of object (a function, so that each route's lambdas keep their kind)."""
    prefix = PREFIX[k]
    kind = KIND_OF[k]
    r.add(
        f"{prefix}/namespaces/{_NS}/{k}",
        GET=lambda c, a, q, b: _list_or_watch(
            k,
            LIST_KIND[k],
            LIST_API_VERSION[k],
            c,
            a["ns"],
            q,
            lambda: _checked_ns(
                c, a["ns"], lambda: c.list_objects(k, a["ns"], _q(q, "labelSelector"))
            ),
        ),
        POST=lambda c, a, q, b: _created(q, kind, _body(b), lambda: c.create(k, a["ns"], _body(b))),
    )
    r.add(
        f"{prefix}/namespaces/{_NS}/{k}/{_NAME}",
        GET=lambda c, a, q, b: (200, _table_or(k, c.get(k, a["ns"], a["name"]), c, q)),
        DELETE=lambda c, a, q, b: (
            200,
            c.delete(k, a["ns"], a["name"], _propagation(q, b)),
        ),
        PUT=lambda c, a, q, b: _updated(
            q,
            kind,
            _body(b),
            lambda: updates.replace(c, k, a["ns"], a["name"], _body(b)),
            lambda: c.get(k, a["ns"], a["name"]),
        ),
        PATCH=lambda c, a, q, b: _patched_or_applied(
            c,
            q,
            b,
            kind,
            a["name"],
            lambda: c.get(k, a["ns"], a["name"]),
            lambda new: updates.replace(c, k, a["ns"], a["name"], new),
            lambda body: c.create(k, a["ns"], body),
        ),
    )
    r.add(
        f"{prefix}/namespaces/{_NS}/{k}/{_NAME}/status",
        GET=lambda c, a, q, b: (200, c.get(k, a["ns"], a["name"])),
    )
    if k == "deployments":
        r.add(
            f"{prefix}/namespaces/{_NS}/{k}/{_NAME}/scale",
            GET=lambda c, a, q, b: (200, _scale(c, a["ns"], a["name"])),
            PUT=lambda c, a, q, b: (200, _rescaled(c, a["ns"], a["name"], _body(b))),
            PATCH=lambda c, a, q, b: (
                200,
                _rescaled(
                    c,
                    a["ns"],
                    a["name"],
                    patch.apply_patch(
                        "Scale",
                        _request_header("Content-Type") or "",
                        _scale(c, a["ns"], a["name"]),
                        b if isinstance(b, bytes) else b"",
                    ),
                ),
            ),
        )
    r.add(
        f"{prefix}/{k}",
        GET=lambda c, a, q, b: _list_or_watch(
            k,
            LIST_KIND[k],
            LIST_API_VERSION[k],
            c,
            None,
            q,
            lambda: c.list_objects(k, None, _q(q, "labelSelector")),
        ),
    )


def _scale(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    """A Deployment's `scale` subresource (autoscaling/v1 Scale), as `kubectl scale` reads it."""
    dep = cluster.get("deployments", namespace, name)
    meta = dep["metadata"]
    labels = ((dep["spec"].get("selector") or {}).get("matchLabels")) or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": int(dep["spec"].get("replicas", 1))},
        "status": {
            "replicas": int((dep.get("status") or {}).get("replicas") or 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        },
    }


def _rescaled(cluster: Cluster, namespace: str, name: str, scale: Any) -> dict[str, Any]:
    """PUT or PATCH of `scale`: the Deployment's spec.replicas set from the Scale's."""
    if not isinstance(scale, dict):
        raise ApiError(400, "the request body must be a JSON object")
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise ApiError(
            400,
            f'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
            f"{type(replicas).__name__} into Go struct field ScaleSpec.spec.replicas of type int32",
        )
    if replicas < 0:
        raise invalid(
            "Scale",
            name,
            [
                (
                    "spec.replicas",
                    "FieldValueInvalid",
                    f"Invalid value: {replicas}: must be greater than or equal to 0",
                )
            ],
            group="autoscaling",
        )
    dep = cluster.get("deployments", namespace, name)
    new = {k: copy.deepcopy(v) for k, v in dep.items() if k != "status"}
    new["spec"]["replicas"] = replicas
    rv = (scale.get("metadata") or {}).get("resourceVersion")
    if rv:
        new["metadata"]["resourceVersion"] = rv  # a precondition, as on the Deployment itself
    updates.replace(cluster, "deployments", namespace, name, new)
    return _scale(cluster, namespace, name)


def _served(found: dict[str, Any] | None) -> tuple[int, Any]:
    if found is None:
        raise ApiError(404, "the server could not find the requested resource")
    return 200, found


def _discovery_root(cluster: Cluster, core: bool) -> tuple[int, Any]:
    media = discovery.wants_aggregated(_request_header("Accept"))
    if media is not None:
        version = "v2" if media == discovery.AGGREGATED_V2 else "v2beta1"
        return 200, Answer(
            discovery.aggregated(cluster, core, f"apidiscovery.k8s.io/{version}"),
            content_type=media,
        )
    return 200, discovery.api_versions() if core else discovery.api_group_list(cluster)


def _openapi_v2_missing() -> tuple[int, Any]:
    raise ApiError(404, "the lab serves OpenAPI v3 only (/openapi/v3)")


def _propagation(query: dict[str, list[str]], body: Any) -> str | None:
    if isinstance(body, dict) and body.get("propagationPolicy"):
        return str(body["propagationPolicy"])
    return _q(query, "propagationPolicy")


def _dry_run(query: dict[str, list[str]]) -> bool:
    values = query.get("dryRun") or []
    for value in values:
        if value != "All":
            raise ApiError(
                400,
                f'dryRun: Unsupported value: "{value}": supported values: "All"',
            )
    return bool(values)


def _warnings(texts: list[str]) -> list[tuple[str, str]]:
    return [("Warning", '299 - "' + t.replace('"', '\\"') + '"') for t in texts]


def _now(cluster: Cluster) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cluster.now()))


def _record_update(
    query: dict[str, list[str]],
    kind: str,
    live: dict[str, Any] | None,
    new: dict[str, Any],
) -> None:
    """The `Update` entry of this request's field manager in NEW's managedFields
    (lab/managedfields.py): `fieldManager`, else the User-Agent's first word. Its fields are
    read from NEW as decoded with defaulting, before the registry's allocations
    (lab/defaulting.py)."""
    manager = managedfields.manager_name(_q(query, "fieldManager"), _request_header("User-Agent"))
    cluster = _ROUTER.local.cluster
    decoded = defaulting.defaulted(kind, new, str(cluster.profile.get("kubernetes_version") or ""))
    entries = managedfields.record_update(kind, live, decoded, manager, _now(cluster))
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        meta = new["metadata"] = {}
    meta["managedFields"] = entries


def _created(
    query: dict[str, list[str]],
    kind: str,
    body: dict[str, Any],
    make: Callable[[], Any],
    applied: bool = False,
) -> tuple[int, Any]:
    """POST (or a server-side apply that creates: `applied`, its Apply entry made already)."""
    warnings = fields.check(kind, body, _q(query, "fieldValidation"), decoded=not applied)
    if not applied:
        _record_update(query, kind, None, body)
    if _dry_run(query):
        return 201, Answer(_dry(make), headers=_warnings(warnings))
    return 201, Answer(make(), headers=_warnings(warnings))


def _updated(
    query: dict[str, list[str]],
    kind: str,
    body: dict[str, Any],
    make: Callable[[], Any],
    live: Callable[[], dict[str, Any]] | None = None,
    original: dict[str, Any] | None = None,
) -> tuple[int, Any]:
    """PUT (`live` reads the object it replaces), or a server-side apply's object merged into
    `original` (the live object). An unknown field the replaced object has already is the
    lab's own, not the caller's (lab/fields.py)."""
    current = original
    if live is not None:
        try:
            current = live()
        except ApiError:
            current = None  # make() answers the 404
    warnings = fields.check(
        kind, body, _q(query, "fieldValidation"), decoded=live is not None, live=current
    )
    if live is not None and current is not None:
        _record_update(query, kind, current, body)
    if _dry_run(query):
        return 200, Answer(_dry(make), headers=_warnings(warnings))
    return 200, Answer(make(), headers=_warnings(warnings))


def _patched(
    cluster: Cluster,
    query: dict[str, list[str]],
    raw: Any,
    kind: str,
    current: dict[str, Any],
    replace: Callable[[dict[str, Any]], Any],
) -> tuple[int, Any]:
    content_type = _request_header("Content-Type") or ""
    original = {k: v for k, v in current.items() if k != "status"}
    new = patch.apply_patch(kind, content_type, original, raw if isinstance(raw, bytes) else b"")
    warnings = fields.check(kind, new, _q(query, "fieldValidation"), live=original)
    _record_update(query, kind, original, new)
    if _dry_run(query):
        return 200, Answer(_dry(lambda: replace(new)), headers=_warnings(warnings))
    return 200, Answer(replace(new), headers=_warnings(warnings))


def _patched_or_applied(
    cluster: Cluster,
    query: dict[str, list[str]],
    raw: Any,
    kind: str,
    name: str,
    current: Callable[[], dict[str, Any]],
    replace: Callable[[dict[str, Any]], Any],
    create: Callable[[dict[str, Any]], Any],
) -> tuple[int, Any]:
    """PATCH: a patch of the live object, or a server-side apply, which creates the object
    when it is not there (201) and merges the applied configuration into it when it is."""
    content_type = _request_header("Content-Type") or ""
    if not patch.is_apply(content_type):
        return _patched(cluster, query, raw, kind, current(), replace)
    manager = _q(query, "fieldManager") or ""
    applied = patch.applied_config(raw if isinstance(raw, bytes) else b"", kind, name, manager)
    applied.setdefault("metadata", {})["name"] = name
    when = _now(cluster)
    try:
        live = current()
    except ApiError as exc:
        if exc.code != 404:
            raise
        made = patch.server_side_apply(kind, {}, applied, manager, when)
        return _created(query, kind, made, lambda: create(made), applied=True)
    original = {k: v for k, v in live.items() if k != "status"}
    force = (_q(query, "force") or "").lower() == "true"
    merged = patch.server_side_apply(kind, original, applied, manager, when, force=force)
    return _updated(query, kind, merged, lambda: replace(merged), original=original)


class _DryRunDone(Exception):
    def __init__(self, result: Any) -> None:
        self.result = result


def _dry(make: Callable[[], Any]) -> Any:
    """Run a change on a copy of the cluster's state: validated, answered, not kept."""
    cluster = _ROUTER.local.cluster
    saved = cluster.snapshot()
    try:
        return make()
    finally:
        cluster.restore(saved)


def _self_subject_access_review(cluster: Cluster, body: dict[str, Any]) -> dict[str, Any]:
    who = _ROUTER.local.who
    spec = body.get("spec") or {}
    allowed, reason = rbac.review(cluster, who, spec)
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": {"allowed": allowed, **({"reason": reason} if reason else {})},
    }


class _Text(str):
    """A plain-text answer (pod logs)."""


def _labels_ok(query: dict[str, list[str]], obj: dict[str, Any]) -> bool:
    return matches_query(_q(query, "labelSelector"), obj["metadata"].get("labels"))


def _checked_ns(
    cluster: Cluster, namespace: str, produce: Callable[[], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    # Listing in a missing namespace answers an empty list on a real server, not 404.
    return produce()


def _endpoints(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    if (namespace, name) not in cluster.objects["services"]:
        raise ApiError(
            404, f'endpoints "{name}" not found', details={"name": name, "kind": "endpoints"}
        )
    return cluster.render_endpoints((namespace, name))


def _body(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return raw


_ROUTER = _build_router()


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body leave in one write: separate small writes on a keep-alive connection
    # meet Nagle + delayed ACK and cost ~40 ms per request.
    wbufsize = -1
    server: _HTTPServer

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            # The TLS handshake runs here, in the request's thread: a client that connects and
            # stays silent holds up no one else.
            self.request.settimeout(HANDSHAKE_TIMEOUT_S)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # the stdlib signature
        if self.server.lab.verbose:
            super().log_message(format, *args)

    def do_GET(self) -> None:  # http.server's names
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def _send(self, code: int, payload: Any) -> None:
        extra: list[tuple[str, str]] = []
        media = None
        if isinstance(payload, Answer):
            extra, media, payload = payload.headers, payload.content_type, payload.payload
        if isinstance(payload, _Text) or isinstance(payload, str):
            data, ctype = str(payload).encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(payload).encode(), media or "application/json"
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for name, value in extra:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        _ROUTER.local.stopping = self.server.lab.stopping
        _ROUTER.local.headers = self.headers
        try:
            code, payload = self._dispatch(method, raw)
        except ApiError as err:
            code, payload = err.code, err.status()
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            # A body of the wrong shape (a string where an object belongs): a real server fails
            # to decode it; answer a Status instead of dropping the connection.
            refused = ApiError(
                400, f"the request body could not be decoded: {type(exc).__name__}: {exc}"
            )
            code, payload = refused.code, refused.status()
        if isinstance(payload, WatchStream):
            self._stream(payload)
        else:
            self._send(code, payload)

    def _stream(self, watch: WatchStream) -> None:
        """Newline-delimited JSON events in HTTP/1.1 chunks, one flush per event."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        try:
            for event in watch.lines():
                if watch.transform is not None and event.get("type") not in ("ERROR", "BOOKMARK"):
                    event = {**event, "object": watch.transform(event["object"])}
                data = json.dumps(event).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _dispatch(self, method: str, raw: bytes) -> tuple[int, Any]:
        lab = self.server.lab
        url = urlsplit(self.path)
        found = re.match(r"^/clusters/([^/]+)(/.*)?$", url.path)
        if not found:
            raise ApiError(404, "no such lab cluster; use /clusters/NAME")
        name, rest = unquote(found.group(1)), found.group(2) or "/"
        cluster = lab.clusters.get(name)
        if cluster is None:
            raise ApiError(404, f'lab cluster "{name}" not found')
        peer = (
            peer_identity(self.connection.getpeercert())
            if isinstance(self.connection, ssl.SSLSocket)
            else None
        )
        who = rbac.authenticate(cluster, self.headers.get("Authorization"), peer)
        faults = cluster.faults
        if faults["api_timeout"]:
            # Hang like an overloaded apiserver; stop() wakes us so shutdown stays quick.
            lab.stopping.wait(float(faults["api_timeout_s"]))
            raise ApiError(
                504,
                "Timeout: request did not complete within the allotted timeout",
                reason="Timeout",
            )
        with cluster.lock:
            if faults["api_error_rate"] and cluster.fault_rng.random() < faults["api_error_rate"]:
                if cluster.fault_rng.random() < 0.25:
                    raise ApiError(
                        503,
                        "the server is currently unable to handle the request",
                        reason="ServiceUnavailable",
                    )
                raise ApiError(500, "Internal error occurred: etcdserver: request timed out")
            query = parse_qs(url.query)
            rbac.authorize(cluster, who, method, rest, query)  # 403 as the RBAC authorizer words it
            if (
                rest.startswith("/apis/discovery.k8s.io/v1/")
                and not cluster.serves_endpointslices()
            ):
                raise ApiError(404, "the server could not find the requested resource")
            _ROUTER.local.who = who
            _ROUTER.local.cluster = cluster
            openapi.use(cluster)  # managedFields keyed by this cluster's release's schemas
            body: Any = None
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if method == "PATCH":
                body = raw  # decoded by its media type (lab/patch.py)
            elif raw and content_type == protobuf.PROTOBUF:
                body = protobuf.decode(raw)  # what client-go's typed clients send
            elif raw:
                try:
                    body = json.loads(raw)
                except ValueError as exc:
                    raise ApiError(400, f"the request body is not valid JSON: {exc}") from exc
            served = rbac.serve(cluster, method, rest, body)  # RBAC objects and TokenRequest
            if served is not None:
                return _rbac_answer(cluster, query, served)
            handler, args = _ROUTER.match(method, rest)
            cluster.advance()
            return handler(cluster, args, query, body)


HANDSHAKE_TIMEOUT_S = 10.0


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    lab: LabServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that refuses our certificate (wrong CA, expired, another host) or goes away
        # mid-handshake is its own business, not a server error worth a traceback.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ssl.SSLError, ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)


class LabServer:
    """Serves one emulated cluster per profile; `start()` runs it on a background thread.

    HTTPS by default, with the certificate authority of `lab.tls`: the one kept in
    `state_dir` (generated there at the first start), or `ca`, or one per process in memory.
    `tls=False` serves plain HTTP (`--insecure-http`: debugging, or tools that need it).
    `server_cert` replaces the serving certificate (tests: an expired one, another host's).
    """

    def __init__(
        self,
        profiles: list[dict[str, Any]],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        verbose: bool = False,
        tls: bool = True,
        state_dir: str | Path | None = None,
        ca: LabCA | None = None,
        server_cert: KeyPair | None = None,
        hosts: tuple[str, ...] = (),
    ) -> None:
        self.host = host
        self.port = port
        self.verbose = verbose
        self.tls = tls
        self.stopping = threading.Event()
        self.clusters: dict[str, Cluster] = {}
        for profile in profiles:
            checked = validate_profile(profile, f"<profile {profile.get('name', '?')}>")
            if checked["name"] in self.clusters:
                raise ValueError(f"<profile {checked['name']}>: field name is used twice")
            self.clusters[checked["name"]] = Cluster(checked)
            rbac.state_of(self.clusters[checked["name"]])  # a bad role file fails here, not later
        self.ca: LabCA | None = None
        self.server_cert: KeyPair | None = None
        if tls:
            if ca is None:
                ca = LabCA.load_or_create(state_dir) if state_dir else LabCA.ephemeral()
            self.ca = ca
            names = [*DEFAULT_HOSTS, *hosts]
            if host not in ("0.0.0.0", "::", ""):
                names.append(host)
            else:
                names.append(socket.gethostname())
            self.server_cert = server_cert or ca.server_certificate(tuple(names))
            for cluster in self.clusters.values():
                cluster.root_ca_pem = ca.cert_pem.decode()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> LabServer:
        self._httpd = _HTTPServer((self.host, self.port), _RequestHandler)
        self._httpd.lab = self
        if self.ca is not None and self.server_cert is not None:
            context = self.ca.server_context(self.server_cert)
            self._httpd.socket = context.wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self.port = self._httpd.server_address[1]
        # A short poll interval keeps stop() fast (shutdown waits for the next poll).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="lab-server", daemon=True
        )
        self._thread.start()
        return self

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def cluster_url(self, name: str) -> str:
        self.cluster(name)
        return f"{self.base_url}/clusters/{name}"

    def cluster(self, name: str) -> Cluster:
        try:
            return self.clusters[name]
        except KeyError:
            raise KeyError(f"no lab cluster named {name!r}") from None

    @property
    def ca_data(self) -> str | None:
        """The CA as kubeconfigs carry it (base64 of the PEM), None over plain HTTP."""
        if self.ca is None:
            return None
        return base64.b64encode(self.ca.cert_pem).decode()

    def client_context(self) -> ssl.SSLContext | None:
        """An SSL context that trusts the lab's CA (for urllib and friends), None over HTTP."""
        if self.ca is None:
            return None
        return ssl.create_default_context(cadata=self.ca.cert_pem.decode())

    def _cluster_entry(self, name: str, server: str | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {"server": server or self.cluster_url(name)}
        if self.ca_data:
            entry["certificate-authority-data"] = self.ca_data
        return {"name": name, "cluster": entry}

    def user_entry(self, name: str, auth: str = "token") -> dict[str, Any]:
        """The kubeconfig user of cluster NAME: its token, or (`client-certificate`) a
        kind-style admin certificate (CN kubernetes-admin, O system:masters)."""
        if auth == "token":
            return {"name": f"{name}-admin", "user": {"token": self.cluster(name).profile["token"]}}
        if auth != "client-certificate" or self.ca is None:
            raise ValueError(
                "client certificates need TLS; auth is 'token' or 'client-certificate'"
            )
        pair = self.ca.client_certificate()
        return {
            "name": f"kind-{name}",
            "user": {
                "client-certificate-data": base64.b64encode(pair.cert_pem).decode(),
                "client-key-data": base64.b64encode(pair.key_pem).decode(),
            },
        }

    def kubeconfig(
        self, name: str, *, auth: str = "token", server: str | None = None
    ) -> dict[str, Any]:
        """A kubeconfig for cluster NAME alone (current context NAME)."""
        user = self.user_entry(name, auth)
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [self._cluster_entry(name, server)],
            "users": [user],
            "contexts": [{"name": name, "context": {"cluster": name, "user": user["name"]}}],
            "current-context": name,
            "preferences": {},
        }

    def kubeconfig_all(self, public_url: str | None = None) -> dict[str, Any]:
        """One kubeconfig with a context per cluster, named after it, each with a token user."""
        names = list(self.clusters)
        base = public_url.rstrip("/") if public_url else None
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                self._cluster_entry(n, f"{base}/clusters/{n}" if base else None) for n in names
            ],
            "users": [self.user_entry(n) for n in names],
            "contexts": [
                {"name": n, "context": {"cluster": n, "user": f"{n}-admin"}} for n in names
            ],
            "current-context": names[0] if names else "",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path, public_url: str | None = None) -> Path:
        """Write `kubeconfig_all()` to PATH (mode 0600: it holds the tokens)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(self.kubeconfig_all(public_url), sort_keys=False)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(path, 0o600)
        return path

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LabServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


DEFAULT_STATE_DIR = Path(__file__).resolve().parent.parent / "var" / "lab"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.server", description="Serve emulated Kubernetes clusters."
    )
    parser.add_argument("--profiles", required=True, help="directory of profile YAML files")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument(
        "--state-dir",
        default=str(DEFAULT_STATE_DIR),
        help="where the lab keeps its CA (generated at the first start)",
    )
    parser.add_argument(
        "--kubeconfig", default="", help="write a kubeconfig with a context per cluster here"
    )
    parser.add_argument(
        "--insecure-http", action="store_true", help="serve plain HTTP instead of HTTPS"
    )
    args = parser.parse_args(argv)
    try:
        profiles = load_profiles(args.profiles)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        lab = LabServer(
            profiles,
            host=args.host,
            port=args.port,
            verbose=args.verbose,
            tls=not args.insecure_http,
            state_dir=args.state_dir,
        ).start()
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.kubeconfig:
        lab.write_kubeconfig(args.kubeconfig)
        print(f"kubeconfig {args.kubeconfig}", file=sys.stderr, flush=True)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    for name in lab.clusters:
        print(f"{name} {lab.cluster_url(name)}", flush=True)
    done.wait()
    lab.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
