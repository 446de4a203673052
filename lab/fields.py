"""`fieldValidation`: the fields a kind has in the cluster's release, and the unknown ones a
request sent.

kube-apiserver decodes a body against the kind's Go type of its own release: with
`fieldValidation=Strict` an unknown field is a 400 (`strict decoding error: unknown field
"spec.foo"`), with `Warn` (the default) a `Warning` header per field, with `Ignore` nothing.
The lab reads the fields of each kind from the OpenAPI schemas of the release the request's
cluster emulates (lab/openapi.py, the ones `kubectl explain` reads), so a v1.29 cluster does
not know `spec.trafficDistribution` of a Service and a v1.30 one does.

What is checked is what upstream decodes strictly (staging/src/k8s.io/apiserver/pkg/endpoints/
handlers: create.go and update.go decode the request body; patch.go decodes the patched object,
the live object converted from its Go type and the patch applied to it). Upstream's live
object can hold no field its release lacks. The lab keeps some fields on every release (a
Service's `clusterIPs`, `ipFamilies`, `ipFamilyPolicy`, `internalTrafficPolicy`, a pod's
`status.hostIPs`) but shows an object as its release would (`drop_unknown`, applied as the
store renders), so what a client reads and sends back is the release's own; and an unknown
field the live object already has is still not blamed on the caller (`check`'s `live`).
"""

from __future__ import annotations

import re
from typing import Any

from lab import discovery, openapi
from lab.errors import ApiError

# `spec.ports[0].foo`, `metadata.x[key].y`: the same field whatever the list index or map key
_SUBSCRIPT = re.compile(r"\[[^\]]*\]")


def _resolve(node: Any, schemas: dict[str, Any]) -> Any:
    """NODE with its `$ref` (or a lone `allOf: [{$ref}]`, as v3 wraps a described ref)
    followed."""
    for _ in range(64):
        if not isinstance(node, dict):
            return None
        ref = node.get("$ref")
        if ref is None:
            all_of = node.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
                ref = all_of[0].get("$ref")
        if not isinstance(ref, str):
            return node
        node = schemas.get(ref.rpartition("/")[2])
    return None


def _unknown(value: Any, node: Any, schemas: dict[str, Any], path: str, found: list[str]) -> None:
    node = _resolve(node, schemas)
    if not isinstance(node, dict) or node.get("x-kubernetes-preserve-unknown-fields"):
        return
    items = node.get("items")
    if items is not None:
        if isinstance(value, list):
            for i, item in enumerate(value):
                _unknown(item, items, schemas, f"{path}[{i}]", found)
        return
    properties = node.get("properties")
    if isinstance(properties, dict):
        if not isinstance(value, dict):
            return
        for key, item in value.items():
            if key.startswith("$"):
                continue  # patch directives
            where = f"{path}.{key}" if path else key
            if key not in properties:
                found.append(where)
            else:
                _unknown(item, properties[key], schemas, where, found)
        return
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and isinstance(value, dict):
        for key, item in value.items():
            _unknown(item, extra, schemas, f"{path}[{key}]", found)


def unknown_fields(kind: str, obj: dict[str, Any], release: str | None = None) -> list[str]:
    """The paths of the fields of OBJ that KIND does not have (`spec.ports[0].protocl`) in
    RELEASE (default: that of the cluster the current request is for). A kind the release
    has no schema for (EndpointSlice v1 before v1.21) is not checked."""
    found = openapi.kind_schema(kind, release)
    if found is None:
        return []
    schemas, name = found
    unknown: list[str] = []
    _unknown(obj, schemas.get(name), schemas, "", unknown)
    return unknown


def _prune(value: Any, node: Any, schemas: dict[str, Any]) -> None:
    node = _resolve(node, schemas)
    if not isinstance(node, dict) or node.get("x-kubernetes-preserve-unknown-fields"):
        return
    items = node.get("items")
    if items is not None:
        for item in value if isinstance(value, list) else []:
            _prune(item, items, schemas)
        return
    properties = node.get("properties")
    if isinstance(properties, dict):
        if isinstance(value, dict):
            for key in [k for k in value if k not in properties]:
                del value[key]
            for key, item in value.items():
                _prune(item, properties[key], schemas)
        return
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and isinstance(value, dict):
        for item in value.values():
            _prune(item, extra, schemas)


def drop_unknown(kind: str, obj: dict[str, Any], release: str) -> dict[str, Any]:
    """OBJ (in place) without the fields KIND lacks in RELEASE: what the lab writes on every
    release (a Service's `clusterIPs` and `ipFamilies`, added in v1.20; `internalTrafficPolicy`,
    v1.22; a pod's `status.hostIPs`, v1.28) is not shown by an older cluster, whose Go types
    have no such field."""
    found = openapi.kind_schema(kind, release)
    if found is not None:
        schemas, name = found
        _prune(obj, schemas.get(name), schemas)
    return obj


def _served_version(kind: str) -> str:
    for gv, resources in discovery.SERVED.items():
        if any(r.kind == kind for r in resources):
            return gv
    return "v1"


def check(
    kind: str,
    obj: dict[str, Any],
    directive: str | None,
    decoded: bool = False,
    live: dict[str, Any] | None = None,
) -> list[str]:
    """Apply `fieldValidation`; returns the Warning texts to send (raises 400 for Strict).

    `decoded`: OBJ is a request's body (create, PUT), which upstream decodes whole; its
    refusal then names the kind and version as the handlers' transformDecodeError does. A
    patched object's refusal is the bare strict decoding error. `live`: the object OBJ
    replaces or was patched from; an unknown field it has too (at the same path, whatever the
    list index) is one the lab wrote, which upstream's live object would not have had, and is
    not blamed on the caller."""
    mode = (directive or "Warn").strip()
    if mode not in ("Strict", "Warn", "Ignore"):
        raise ApiError(
            400,
            f'fieldValidation: Unsupported value: "{mode}": supported values: '
            '"Ignore", "Strict", "Warn"',
        )
    if mode == "Ignore":
        return []
    unknown = unknown_fields(kind, obj)
    if unknown and live:
        had = {_SUBSCRIPT.sub("[]", u) for u in unknown_fields(kind, live)}
        unknown = [u for u in unknown if _SUBSCRIPT.sub("[]", u) not in had]
    if not unknown:
        return []
    if mode == "Strict":
        message = "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown)
        if decoded:
            # the decoder fills in what the body leaves out from the request's own version
            version = str(obj.get("apiVersion") or _served_version(kind)).rpartition("/")[2]
            message = f'{kind} in version "{version}" cannot be handled as a {kind}: {message}'
        raise ApiError(400, message, reason="BadRequest")
    return [f'unknown field "{u}"' for u in unknown]
