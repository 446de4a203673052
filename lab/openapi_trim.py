"""Writes lab/openapi/: one release's schemas of the kinds the lab serves, and only those.

The source is a JSON copy of upstream's definitions for one release, as the Apache-2.0
`kubernetes-validate` package ships it (`kubernetes-json-schema/vX.Y.0-local/_definitions.json`,
generated from kubernetes/kubernetes api/openapi-spec; releases up to v1.24 in its older form,
`definitions` and `#/definitions/` instead of `$defs` and `#/$defs/`). That copy is in JSON
Schema form; this script turns it back into the layout of upstream's api/openapi-spec/v3
documents:

- `$ref`s point at `#/components/schemas/...`, wrapped in `allOf` where the property carries
  its own description, as upstream's v3 documents do;
- the copy's additions are dropped: `null` in the types of optional fields, the `enum` it puts
  on `apiVersion` and `kind`, `oneOf` for IntOrString and Quantity (upstream's are strings
  with a format);
- each group version's document keeps the schemas reachable from the kinds lab/discovery.py
  serves there (list kinds aside), so ObjectMeta and PodSpec appear in every document that
  uses them, as upstream's do. A group version whose kinds the release does not have
  (discovery.k8s.io/v1 before v1.21) gets no document.

What is stored (lab/openapi/, read by lab/openapi.py, which serves the documents with `paths`
it generates): `v1.NN.json.gz`, one release's index, names each group version's schemas by
the digest of their content, and `schemas.json.xz` holds each distinct schema once (most are
the same from one release to the next). Both are compact JSON with sorted keys, so the same
definitions always give the same bytes. Writing a release replaces its index and rewrites the
store with the schemas of every stored release.

Run: `python -m lab.openapi_trim PATH/vX.Y.0-local/_definitions.json [...]`
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from lab import discovery, openapi

OUT = Path(__file__).resolve().parent / "openapi"
_REFS = ("#/$defs/", "#/definitions/")
_UPSTREAM_REF = "#/components/schemas/"
_SOURCE_DIR = re.compile(r"^v(\d+)\.(\d+)\.\d+-local$")
# Upstream's own forms of the two types the copy rewrites as oneOf.
_SCALARS = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in "
        "JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  "
        "This allows you to have, for example, a JSON field that can accept a name or number.",
        "format": "int-or-string",
        "type": "string",
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": "Quantity is a fixed-point representation of a number. It provides "
        "convenient marshaling/unmarshaling in JSON and YAML, in addition to String() and "
        "AsInt64() accessors.",
        "type": "string",
    },
}


def _name(ref: str) -> str:
    for prefix in _REFS:
        if ref.startswith(prefix):
            return ref.removeprefix(prefix)
    return ref


def _convert(node: Any, top_kind: bool = False) -> Any:
    if isinstance(node, list):
        return [_convert(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, list):
            kinds = [v for v in value if v != "null"]
            out[key] = kinds[0] if len(kinds) == 1 else kinds
        elif key == "$ref":
            out[key] = _UPSTREAM_REF + _name(value)
        elif key == "properties":
            out[key] = {
                p: _property(p, v, top_kind) for p, v in sorted(value.items(), key=lambda i: i[0])
            }
        else:
            out[key] = _convert(value)
    if "$ref" in out and len(out) > 1:
        ref = out.pop("$ref")
        out = {"allOf": [{"$ref": ref}], **out}
    return dict(sorted(out.items()))


def _property(name: str, value: Any, top_kind: bool) -> Any:
    converted = _convert(value)
    if top_kind and name in ("apiVersion", "kind") and isinstance(converted, dict):
        converted.pop("enum", None)
    return converted


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(_name(value))
            else:
                found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _kind_schema(defs: dict[str, Any], group_version: str, kind: str) -> str:
    group, _, version = group_version.rpartition("/")
    for name, schema in defs.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if (gvk.get("group"), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return name
    raise KeyError(f"no schema for {group_version} {kind}")


def definitions(source: dict[str, Any]) -> dict[str, Any]:
    """The definitions of a `_definitions.json` copy, in either of its two forms."""
    defs: dict[str, Any] = source.get("$defs") or source["definitions"]
    return defs


def schema(defs: dict[str, Any], name: str, top_kind: bool = False) -> Any:
    """One definition in upstream's v3 form. `top_kind`: NAME is a kind a document serves (its
    `apiVersion` and `kind` lose the copy's `enum`)."""
    return _SCALARS.get(name) or _convert(defs[name], top_kind=top_kind)


def document(defs: dict[str, Any], group_version: str) -> dict[str, Any]:
    """The components of one group version's document: its kinds and what they reference."""
    roots = []
    for r in discovery.SERVED[group_version]:
        roots.append(_kind_schema(defs, group_version, r.kind))
        for kind, _verbs, gv in r.subresources.values():
            if gv:
                roots.append(_kind_schema(defs, gv, kind))
    wanted: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        todo.extend(_refs(defs[name]) - wanted)
    schemas = {name: schema(defs, name, top_kind=name in roots) for name in sorted(wanted)}
    return {"components": {"schemas": schemas}}


def documents(defs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every group version's document of one release (those whose kinds it has)."""
    out = {}
    for gv in discovery.SERVED:
        try:
            out[gv] = document(defs, gv)
        except KeyError:
            continue  # discovery.k8s.io/v1 before v1.21
    return out


def release_of(path: Path) -> str:
    """`v1.30` for `.../v1.30.0-local/_definitions.json`."""
    found = _SOURCE_DIR.match(path.parent.name)
    if not found:
        raise ValueError(f"{path}: not in a vX.Y.0-local directory of kubernetes-json-schema")
    return f"v{found.group(1)}.{found.group(2)}"


def _package(path: Path) -> str:
    """`kubernetes-validate 1.37.0`: the package a `_definitions.json` came in, when known."""
    for parent in path.parents:
        metadata = [parent / "PKG-INFO", *parent.glob("kubernetes_validate-*.dist-info/METADATA")]
        for candidate in metadata:
            if candidate.is_file():
                for line in candidate.read_text(encoding="utf-8").splitlines():
                    if line.startswith("Version: "):
                        return "kubernetes-validate " + line.removeprefix("Version: ")
    return "kubernetes-validate"


def write_release(path: Path, out: Path = OUT) -> Path:
    """Writes the release of PATH (a `_definitions.json`): its index, OUT/v1.NN.json.gz, and
    its schemas into OUT/schemas.json.xz, which keeps every schema any stored release uses."""
    release = release_of(path)
    defs = definitions(json.loads(path.read_text(encoding="utf-8")))
    store = openapi.read_store(out)
    index: dict[str, Any] = {
        "release": release + ".0",
        "source": f"{_package(path)}: kubernetes-json-schema/{path.parent.name}/{path.name}",
        "documents": {},
    }
    for gv, doc in documents(defs).items():
        names = {}
        for name, body in doc["components"]["schemas"].items():
            key = openapi.digest(body)
            store[key] = body
            names[name] = key
        index["documents"][gv] = names
    target = out / f"{release}.json.gz"
    target.write_bytes(openapi.encode_index(index))
    used: set[str] = set()
    for other in openapi.stored_releases(out):
        for names in openapi.read_index(out, other)["documents"].values():
            used.update(names.values())
    openapi.write_store(out, {key: store[key] for key in used})
    return target


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    for arg in argv:
        target = write_release(Path(arg))
        print(target.relative_to(OUT.parent.parent), target.stat().st_size)
    store = OUT / openapi.STORE
    print(store.relative_to(OUT.parent.parent), store.stat().st_size)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
