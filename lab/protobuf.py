"""The few protobuf bodies clients send the lab (`kubectl auth can-i`'s SelfSubjectAccessReview).

client-go's typed clients send built-in kinds as `application/vnd.kubernetes.protobuf`: the
bytes `k8s\\x00`, then a `runtime.Unknown` message (typeMeta = 1, raw = 2) whose raw bytes are
the object in the generated.proto layout of k8s.io/api. They accept JSON back
(`Accept: application/vnd.kubernetes.protobuf,application/json`), so the lab answers JSON.
Only the messages the lab needs are decoded; anything else is a 415, as from a server that
does not speak protobuf for that kind.
"""

from __future__ import annotations

from typing import Any

from lab.errors import ApiError

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data):
            raise ValueError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> dict[int, list[Any]]:
    """Field number -> values (ints for varints, bytes for length-delimited)."""
    out: dict[int, list[Any]] = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            length, at = _varint(data, at)
            value, at = data[at : at + length], at + length
        elif wire == 1:
            value, at = data[at : at + 8], at + 8
        elif wire == 5:
            value, at = data[at : at + 4], at + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _text(found: dict[int, list[Any]], number: int) -> str:
    values = found.get(number)
    return values[-1].decode() if values else ""


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw object bytes) of a protobuf envelope."""
    if not body.startswith(MAGIC):
        raise ValueError("not a Kubernetes protobuf envelope")
    unknown = fields(body[len(MAGIC) :])
    type_meta = fields(unknown.get(1, [b""])[-1])
    return _text(type_meta, 1), _text(type_meta, 2), unknown.get(2, [b""])[-1]


def _object_meta(raw: bytes) -> dict[str, Any]:
    """metav1.ObjectMeta: name 1, generateName 2, namespace 3, labels 11, annotations 12."""
    found = fields(raw)
    meta: dict[str, Any] = {}
    for number, key in ((1, "name"), (2, "generateName"), (3, "namespace")):
        if _text(found, number):
            meta[key] = _text(found, number)
    for number, key in ((11, "labels"), (12, "annotations")):
        entries = [fields(e) for e in found.get(number, [])]
        if entries:
            meta[key] = {_text(e, 1): _text(e, 2) for e in entries}
    return meta


def decode(body: bytes) -> dict[str, Any]:
    """The JSON shape of a protobuf body of a kind the lab decodes, or 415."""
    try:
        _version, kind, raw = unwrap(body)
    except (ValueError, IndexError) as exc:
        raise ApiError(
            415,
            f"the lab cannot decode this protobuf body ({exc}); send JSON",
            reason="UnsupportedMediaType",
        ) from exc
    if kind == "SelfSubjectAccessReview":
        return self_subject_access_review(body)
    if kind == "Namespace":
        try:
            meta = _object_meta(fields(raw).get(1, [b""])[-1])
        except (ValueError, IndexError, UnicodeDecodeError) as exc:
            raise ApiError(
                415,
                f"the lab cannot decode this protobuf body ({exc}); send JSON",
                reason="UnsupportedMediaType",
            ) from exc
        return {"kind": "Namespace", "apiVersion": "v1", "metadata": meta}
    raise ApiError(
        415,
        f"the lab accepts protobuf for Namespace and SelfSubjectAccessReview only, not {kind}; "
        "send JSON",
        reason="UnsupportedMediaType",
    )


def self_subject_access_review(body: bytes) -> dict[str, Any]:
    """A SelfSubjectAccessReview body decoded into its JSON shape."""
    try:
        _version, kind, raw = unwrap(body)
        if kind != "SelfSubjectAccessReview":
            raise ValueError(kind)
        spec_fields = fields(fields(raw).get(2, [b""])[-1])
        spec: dict[str, Any] = {}
        if 1 in spec_fields:
            attrs = fields(spec_fields[1][-1])
            names = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
            spec["resourceAttributes"] = {
                n: _text(attrs, i + 1) for i, n in enumerate(names) if _text(attrs, i + 1)
            }
        if 2 in spec_fields:
            attrs = fields(spec_fields[2][-1])
            spec["nonResourceAttributes"] = {"path": _text(attrs, 1), "verb": _text(attrs, 2)}
        return {
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "spec": spec,
        }
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ApiError(
            415,
            f"the lab cannot decode this protobuf body ({exc}); send JSON",
            reason="UnsupportedMediaType",
        ) from exc
