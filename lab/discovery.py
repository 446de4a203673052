"""API discovery as kube-apiserver serves it: `/api`, `/apis`, resource lists, aggregated.

Clients (kubectl, client-go's RESTMapper, `kubernetes.dynamic.DynamicClient`, lightkube)
find what a server serves here before anything else: `GET /api` and `/apis` (or, when the
Accept header asks for `apidiscovery.k8s.io/v2`, the aggregated documents of every group and
version in one answer), then `GET /api/v1` and `/apis/GROUP/VERSION` for the resources of one
group version. Names, short names, categories and verbs are upstream's for each resource.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.cluster import Cluster

RW = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
RO = ["get", "list", "watch"]
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


@dataclass(frozen=True)
class Resource:
    name: str
    singular: str
    kind: str
    namespaced: bool
    verbs: list[str]
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    # subresource -> (kind, verbs, group/version of the kind when not the resource's)
    subresources: dict[str, tuple[str, list[str], str]] = field(default_factory=dict)


# group/version -> resources, as the lab serves them (in upstream's order of names).
SERVED: dict[str, list[Resource]] = {
    "v1": [
        Resource("configmaps", "configmap", "ConfigMap", True, RO, ["cm"]),
        Resource("endpoints", "endpoints", "Endpoints", True, RO, ["ep"], subresources={}),
        Resource("events", "event", "Event", True, RO, ["ev"]),
        Resource(
            "namespaces",
            "namespace",
            "Namespace",
            False,
            ["create", "delete", "get", "list", "patch", "update", "watch"],
            ["ns"],
        ),
        Resource(
            "nodes", "node", "Node", False, ["get", "list", "patch", "update", "watch"], ["no"]
        ),
        Resource(
            "pods",
            "pod",
            "Pod",
            True,
            RW,
            ["po"],
            ["all"],
            {"log": ("Pod", ["get"], ""), "status": ("Pod", ["get"], "")},
        ),
        Resource(
            "serviceaccounts",
            "serviceaccount",
            "ServiceAccount",
            True,
            ["create", "delete", "get", "list", "update"],
            ["sa"],
            subresources={"token": ("TokenRequest", ["create"], "authentication.k8s.io/v1")},
        ),
        Resource(
            "services",
            "service",
            "Service",
            True,
            ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            ["svc"],
            ["all"],
            {"status": ("Service", ["get"], "")},
        ),
    ],
    "apps/v1": [
        Resource("daemonsets", "daemonset", "DaemonSet", True, RO, ["ds"], ["all"]),
        Resource(
            "deployments",
            "deployment",
            "Deployment",
            True,
            RW,
            ["deploy"],
            ["all"],
            {
                "scale": ("Scale", ["get", "patch", "update"], "autoscaling/v1"),
                "status": ("Deployment", ["get"], ""),
            },
        ),
        Resource("replicasets", "replicaset", "ReplicaSet", True, RO, ["rs"], ["all"]),
    ],
    "authorization.k8s.io/v1": [
        Resource(
            "selfsubjectaccessreviews",
            "selfsubjectaccessreview",
            "SelfSubjectAccessReview",
            False,
            ["create"],
        ),
    ],
    "discovery.k8s.io/v1": [
        Resource("endpointslices", "endpointslice", "EndpointSlice", True, RO),
    ],
    "networking.k8s.io/v1": [
        Resource("networkpolicies", "networkpolicy", "NetworkPolicy", True, RW, ["netpol"]),
    ],
    "rbac.authorization.k8s.io/v1": [
        Resource(
            "clusterrolebindings",
            "clusterrolebinding",
            "ClusterRoleBinding",
            False,
            ["create", "delete", "get", "list", "update"],
        ),
        Resource(
            "clusterroles",
            "clusterrole",
            "ClusterRole",
            False,
            ["create", "delete", "get", "list", "update"],
        ),
        Resource(
            "rolebindings",
            "rolebinding",
            "RoleBinding",
            True,
            ["create", "delete", "get", "list", "update"],
        ),
        Resource("roles", "role", "Role", True, ["create", "delete", "get", "list", "update"]),
    ],
}


def group_versions(cluster: Cluster) -> list[str]:
    """The group versions this cluster serves (EndpointSlices from 1.21 on, as upstream)."""
    return [gv for gv in SERVED if gv != "discovery.k8s.io/v1" or cluster.serves_endpointslices()]


def find(group: str, resource: str) -> Resource | None:
    """The served resource of GROUP named RESOURCE (its plural)."""
    for gv, resources in SERVED.items():
        g = gv.rpartition("/")[0]
        if g == group:
            for r in resources:
                if r.name == resource:
                    return r
    return None


def api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "172.18.0.2:6443"}
        ],
    }


def _group(name: str) -> dict[str, Any]:
    version = {"groupVersion": f"{name}/v1", "version": "v1"}
    return {"name": name, "versions": [version], "preferredVersion": version}


def api_group_list(cluster: Cluster) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(gv.split("/")[0]) for gv in group_versions(cluster) if "/" in gv],
    }


def api_group(cluster: Cluster, name: str) -> dict[str, Any] | None:
    if f"{name}/v1" not in group_versions(cluster):
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name)}


def resource_list(cluster: Cluster, group_version: str) -> dict[str, Any] | None:
    """`APIResourceList` of one group version, or None when it is not served."""
    if group_version not in group_versions(cluster):
        return None
    out: list[dict[str, Any]] = []
    for r in SERVED[group_version]:
        entry: dict[str, Any] = {
            "name": r.name,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        out.append(entry)
        for sub, (kind, verbs, gv) in r.subresources.items():
            sub_entry: dict[str, Any] = {
                "name": f"{r.name}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": list(verbs),
            }
            if gv:
                group, _, version = gv.rpartition("/")
                sub_entry["group"], sub_entry["version"] = group, version
            out.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": out,
    }


def _discovery_resource(r: Resource, group: str, version: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": r.name,
        "responseKind": {"group": group, "version": version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    subs = []
    for sub, (kind, verbs, gv) in r.subresources.items():
        g, v = (gv.rpartition("/")[0], gv.rpartition("/")[2]) if gv else (group, version)
        subs.append(
            {
                "subresource": sub,
                "responseKind": {"group": g, "version": v, "kind": kind},
                "verbs": verbs,
            }
        )
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated(
    cluster: Cluster, core: bool, api_version: str = "apidiscovery.k8s.io/v2"
) -> dict[str, Any]:
    """`APIGroupDiscoveryList`: `/api` (core) or `/apis` (every group) in one document."""
    items = []
    for gv in group_versions(cluster):
        group, _, version = gv.rpartition("/")
        if core != (group == ""):
            continue
        metadata: dict[str, Any] = {"creationTimestamp": None}
        if group:
            metadata["name"] = group
        items.append(
            {
                "metadata": metadata,
                "versions": [
                    {
                        "version": version,
                        "resources": [_discovery_resource(r, group, version) for r in SERVED[gv]],
                        "freshness": "Current",
                    }
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": api_version,
        "metadata": {},
        "items": items,
    }


def wants_aggregated(accept: str | None) -> str | None:
    """The aggregated discovery media type the Accept header asks for first, if any."""
    for part in (accept or "").split(","):
        params = {
            k.strip(): v.strip() for k, _, v in (p.partition("=") for p in part.split(";")[1:])
        }
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == "APIGroupDiscoveryList":
            if params.get("v") == "v2":
                return AGGREGATED_V2
            if params.get("v") == "v2beta1":
                return AGGREGATED_V2BETA1
    return None
