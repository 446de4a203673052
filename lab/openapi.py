"""OpenAPI v3, as kube-apiserver serves it: `/openapi/v3` and one document per group version.

kubectl reads these documents for three things: `kubectl explain` (the schema of a kind,
field by field), whether the server validates fields itself (the `fieldValidation` parameter
of the kind's PATCH operation; then kubectl leaves validation to the server), and the patch
strategy of each field when `kubectl apply` computes a strategic merge patch.

The schemas are upstream's, of the release each cluster emulates (its profile's minor), for
every kind the lab serves, kept under lab/openapi/ with only the schemas those kinds reach
(written by lab/openapi_trim.py; see the NOTICE there: Apache-2.0, The Kubernetes Authors):
`v1.NN.json.gz` per release names the schemas of each group version by digest,
`schemas.json.xz` holds each distinct schema once. A minor the lab stores no documents for
gets the nearest older stored release (the oldest, below them all), and its documents' `info`
says which (`x-lab-schemas-release`, and a `description`). lab/managedfields.py reads the
schemas too: the list types and map keys decide how field ownership is keyed, as
structured-merge-diff does, with the release of the cluster the request is for (`use`). The
paths are generated from what the lab serves (lab/discovery.py), in upstream's layout, so they
never promise an operation the lab does not answer.
"""

from __future__ import annotations

import copy
import functools
import gzip
import hashlib
import io
import json
import lzma
import re
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab import discovery, profiles
from lab.errors import ApiError

if TYPE_CHECKING:
    from lab.cluster import Cluster

HERE = Path(__file__).resolve().parent / "openapi"
_VERB_METHODS = {
    "create": ("post", "post", "create"),
    "list": ("get", "list", "list"),
    "deletecollection": ("delete", "deletecollection", "deletecollection"),
}


STORE = "schemas.json.xz"
_INDEX = re.compile(r"^v(\d+)\.(\d+)\.json\.gz$")
# The release schemas are read with outside a request (a unit test, a tool): that of a
# profile that names no kubernetes_version.
_CURRENT: ContextVar[str | None] = ContextVar("lab_openapi_release", default=None)


def _dumps(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(schema: Any) -> str:
    """The key of a schema in the store: the start of its canonical JSON's SHA-256."""
    return hashlib.sha256(_dumps(schema)).hexdigest()[:16]


def encode_index(index: dict[str, Any]) -> bytes:
    """A release's index as stored: gzip with no name and no time in its header."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as out:
        out.write(_dumps(index))
    return buffer.getvalue()


def read_index(directory: Path, release: str) -> dict[str, Any]:
    """`{"release", "source", "documents": {group/version: {schema name: digest}}}`."""
    data: dict[str, Any] = json.loads(
        gzip.decompress((directory / f"{release}.json.gz").read_bytes())
    )
    return data


def read_store(directory: Path) -> dict[str, Any]:
    """Digest -> schema, for every schema of every stored release."""
    path = directory / STORE
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(lzma.decompress(path.read_bytes()))
    return data


def write_store(directory: Path, store: dict[str, Any]) -> None:
    (directory / STORE).write_bytes(lzma.compress(_dumps(store), preset=9 | lzma.PRESET_EXTREME))


def _minor(release: str) -> tuple[int, int]:
    major, minor = release.removeprefix("v").split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def stored_releases(directory: Path = HERE) -> list[str]:
    """The releases stored in DIRECTORY (`v1.18`, ..., `v1.37`), oldest first."""
    found = [f.name.removesuffix(".json.gz") for f in directory.iterdir() if _INDEX.match(f.name)]
    return sorted(found, key=_minor)


@functools.cache
def release_for(version: str) -> tuple[str, str]:
    """The stored release whose schemas a cluster of VERSION (`1.31.2`) serves, and a note
    when it is not VERSION's own minor: the nearest older stored release, else the oldest."""
    wanted = _minor(version)
    stored = stored_releases()
    older = [r for r in stored if _minor(r) <= wanted]
    chosen = older[-1] if older else stored[0]
    if _minor(chosen) == wanted:
        return chosen, ""
    which = "the nearest older release" if older else "the oldest release"
    return chosen, (
        f"The lab stores no OpenAPI documents for v{wanted[0]}.{wanted[1]}: these are the "
        f"schemas of {chosen}.0, {which} it stores (lab/openapi/NOTICE)."
    )


def release(cluster: Cluster) -> str:
    """The stored release whose schemas CLUSTER serves."""
    return release_for(str(cluster.profile["kubernetes_version"]))[0]


def use(cluster: Cluster) -> None:
    """Read CLUSTER's release's schemas in this context (lab/server.py, for each request)."""
    _CURRENT.set(release(cluster))


def current_release() -> str:
    return _CURRENT.get() or release_for(profiles.DEFAULT_KUBERNETES_VERSION)[0]


@functools.cache
def _store() -> dict[str, Any]:
    return read_store(HERE)


@functools.cache
def _index(release: str) -> dict[str, Any]:
    return read_index(HERE, release)


def schemas(release: str, group_version: str) -> dict[str, Any]:
    """The schemas of RELEASE's document of GROUP_VERSION, by name (shared: do not change)."""
    return _schemas(release, group_version)


@functools.cache
def _schemas(release: str, group_version: str) -> dict[str, Any]:
    store = _store()
    names = _index(release)["documents"].get(group_version) or {}
    return {name: store[key] for name, key in names.items()}


def _merge_view(node: Any) -> Any:
    """NODE as structured-merge-diff reads it (k8s.io/kube-openapi pkg/schemaconv): a list
    without `x-kubernetes-list-type` whose patch strategy is `merge` (or `merge,retainKeys`)
    is keyed by its patch merge key, a set without one. Releases before v1.30 mark most
    lists (a pod's containers, an object's ownerReferences) this way only."""
    if isinstance(node, list):
        return [_merge_view(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {key: _merge_view(value) for key, value in node.items()}
    strategy = out.get("x-kubernetes-patch-strategy")
    if (
        out.get("type") == "array"
        and "x-kubernetes-list-type" not in out
        and strategy in ("merge", "merge,retainKeys")
    ):
        key = out.get("x-kubernetes-patch-merge-key")
        if isinstance(key, str):
            out["x-kubernetes-list-type"] = "map"
            out["x-kubernetes-list-map-keys"] = [key]
        else:
            out["x-kubernetes-list-type"] = "set"
    return out


@functools.cache
def _kind_schema(kind: str, release: str) -> tuple[dict[str, Any], str] | None:
    for gv, resources in discovery.SERVED.items():
        if any(r.kind == kind for r in resources):
            found = _schemas(release, gv)
            group, _, version = gv.rpartition("/")
            for name, schema in found.items():
                for gvk in schema.get("x-kubernetes-group-version-kind") or []:
                    if (gvk.get("group"), gvk.get("version"), gvk.get("kind")) == (
                        group,
                        version,
                        kind,
                    ):
                        return _merge_view(found), name
    return None


def kind_schema(kind: str, release: str | None = None) -> tuple[dict[str, Any], str] | None:
    """The schemas of the document that describes KIND (a kind the lab serves) in RELEASE
    (default: that of the cluster the current request is for), as structured-merge-diff reads
    them (`_merge_view`), and the name of KIND's own schema among them; None for a kind
    without one."""
    return _kind_schema(kind, release or current_release())


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
def _document(group_version: str, git_version: str, release: str) -> dict[str, Any]:
    found = copy.deepcopy(_schemas(release, group_version))
    info: dict[str, Any] = {
        "title": "Kubernetes",
        "version": git_version,
        "x-lab-schemas-release": _index(release)["release"],
    }
    note = release_for(git_version.removeprefix("v"))[1]
    if note:
        info["description"] = note
    return {
        "openapi": "3.0.0",
        "info": info,
        "paths": _paths(group_version, found),
        "components": {"schemas": found},
    }


@functools.cache
def _hash(group_version: str, git_version: str, release: str) -> str:
    doc = _document(group_version, git_version, release)
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:128].upper()


def root(cluster: Cluster) -> dict[str, Any]:
    """`/openapi/v3`: where the document of each group version is."""
    git_version, schemas_of = cluster.version()["gitVersion"], release(cluster)
    paths = {}
    for gv in discovery.group_versions(cluster):
        name = _doc_name(gv)
        paths[name] = {
            "serverRelativeURL": f"/openapi/v3/{name}?hash={_hash(gv, git_version, schemas_of)}"
        }
    return {"paths": paths}


def document(cluster: Cluster, name: str) -> dict[str, Any]:
    """`/openapi/v3/api/v1`, `/openapi/v3/apis/GROUP/VERSION`."""
    gv = "v1" if name == "api/v1" else name.removeprefix("apis/")
    if gv not in discovery.group_versions(cluster):
        raise ApiError(404, "the server could not find the requested resource")
    return _document(gv, cluster.version()["gitVersion"], release(cluster))
