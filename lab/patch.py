"""PATCH as kube-apiserver applies it: strategic merge, JSON merge (RFC 7386), JSON patch (RFC 6902).

Server-side apply (`application/apply-patch+yaml`, `kubectl apply --server-side`) creates the
object or merges the applied configuration into it, with field ownership and conflicts (see
`server_side_apply` and lab/managedfields.py). `kubectl apply` re-applies a manifest with a strategic merge patch: maps merge, `null`
deletes a field, lists of objects merge by their merge key (containers by `name`, a Service's
ports by `port`, a container's ports by `containerPort`, ...) with `$patch: delete` entries,
and `$setElementOrder/FIELD` gives the order of the merged list. The merge keys here are
those of the `patchMergeKey` tags of k8s.io/api for the kinds the lab serves.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from lab import managedfields
from lab.errors import ApiError

STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"

# Field name -> merge key, wherever the field appears (k8s.io/api patchMergeKey tags).
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "hostAliases": "ip",
    "ownerReferences": "uid",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
    "addresses": "type",
}
# Lists of scalars merged as sets (patchStrategy:"merge").
_SET_LISTS = {"finalizers"}


def merge_key(kind: str, path: tuple[str, ...]) -> str | None:
    field = path[-1] if path else ""
    if field == "ports":
        if kind == "Service" and path == ("spec", "ports"):
            return "port"  # ServiceSpec.Ports: patchMergeKey port
        if len(path) >= 2 and path[-2] in ("containers", "initContainers", "ephemeralContainers"):
            return "containerPort"
        return None  # NetworkPolicy ports, EndpointSubset ports: replaced whole
    return _MERGE_KEYS.get(field)


def strategic_merge(kind: str, original: dict[str, Any], patch: Any) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise ApiError(400, "the body of a strategic merge patch must be a JSON object")
    merged = _merge_map(kind, copy.deepcopy(original), patch, ())
    return merged if merged is not None else {}


def _merge_map(
    kind: str, original: dict[str, Any], patch: dict[str, Any], path: tuple[str, ...]
) -> dict[str, Any] | None:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise ApiError(400, f"unknown patch type: {directive!r} in map")
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        for key in [k for k in original if k not in retain]:
            original.pop(key)
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            original.pop(key, None)
        elif isinstance(value, dict) and isinstance(original.get(key), dict):
            merged = _merge_map(kind, original[key], value, (*path, key))
            if merged is None:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, dict):
            merged = _merge_map(kind, {}, value, (*path, key))
            if merged is not None:
                original[key] = merged
        elif isinstance(value, list):
            mk = merge_key(kind, (*path, key))
            current = original.get(key)
            if mk and isinstance(current, list):
                original[key] = _merge_list(kind, current, value, mk, (*path, key))
            elif key in _SET_LISTS and isinstance(current, list):
                original[key] = current + [v for v in value if v not in current]
            else:
                original[key] = [
                    v for v in value if not (isinstance(v, dict) and v.get("$patch") == "delete")
                ]
        else:
            original[key] = value
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/") and isinstance(value, list):
            field = key.split("/", 1)[1]
            if isinstance(original.get(field), list):
                original[field] = [v for v in original[field] if v not in value]
    for key, order in patch.items():
        if key.startswith("$setElementOrder/") and isinstance(order, list):
            field = key.split("/", 1)[1]
            if isinstance(original.get(field), list):
                original[field] = _ordered(original[field], order, merge_key(kind, (*path, field)))
    return original


def _merge_list(
    kind: str,
    original: list[Any],
    patch: list[Any],
    mk: str,
    path: tuple[str, ...],
) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [p for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    result = copy.deepcopy(original)
    for item in patch:
        if not isinstance(item, dict):
            raise ApiError(400, f"a list with merge key {mk!r} must hold objects")
        if mk not in item:
            raise ApiError(
                400, f"map: {item} does not contain declared merge key: {mk}", reason="BadRequest"
            )
        at = next(
            (i for i, o in enumerate(result) if isinstance(o, dict) and o.get(mk) == item[mk]),
            None,
        )
        if item.get("$patch") == "delete":
            if at is not None:
                result.pop(at)
            continue
        if at is None:
            result.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            merged = _merge_map(kind, result[at], item, path)
            if merged is None:
                result.pop(at)
            else:
                result[at] = merged
    return result


def _ordered(items: list[Any], order: list[Any], mk: str | None) -> list[Any]:
    def ident(value: Any) -> Any:
        return json.dumps(value.get(mk) if mk and isinstance(value, dict) else value)

    rank = {ident(v): i for i, v in enumerate(order)}
    return sorted(items, key=lambda v: rank.get(ident(v), len(rank)))


def json_merge(original: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(400, f'JSON pointer "{path}" does not start with "/"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, list):
            doc = doc[int(part)]
        elif isinstance(doc, dict):
            doc = doc[part]
        else:
            raise KeyError(part)
    return doc


def json_patch(original: dict[str, Any], ops: Any) -> dict[str, Any]:
    """RFC 6902: add, remove, replace, move, copy, test."""
    if not isinstance(ops, list):
        raise ApiError(400, "the body of a JSON patch must be a list of operations")
    doc = copy.deepcopy(original)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise ApiError(400, "every JSON patch operation needs an op and a path")
        name, parts = op["op"], _pointer(str(op["path"]))
        try:
            if name == "test":
                if _walk(doc, parts) != op.get("value"):
                    raise ApiError(422, f"testing value {op['path']} failed", reason="Invalid")
                continue
            value: Any
            if name in ("move", "copy"):
                source = _pointer(str(op.get("from", "")))
                value = copy.deepcopy(_walk(doc, source))
                if name == "move":
                    _remove(doc, source)
            elif name in ("add", "replace"):
                value = copy.deepcopy(op.get("value"))
            if name == "remove":
                _remove(doc, parts)
            elif name == "replace":
                _remove(doc, parts)
                _add(doc, parts, value)
            elif name in ("add", "move", "copy"):
                _add(doc, parts, value)
            else:
                raise ApiError(400, f"Unexpected kind: {name}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(
                422,
                f"the server rejected our request due to an error in our request: {name} "
                f'operation does not apply: doc is missing path: "{op["path"]}"',
                reason="Invalid",
            ) from exc
    if not isinstance(doc, dict):
        raise ApiError(400, "a JSON patch must leave an object")
    return doc


def _remove(doc: Any, parts: list[str]) -> None:
    parent = _walk(doc, parts[:-1])
    if isinstance(parent, list):
        parent.pop(int(parts[-1]))
    else:
        del parent[parts[-1]]


def _add(doc: Any, parts: list[str], value: Any) -> None:
    if not parts:
        raise ValueError("cannot replace the whole document")
    parent = _walk(doc, parts[:-1])
    if isinstance(parent, list):
        if parts[-1] == "-":
            parent.append(value)
        else:
            index = int(parts[-1])
            if index > len(parent):
                raise IndexError(index)
            parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[parts[-1]] = value
    else:
        raise TypeError("not a container")


def is_apply(content_type: str) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == APPLY


def applied_config(raw: bytes, kind: str, name: str, field_manager: str) -> dict[str, Any]:
    """The body of a server-side apply (`kubectl apply --server-side`): a whole object, as YAML
    or JSON, naming this kind and name, sent with a field manager."""
    if not field_manager:
        raise ApiError(
            400, "PATCH: fieldManager is required for apply requests", reason="BadRequest"
        )
    try:
        body = yaml.safe_load(raw or b"") or {}
    except yaml.YAMLError as exc:
        raise ApiError(400, f"error decoding YAML: {exc}") from exc
    if not isinstance(body, dict):
        raise ApiError(400, "an apply patch must be an object")
    meta = body.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    if body.get("kind") != kind:
        raise ApiError(400, f"the kind of the applied object ({body.get('kind')}) is not {kind}")
    if meta.get("name") not in (None, name):
        raise ApiError(400, "the name of the object does not match the name on the URL")
    return body


def _drop_unowned(
    live: Any, before: dict[str, Any], now: dict[str, Any], others: dict[str, Any]
) -> None:
    """Removes from `live` what the manager set before and no longer applies, unless another
    manager owns it too (structured-merge-diff's prune, which adds back what others own)."""
    for name, sub in before.items():
        if name == ".":
            continue
        theirs = others.get(name, _NOBODY)
        below = theirs if isinstance(theirs, dict) else {}
        if name.startswith("f:") and isinstance(live, dict):
            key = name[2:]
            if name not in now and theirs is _NOBODY:
                live.pop(key, None)
            elif sub and key in live:
                _drop_unowned(live[key], sub, now.get(name) or {}, below)
        elif name[:2] in ("k:", "v:") and isinstance(live, list):
            matches = managedfields.keyed(live, name)
            if name not in now and theirs is _NOBODY:
                for item in matches:
                    live.remove(item)
            elif sub:
                for item in matches:
                    _drop_unowned(item, sub, now.get(name) or {}, below)


_NOBODY: Any = object()


def server_side_apply(
    kind: str,
    original: dict[str, Any],
    applied: dict[str, Any],
    manager: str,
    when: str,
    force: bool = False,
) -> dict[str, Any]:
    """The live object after `manager` applies `applied` (server-side apply): what the manager
    applied before and no longer applies is removed (unless another manager owns it too), then
    the applied configuration is merged in (maps merge, lists of objects merge by their merge
    key), and the manager's `Apply` entry of `metadata.managedFields` records the fields it
    now sets (lab/managedfields.py). Fields other managers set stay.

    A field another manager owns (an applier's, or an `Update` entry's: the manager of a
    create, update or patch), applied with another value than the live one, is a conflict: 409
    naming each field and its manager in upstream's words, unless `force`
    (`kubectl apply --server-side --force-conflicts`), which takes the fields from their
    managers."""
    live = copy.deepcopy(original)
    entries = [dict(e) for e in (live.get("metadata") or {}).get("managedFields") or []]
    mine = next(
        (e for e in entries if e.get("manager") == manager and e.get("operation") == "Apply"), None
    )
    now = managedfields.field_set(kind, applied)
    others = [e for e in entries if e is not mine]
    conflicts = _conflicts(original, applied, now, others)
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for entry, path in conflicts:  # forced: the fields change hands
        entry["fieldsV1"] = managedfields.without(entry.get("fieldsV1") or {}, path)
    others = [e for e in others if e.get("fieldsV1")]
    if mine is not None:
        owned_by_others: dict[str, Any] = {}
        for entry in others:
            owned_by_others = managedfields.union(owned_by_others, entry.get("fieldsV1") or {})
        _drop_unowned(live, (mine.get("fieldsV1") or {}), now, owned_by_others)
    merged = strategic_merge(kind, live, applied)
    entry = {
        "manager": manager,
        "operation": "Apply",
        "apiVersion": applied.get("apiVersion", ""),
        "time": when,
        "fieldsType": "FieldsV1",
        "fieldsV1": now,
    }
    merged.setdefault("metadata", {})["managedFields"] = managedfields.sorted_entries(
        [*others, entry]
    )
    return merged


def _conflicts(
    live: dict[str, Any], applied: dict[str, Any], now: dict[str, Any], others: list[Any]
) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    """(another manager's entry, a field path) for each field this apply would change that
    the other manager owns."""
    found = []
    for path in managedfields.leaves(now):
        held = managedfields.value_at(live, path)
        if held is managedfields.ABSENT or held == managedfields.value_at(applied, path):
            continue
        for entry in others:
            if managedfields.has(entry.get("fieldsV1") or {}, path):
                found.append((entry, path))
    return found


field_path = managedfields.field_path


def _conflict_error(conflicts: list[tuple[dict[str, Any], tuple[str, ...]]]) -> ApiError:
    """The 409 of k8s.io/apimachinery's managedfields NewConflictError, word for word: each
    manager as printManager names it (an Update entry's with ` using APIVERSION`), grouped
    and sorted by its manager identifier when there are several conflicts."""
    causes = [
        {
            "type": "FieldManagerConflict",
            "message": f"conflict with {managedfields.manager_label(entry)}",
            "field": field_path(path),
        }
        for entry, path in conflicts
    ]
    if len(causes) == 1:
        message = f"Apply failed with 1 conflict: {causes[0]['message']}: {causes[0]['field']}"
    else:
        by_manager: dict[str, tuple[str, list[str]]] = {}
        for entry, path in conflicts:
            ident = managedfields.manager_identifier(entry)
            label = managedfields.manager_label(entry)
            by_manager.setdefault(ident, (label, []))[1].append(field_path(path))
        lines = []
        for ident in sorted(by_manager):
            label, paths = by_manager[ident]
            lines.append(f"conflicts with {label}:")
            lines.extend(f"- {p}" for p in paths)
        message = f"Apply failed with {len(causes)} conflicts: " + "\n".join(lines)
    return ApiError(409, message, reason="Conflict", details={"causes": causes})


def apply_patch(
    kind: str, content_type: str, original: dict[str, Any], raw: bytes
) -> dict[str, Any]:
    media = (content_type or "").split(";")[0].strip().lower()
    if media not in (STRATEGIC, MERGE, JSON_PATCH):
        raise ApiError(
            415,
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{JSON_PATCH}, {MERGE}, {APPLY}, {STRATEGIC}",
            reason="UnsupportedMediaType",
        )
    try:
        body = json.loads(raw or b"null")
    except ValueError as exc:
        raise ApiError(400, f"the request body is not valid JSON: {exc}") from exc
    if media == STRATEGIC:
        return strategic_merge(kind, original, body)
    if media == MERGE:
        merged = json_merge(original, body)
        if not isinstance(merged, dict):
            raise ApiError(400, "a merge patch must leave an object")
        return merged
    return json_patch(original, body)
