"""`fieldValidation`: the fields a kind has, and the unknown ones a request sent.

kube-apiserver decodes a body against the kind's Go type: with `fieldValidation=Strict` an
unknown field is a 400 (`strict decoding error: unknown field "spec.foo"`), with `Warn` (the
default) a `Warning` header per field, with `Ignore` nothing. The lab reads the fields of each
kind from the models of the `kubernetes` client, which are generated from upstream's OpenAPI
document, so the field names here are upstream's.
"""

from __future__ import annotations

import re
from typing import Any

from kubernetes import client as k8s

from lab.errors import ApiError

MODELS = {
    "Pod": "V1Pod",
    "Service": "V1Service",
    "NetworkPolicy": "V1NetworkPolicy",
    "Namespace": "V1Namespace",
    "Deployment": "V1Deployment",
    "ServiceAccount": "V1ServiceAccount",
    "ClusterRole": "V1ClusterRole",
    "ClusterRoleBinding": "V1ClusterRoleBinding",
    "Role": "V1Role",
    "RoleBinding": "V1RoleBinding",
    "SelfSubjectAccessReview": "V1SelfSubjectAccessReview",
}
_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(str, (.+)\)$")


def _model_fields(model: str) -> dict[str, str] | None:
    cls = getattr(k8s, model, None)
    if cls is None or not hasattr(cls, "attribute_map"):
        return None
    return {cls.attribute_map[py]: cls.openapi_types[py] for py in cls.attribute_map}


def _unknown(value: Any, type_name: str, path: str, found: list[str]) -> None:
    listed = _LIST.match(type_name)
    if listed:
        if isinstance(value, list):
            for i, item in enumerate(value):
                _unknown(item, listed.group(1), f"{path}[{i}]", found)
        return
    mapped = _DICT.match(type_name)
    if mapped:
        if isinstance(value, dict):
            for key, item in value.items():
                _unknown(item, mapped.group(1), f"{path}[{key}]", found)
        return
    fields = _model_fields(type_name) if type_name.startswith("V") else None
    if fields is None or not isinstance(value, dict):
        return
    for key, item in value.items():
        if key.startswith("$"):
            continue  # patch directives
        where = f"{path}.{key}" if path else key
        if key not in fields:
            found.append(where)
        else:
            _unknown(item, fields[key], where, found)


def unknown_fields(kind: str, obj: dict[str, Any]) -> list[str]:
    """The paths of the fields of OBJ that KIND does not have (`spec.ports[0].protocl`)."""
    model = MODELS.get(kind)
    if model is None:
        return []
    found: list[str] = []
    _unknown(obj, model, "", found)
    return found


def check(kind: str, obj: dict[str, Any], directive: str | None) -> list[str]:
    """Apply `fieldValidation`; returns the Warning texts to send (raises 400 for Strict)."""
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
    if not unknown:
        return []
    if mode == "Strict":
        raise ApiError(
            400,
            "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown),
        )
    return [f'unknown field "{u}"' for u in unknown]
