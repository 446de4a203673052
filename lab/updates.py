"""PUT and PATCH: an object replaced by a new version, validated as an update is upstream.

The new version goes through the same validation and allocation as a create (the old one set
aside meanwhile, so its own cluster IP and node ports are free for it), then keeps what an
update keeps: uid, creationTimestamp, the allocated cluster IP and node ports the new version
left out, and for a pod everything but what a pod update may change.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from lab import deployments
from lab.cluster import GROUP_OF, KIND_OF, Cluster
from lab.errors import ApiError, invalid, not_found
from lab.nodes import edit_node

# validation.ValidatePodUpdate's message (1.31) when anything else of a pod's spec changes.
POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it "
    "to be set to 1 if it was previously negative)"
)


def _conflict(resource: str, group: str, name: str) -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        reason="Conflict",
        details={"name": name, "group": group, "kind": resource}
        if group
        else {"name": name, "kind": resource},
    )


def _check_meta(
    cluster: Cluster,
    kind: str,
    namespace: str | None,
    name: str,
    new: dict[str, Any],
    old: dict[str, Any],
) -> None:
    if not isinstance(new, dict):
        raise ApiError(400, "the request body must be a JSON object")
    meta = new.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise ApiError(
            400,
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})",
        )
    if namespace is not None and meta.get("namespace") and meta["namespace"] != namespace:
        raise ApiError(
            400,
            "the namespace of the provided object does not match the namespace sent on the request",
        )
    rv = meta.get("resourceVersion")
    if rv and rv != old["metadata"].get("resourceVersion"):
        raise _conflict(kind, GROUP_OF.get(kind, ""), name)


def _carry_service_allocations(old: dict[str, Any], spec: dict[str, Any]) -> None:
    """Service PrepareForUpdate: what the new version leaves out keeps its allocated value."""
    old_spec = old["spec"]
    if (
        not spec.get("clusterIP")
        and old_spec.get("clusterIP")
        and spec.get("type") != "ExternalName"
    ):
        spec["clusterIP"] = old_spec["clusterIP"]
        spec["clusterIPs"] = list(old_spec.get("clusterIPs") or [old_spec["clusterIP"]])
    old_ports = {(p.get("port"), p.get("protocol", "TCP")): p for p in old_spec.get("ports") or []}
    for port in spec.get("ports") or []:
        before = old_ports.get((port.get("port"), port.get("protocol", "TCP")))
        if before and before.get("nodePort") and not port.get("nodePort"):
            if spec.get("type") in ("NodePort", "LoadBalancer"):
                port["nodePort"] = before["nodePort"]


def _immutable_service(name: str, old: dict[str, Any], spec: dict[str, Any]) -> None:
    before, after = old["spec"].get("clusterIP"), spec.get("clusterIP")
    if (
        before
        and after
        and before != after
        and "ExternalName"
        not in (
            old["spec"].get("type"),
            spec.get("type"),
        )
    ):
        raise invalid(
            "Service",
            name,
            [
                (
                    "spec.clusterIPs[0]",
                    "FieldValueInvalid",
                    f'Invalid value: "{after}": may not change once set',
                )
            ],
        )


def replace(
    cluster: Cluster, kind: str, namespace: str, name: str, new: dict[str, Any]
) -> dict[str, Any]:
    """Replace KIND NAMESPACE/NAME by NEW (a PUT body, or the result of a PATCH)."""
    key = (namespace, name)
    store = cluster.objects[kind]
    if key not in store or key in cluster.ghost_pods:
        raise not_found(kind, name, GROUP_OF[kind])
    old = store[key]
    _check_meta(cluster, kind, namespace, name, new, old)
    meta = copy.deepcopy(new.get("metadata") or {})
    spec = copy.deepcopy(new.get("spec") or {})
    if kind == "pods":
        return _replace_pod(cluster, key, old, meta, spec)
    if kind == "services":
        _carry_service_allocations(old, spec)
        _immutable_service(name, old, spec)
    body = {"metadata": {**meta, "name": name, "namespace": namespace}, "spec": spec}
    saved = store.pop(key)
    saved_rt = cluster.svc_rt.pop(key, None)
    try:
        if kind == "services":
            obj = cluster.build_service(namespace, name, body, spec)
        elif kind == "networkpolicies":
            obj = cluster.build_network_policy(namespace, name, body, spec)
        else:
            obj = deployments.create(cluster, namespace, name, body, spec)
    except BaseException:
        store[key] = saved
        if saved_rt is not None:
            cluster.svc_rt[key] = saved_rt
        raise
    if saved_rt is not None and kind == "services":
        if obj["spec"].get("type") == "LoadBalancer" and saved_rt.lb_ip is not None:
            cluster.svc_rt[key] = saved_rt
    for field in ("uid", "creationTimestamp"):
        obj["metadata"][field] = saved["metadata"][field]
    changed = json.dumps(saved["spec"], sort_keys=True) != json.dumps(obj["spec"], sort_keys=True)
    generation = int(saved["metadata"].get("generation") or 1)
    if kind != "services" or "generation" in saved["metadata"]:
        obj["metadata"]["generation"] = generation + 1 if changed else generation
    if kind == "deployments":
        revision = int(
            (saved["metadata"].get("annotations") or {}).get(
                "deployment.kubernetes.io/revision", "1"
            )
        )
        template_changed = saved["spec"].get("template") != obj["spec"].get("template")
        obj["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = str(
            revision + 1 if template_changed else revision
        )
    rendered = cluster.render(kind, key)
    cluster.emit(kind, "MODIFIED", copy.deepcopy(rendered))
    if kind == "deployments":
        deployments.reconcile(cluster, key)
        rendered = cluster.render(kind, key)
    _ = KIND_OF
    return rendered


def _replace_pod(
    cluster: Cluster,
    key: tuple[str, str],
    old: dict[str, Any],
    meta: dict[str, Any],
    spec: dict[str, Any],
) -> dict[str, Any]:
    def without_images(s: dict[str, Any]) -> str:
        s = copy.deepcopy(s)
        for field in ("containers", "initContainers"):
            for c in s.get(field) or []:
                c.pop("image", None)
        for field in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
            s.pop(field, None)
        return json.dumps(s, sort_keys=True)

    merged_spec = copy.deepcopy(old["spec"])
    # Fields the server defaulted and the new version left out keep their value.
    for k, v in spec.items():
        merged_spec[k] = v
    if without_images(merged_spec) != without_images(old["spec"]):
        raise invalid("Pod", key[1], [("spec", "FieldValueForbidden", POD_UPDATE_FORBIDDEN)])
    old["spec"] = merged_spec
    for field in ("labels", "annotations", "managedFields"):
        if field in meta:
            old["metadata"][field] = meta[field]
        else:
            old["metadata"].pop(field, None)
    old["metadata"]["resourceVersion"] = cluster.next_rv()
    rendered = cluster.render("pods", key)
    cluster.emit("pods", "MODIFIED", copy.deepcopy(rendered))
    return rendered


def replace_namespace(cluster: Cluster, name: str, new: dict[str, Any]) -> dict[str, Any]:
    if name not in cluster.namespaces:
        raise not_found("namespaces", name)
    old = cluster.namespaces[name]
    _check_meta(cluster, "namespaces", None, name, new, old)
    meta = new.get("metadata") or {}
    for field in ("labels", "annotations"):
        if field in meta:
            old["metadata"][field] = dict(meta[field] or {})
        else:
            old["metadata"].pop(field, None)
    if "managedFields" in meta:
        old["metadata"]["managedFields"] = list(meta["managedFields"] or [])
    else:
        old["metadata"].pop("managedFields", None)
    old["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    old["metadata"]["resourceVersion"] = cluster.next_rv()
    rendered = cluster.render_namespace(old)
    cluster.emit("namespaces", "MODIFIED", copy.deepcopy(rendered))
    return rendered


def replace_node(cluster: Cluster, name: str, new: dict[str, Any]) -> dict[str, Any]:
    """PUT (or a patch's result) on a Node: what a client may change (lab/nodes.edit_node)."""
    node = cluster.node_by_name(name)
    if node is None:
        raise not_found("nodes", name)
    _check_meta(cluster, "nodes", None, name, new, cluster.render_node(node))
    edit_node(cluster.node_set, node, new)
    cluster.next_rv()
    cluster.emit("nodes", "MODIFIED", cluster.render_node(node))
    if node.takes_pods:
        cluster.schedule_waiting()
    return cluster.render_node(node)
