"""Protobuf request bodies, decoded into the JSON shape the lab works on.

client-go's typed clients (kubectl 1.32 on: `create deployment`, `create service`, `create
serviceaccount`, `create role`, `create token`, `auth can-i`, ...) send built-in kinds as
`application/vnd.kubernetes.protobuf`: the bytes `k8s\\x00`, then a `runtime.Unknown` message
(typeMeta = 1 with apiVersion = 1 and kind = 2, raw = 2) whose raw bytes are the object in the
generated.proto layout of k8s.io/api. They accept JSON back
(`Accept: application/vnd.kubernetes.protobuf,application/json`), so the lab answers JSON.

The decoder is generic: `protobuf_messages.txt` (trimmed from upstream's generated.proto files,
see its NOTICE) gives each message's fields (number -> JSON name, type, repeated, map, nested
message, embedded inline). The result is what the same object's JSON would be, so it takes the
JSON body's path (validation, defaulting, managedFields). As Go's encoding: a message field is
always on the wire (an empty one is `{}`, as in JSON), a scalar zero is dropped unless the Go
field is a pointer. Unknown field numbers are skipped (proto semantics); a body that does not
parse is a 400 as upstream's `transformDecodeError` words it; a kind the table does not hold is
a 415.
"""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from lab.errors import ApiError

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"
TABLE = Path(__file__).with_name("protobuf_messages.txt")

SCALARS = {"string", "int32", "int64", "bool", "bytes", "double"}
# Message types whose JSON form is not an object of their fields.
SPECIAL = {"Time", "MicroTime", "Duration", "IntOrString", "Quantity", "RawExtension", "FieldsV1"}


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # a scalar, a message name, or "map"
    repeated: bool = False
    pointer: bool = False  # a Go pointer: a zero value on the wire is kept
    inline: bool = False  # embedded: its fields are the parent's in JSON
    value: str = ""  # the value type of a map (keys are strings)


def _field(spec: str) -> tuple[int, Field]:
    name, _, rest = spec.partition("=")
    number, _, kind = rest.partition(":")
    flags = ""
    while kind and kind[-1] in "*?^":
        flags, kind = kind[-1] + flags, kind[:-1]
    value = ""
    if kind.startswith("map:"):
        kind, value = "map", kind[4:]
    return int(number), Field(name, kind, "*" in flags, "?" in flags, "^" in flags, value)


@cache
def messages() -> dict[str, dict[int, Field]]:
    """Message name -> field number -> Field, read from protobuf_messages.txt."""
    out: dict[str, dict[int, Field]] = {}
    for line in TABLE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, *specs = line.split()
        out[name] = dict(_field(spec) for spec in specs)
    return out


class MalformedError(ValueError):
    """The bytes are not a protobuf message of the expected layout."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data):
            raise MalformedError("unexpected EOF")
        if shift >= 64:
            raise MalformedError("proto: integer overflow")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) in wire order: ints for varints, bytes otherwise."""
    out: list[tuple[int, int, Any]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if number <= 0:
            raise MalformedError(f"proto: illegal tag {number} (wire type {wire})")
        value: Any
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise MalformedError("unexpected EOF")
            value, at = data[at : at + length], at + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if at + size > len(data):
                raise MalformedError("unexpected EOF")
            value, at = data[at : at + size], at + size
        else:
            raise MalformedError(f"proto: illegal wireType {wire}")
        out.append((number, wire, value))
    return out


def _signed(value: int, bits: int) -> int:
    value &= (1 << 64) - 1
    if value >= 1 << 63:
        value -= 1 << 64
    if bits == 32:
        value = ((value + (1 << 31)) % (1 << 32)) - (1 << 31)
    return value


def _scalar(kind: str, wire: int, value: Any, name: str) -> Any:
    expected = {"string": 2, "bytes": 2, "double": 1}.get(kind, 0)
    if wire != expected:
        raise MalformedError(f"proto: wrong wireType = {wire} for field {name}")
    if kind == "string":
        try:
            return value.decode()
        except UnicodeDecodeError as exc:
            raise MalformedError(f"proto: field {name} is not valid UTF-8") from exc
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind == "double":
        return struct.unpack("<d", value)[0]
    if kind == "bool":
        return bool(value)
    return _signed(value, 32 if kind == "int32" else 64)


def _go_duration(nanos: int) -> str:
    """time.Duration.String()."""
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                text = f"{nanos / size:.9f}".rstrip("0").rstrip(".")
                return f"{sign}{text}{unit}"
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = f"{rest / 1e9:.9f}".rstrip("0").rstrip(".")
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"


def _special(kind: str, raw: bytes) -> Any:
    found: dict[int, Any] = {}
    for number, _wire, value in fields(raw):
        found[number] = value
    if kind in ("Time", "MicroTime"):
        seconds = _signed(found.get(1, 0), 64)
        nanos = _signed(found.get(2, 0), 32)
        if not seconds and not nanos:
            return None  # the zero Time is `null` in JSON
        try:
            when = datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise MalformedError(f"proto: time out of range: {seconds}") from exc
        if kind == "Time":
            return when.strftime("%Y-%m-%dT%H:%M:%SZ")
        return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos // 1000:06d}Z"
    if kind == "Duration":
        return _go_duration(_signed(found.get(1, 0), 64))
    if kind == "IntOrString":
        if found.get(1, 0) == 1:
            return _scalar("string", 2, found.get(3, b""), "strVal")
        return _signed(found.get(2, 0), 32)
    if kind == "Quantity":
        return _scalar("string", 2, found.get(1, b""), "string")
    # RawExtension and FieldsV1: raw = 1 holds JSON
    raw_json = found.get(1, b"")
    if not raw_json:
        return None
    try:
        return json.loads(raw_json)
    except ValueError as exc:
        raise MalformedError(f"proto: {kind} does not hold JSON: {exc}") from exc


def _is_zero(value: Any) -> bool:
    return value in ("", 0, False) and not isinstance(value, float)


def _value(spec: Field, wire: int, value: Any) -> Any:
    kind = spec.type
    if kind in SCALARS:
        return _scalar(kind, wire, value, spec.name)
    if wire != 2:
        raise MalformedError(f"proto: wrong wireType = {wire} for field {spec.name}")
    if kind in SPECIAL:
        return _special(kind, value)
    return message(kind, value)


def _packed(kind: str, data: bytes) -> list[tuple[int, int, Any]]:
    """The values of a packed repeated scalar field, as (number, wire type, value)."""
    out: list[tuple[int, int, Any]] = []
    at = 0
    while at < len(data):
        if kind == "double":
            if at + 8 > len(data):
                raise MalformedError("unexpected EOF")
            out.append((0, 1, data[at : at + 8]))
            at += 8
        else:
            value, at = _varint(data, at)
            out.append((0, 0, value))
    return out


def message(name: str, raw: bytes) -> dict[str, Any]:
    """The JSON shape of message NAME's bytes RAW."""
    table = messages()[name]
    out: dict[str, Any] = {}
    for number, wire, value in fields(raw):
        spec = table.get(number)
        if spec is None:
            continue  # a field this table does not know: skipped, as proto does
        if spec.type == "map":
            if wire != 2:
                raise MalformedError(f"proto: wrong wireType = {wire} for field {spec.name}")
            key, item = "", None
            for n, w, v in fields(value):
                if n == 1:
                    key = _scalar("string", w, v, spec.name)
                elif n == 2:
                    item = _value(Field(spec.name, spec.value), w, v)
            if item is None:
                item = "" if spec.value in ("string", "bytes", "Quantity") else item
            out.setdefault(spec.name, {})[key] = item
            continue
        if spec.repeated and wire == 2 and spec.type in SCALARS - {"string", "bytes"}:
            packed = [(w, v) for _n, w, v in _packed(spec.type, value)]
            out.setdefault(spec.name, []).extend(_value(spec, w, v) for w, v in packed)
            continue
        decoded = _value(spec, wire, value)
        if spec.inline:
            out.update(decoded)
        elif spec.repeated:
            out.setdefault(spec.name, []).append(decoded)
        elif spec.type in SCALARS and _is_zero(decoded) and not spec.pointer:
            out.pop(spec.name, None)  # Go's omitempty: a zero scalar is not in the JSON
        else:
            out[spec.name] = decoded
    return out


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw object bytes) of a protobuf envelope."""
    if not body.startswith(MAGIC):
        raise MalformedError("provided data does not appear to be a protobuf message")
    version, kind, raw = "", "", b""
    for number, wire, value in fields(body[len(MAGIC) :]):
        if number == 1 and wire == 2:
            for n, w, v in fields(value):
                if n == 1:
                    version = _scalar("string", w, v, "apiVersion")
                elif n == 2:
                    kind = _scalar("string", w, v, "kind")
        elif number == 2 and wire == 2:
            raw = value
    return version, kind, raw


def decode(body: bytes) -> dict[str, Any]:
    """The JSON shape of a protobuf body: 400 when it does not parse, 415 for an unknown kind."""
    try:
        api_version, kind, raw = unwrap(body)
    except MalformedError as exc:
        raise ApiError(400, f"the object provided is unrecognized: {exc}") from exc
    if kind not in messages():
        raise ApiError(
            415,
            f"the lab does not decode protobuf for {kind or 'an object without a kind'}; send JSON",
            reason="UnsupportedMediaType",
        )
    try:
        obj = message(kind, raw)
    except MalformedError as exc:
        version = api_version.rpartition("/")[2]
        raise ApiError(
            400, f'{kind} in version "{version}" cannot be handled as a {kind}: {exc}'
        ) from exc
    return {"kind": kind, "apiVersion": api_version, **obj}
