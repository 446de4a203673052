"""OpenAPI v3, as kube-apiserver serves it: `/openapi/v3` and one document per group version.

kubectl reads these documents for three things: `kubectl explain` (the schema of a kind,
field by field), whether the server validates fields itself (the `fieldValidation` parameter
of the kind's PATCH operation; then kubectl leaves validation to the server), and the patch
strategy of each field when `kubectl apply` computes a strategic merge patch.

The schemas are trimmed copies of upstream's api/openapi-spec/v3 documents, kept under
lab/openapi/ (see its NOTICE: Apache-2.0, The Kubernetes Authors); a kind without a schema
there is still listed in the paths, and kubectl then falls back to its built-in types for
patches. The paths are generated from what the lab serves (lab/discovery.py), in upstream's
layout, so they never promise an operation the lab does not answer.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab import discovery
from lab.errors import ApiError

if TYPE_CHECKING:
    from lab.cluster import Cluster

HERE = Path(__file__).resolve().parent / "openapi"
_VERB_METHODS = {
    "create": ("post", "post", "create"),
    "list": ("get", "list", "list"),
    "deletecollection": ("delete", "deletecollection", "deletecollection"),
}


@functools.cache
def _schemas(doc: str) -> dict[str, Any]:
    path = HERE / (doc.replace("/", "__") + ".json")
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data.get("components", {}).get("schemas", {})


def _doc_name(group_version: str) -> str:
    return "api/v1" if group_version == "v1" else f"apis/{group_version}"


def _param(name: str, description: str = "", kind: str = "string") -> dict[str, Any]:
    out: dict[str, Any] = {
        "in": "query",
        "name": name,
        "schema": {"type": kind, "uniqueItems": True},
    }
    if description:
        out["description"] = description
    return out


_WRITE_PARAMS = [
    _param("dryRun", "When present, indicates that modifications should not be persisted."),
    _param("fieldManager", "fieldManager is a name associated with the actor or entity."),
    _param(
        "fieldValidation",
        "fieldValidation instructs the server on how to handle objects in the request "
        "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, "
        "Warn (the default) and Strict.",
    ),
]


def _schema_ref(schemas: dict[str, Any], kind: str) -> dict[str, Any]:
    for name, schema in schemas.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if gvk.get("kind") == kind:
                return {"$ref": f"#/components/schemas/{name}"}
    return {"type": "object"}


def _operation(
    action: str, verb_id: str, kind: str, group: str, version: str, schema: dict[str, Any]
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "description": f"{action} {kind}",
        "operationId": f"{verb_id}{kind}",
        "responses": {
            "200": {"content": {"application/json": {"schema": schema}}, "description": "OK"},
            "401": {"description": "Unauthorized"},
        },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": group, "kind": kind, "version": version},
    }
    if action in ("post", "put", "patch"):
        op["parameters"] = copy.deepcopy(_WRITE_PARAMS)
    if action == "patch":
        op["requestBody"] = {
            "content": {
                media: {"schema": {"type": "object"}}
                for media in (
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                )
            },
            "required": True,
        }
    elif action in ("post", "put"):
        op["requestBody"] = {"content": {"*/*": {"schema": schema}}, "required": True}
    if action == "list":
        op["parameters"] = [
            _param("labelSelector"),
            _param("fieldSelector"),
            _param("watch", kind="boolean"),
            _param("allowWatchBookmarks", kind="boolean"),
            _param("resourceVersion"),
            _param("timeoutSeconds", kind="integer"),
        ]
    return op


def _paths(group_version: str, schemas: dict[str, Any]) -> dict[str, Any]:
    group, _, version = group_version.rpartition("/")
    prefix = "/api/v1" if not group else f"/apis/{group_version}"
    paths: dict[str, Any] = {}
    for r in discovery.SERVED[group_version]:
        ref = _schema_ref(schemas, r.kind)
        collection = (
            f"{prefix}/namespaces/{{namespace}}/{r.name}" if r.namespaced else f"{prefix}/{r.name}"
        )
        item = f"{collection}/{{name}}"
        ops: dict[str, Any] = {}
        one: dict[str, Any] = {}
        if "list" in r.verbs:
            ops["get"] = _operation("list", "list", r.kind, group, version, {"type": "object"})
        if "create" in r.verbs:
            ops["post"] = _operation("post", "create", r.kind, group, version, ref)
        for verb, method in (("get", "get"), ("update", "put"), ("patch", "patch")):
            if verb in r.verbs and not (r.kind.startswith("SelfSubject")):
                action = {"update": "put"}.get(verb, verb)
                one[method] = _operation(action, verb, r.kind, group, version, ref)
        if "delete" in r.verbs:
            one["delete"] = _operation("delete", "delete", r.kind, group, version, ref)
        if ops:
            paths[collection] = ops
        if one:
            paths[item] = one
        if r.namespaced and "list" in r.verbs:
            paths[f"{prefix}/{r.name}"] = {
                "get": _operation("list", "list", r.kind, group, version, {"type": "object"})
            }
    return paths


@functools.cache
def _document(group_version: str, git_version: str) -> dict[str, Any]:
    doc = _doc_name(group_version)
    schemas = copy.deepcopy(_schemas(doc))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": git_version},
        "paths": _paths(group_version, schemas),
        "components": {"schemas": schemas},
    }


def _hash(doc: dict[str, Any]) -> str:
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:128].upper()


def root(cluster: Cluster) -> dict[str, Any]:
    """`/openapi/v3`: where the document of each group version is."""
    git_version = cluster.version()["gitVersion"]
    paths = {}
    for gv in discovery.group_versions(cluster):
        name = _doc_name(gv)
        paths[name] = {
            "serverRelativeURL": f"/openapi/v3/{name}?hash={_hash(_document(gv, git_version))}"
        }
    return {"paths": paths}


def document(cluster: Cluster, name: str) -> dict[str, Any]:
    """`/openapi/v3/api/v1`, `/openapi/v3/apis/GROUP/VERSION`."""
    gv = "v1" if name == "api/v1" else name.removeprefix("apis/")
    if gv not in discovery.group_versions(cluster):
        raise ApiError(404, "the server could not find the requested resource")
    return _document(gv, cluster.version()["gitVersion"])
