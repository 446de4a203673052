"""`metadata.managedFields` as k8s.io/apiserver's fieldmanager keeps them.

Every write names a field manager: the `fieldManager` query parameter, else the User-Agent up
to its first `/` (upstream's prefixFromUserAgent: `kubectl`, from `kubectl/v1.32.0 (...)`).
kubectl sends its own names: `kubectl-create`, `kubectl-client-side-apply`, `kubectl-edit`,
`kubectl-replace`, `kubectl-patch`, ...

A create, update (PUT) or patch records an `operation: Update` entry for its manager (one per
manager and apiVersion): the fields the request set or changed join its set and leave every
other manager's set; a field the request removed leaves every set; a manager left with no
field leaves the list. A server-side apply records an `operation: Apply` entry
(lab/patch.py: server_side_apply), and a field another manager owns, Update or Apply, that an
apply would change is a conflict.

Field sets are FieldsV1 tries read with the kind's OpenAPI schema (lab/openapi/), as
structured-merge-diff reads them: `f:NAME` for a field or map key, `k:{"KEY":VALUE,...}` for an
element of a list of type map (by its x-kubernetes-list-map-keys, e.g. a Service's ports by
port and protocol), `v:VALUE` for an element of a set, and a leaf (`{}`) for a scalar or an
atomic map or list (a Service's selector). `.` marks the element or map itself.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from lab import openapi

# What upstream's stripMeta keeps out of every field set.
STRIPPED_META = frozenset(
    {
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    }
)
# The defaults of list-map keys that a request may leave out (ServicePort and ContainerPort
# protocol): upstream reads the keys after defaulting.
KEY_DEFAULTS = {"protocol": "TCP"}
FIELD_MANAGER_MAX_LENGTH = 128
ABSENT: Any = object()


class _Everything:
    """The top-level keys of a main resource's field set: all but status."""

    def __contains__(self, key: object) -> bool:
        return key not in ("apiVersion", "kind", "status")


# The top-level keys a write sets, by subresource ("" is the main resource).
_PARTS: dict[str, Any] = {"": _Everything(), "status": ("metadata", "status")}


def manager_name(field_manager: str | None, user_agent: str | None) -> str:
    """The request's manager: `fieldManager`, else upstream's prefixFromUserAgent."""
    if field_manager:
        return field_manager
    out = ""
    for char in (user_agent or "").split("/")[0]:
        if not char.isprintable():  # as Go's unicode.IsPrint
            continue
        if len((out + char).encode()) > FIELD_MANAGER_MAX_LENGTH:
            break
        out += char
    return out


# ------------------------------------------------------------------ field sets


def _resolve(schemas: dict[str, Any], node: Any) -> dict[str, Any]:
    """A property's schema: the one it refers to, with the property's own annotations."""
    if not isinstance(node, dict):
        return {}
    ref = node.get("$ref") or ((node.get("allOf") or [{}])[0] or {}).get("$ref")
    target = schemas.get(str(ref).rsplit("/", 1)[-1], {}) if ref else {}
    return {**target, **{k: v for k, v in node.items() if k not in ("$ref", "allOf")}}


def item_key(item: dict[str, Any], keys: list[str]) -> str:
    """The FieldsV1 name of a list-map element: `k:{"port":5060,"protocol":"SCTP"}`."""
    found = {k: item.get(k, KEY_DEFAULTS.get(k)) for k in sorted(keys)}
    present = {k: v for k, v in found.items() if v is not None}
    return "k:" + json.dumps(present, separators=(",", ":"))


def _fields(
    schemas: dict[str, Any] | None,
    node: Any,
    value: Any,
    path: tuple[str, ...],
    maps: bool,
    part: str = "",
    required: bool = False,
) -> dict[str, Any]:
    schema = _resolve(schemas, node) if schemas is not None else {}
    if _atomic(schema):
        return {}
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if schemas is not None and not props and not isinstance(extra, dict):
            return {}  # an opaque or unknown object: one leaf
        out: dict[str, Any] = {}
        if maps and isinstance(extra, dict) and not props:
            out["."] = {}
        wanted = set(schema.get("required") or [])
        for key, item in value.items():
            if path == () and key not in _PARTS[part]:
                continue
            if path == ("metadata",) and key in STRIPPED_META:
                continue
            if path == ("metadata",) and key in ("labels", "annotations") and item == {}:
                continue  # an empty map is none once decoded (omitempty)
            child = (props or {}).get(key) if props else extra
            if schemas is not None and child is None:
                out[f"f:{key}"] = {}  # a field the schema does not know
                continue
            below = _fields(schemas, child, item, (*path, key), maps, part, key in wanted)
            if below or path != () or not isinstance(item, dict):
                # (an empty metadata, spec or status is never a leaf at the top: the empty
                # object a write is compared with holds them already)
                out[f"f:{key}"] = below
        return out
    if isinstance(value, list):
        kind = schema.get("x-kubernetes-list-type")
        items = schema.get("items")
        # An Update's set marks a list it adds with `.`, as structured-merge-diff's comparison
        # adds the list itself; not a required list (a pod's containers), which the empty
        # object a create starts from already holds (as null).
        whole: dict[str, Any] = {".": {}} if maps and value and not required else {}
        if kind == "map":
            keys = list(schema.get("x-kubernetes-list-map-keys") or [])
            atomic = _atomic(_resolve(schemas, items)) if schemas is not None else False
            return {
                **whole,
                **{
                    # an atomic element (an ownerReference) is one leaf
                    item_key(item, keys): {}
                    if atomic
                    else {".": {}, **_fields(schemas, items, item, path, maps, part)}
                    for item in value
                    if isinstance(item, dict)
                },
            }
        if kind == "set":
            return {
                **whole,
                **{"v:" + json.dumps(item, separators=(",", ":")): {} for item in value},
            }
    return {}


def _atomic(schema: dict[str, Any]) -> bool:
    return bool(
        schema.get("x-kubernetes-map-type") == "atomic"
        or schema.get("x-kubernetes-struct-type") == "atomic"
    )


def field_set(kind: str, obj: Any, maps: bool = False, subresource: str = "") -> dict[str, Any]:
    """The fields OBJ sets, as a FieldsV1 trie read with KIND's schema. `maps`: mark each map
    and list with `.` as an Update's set does for those it adds (an Apply's set leaves it out).
    A write of the main resource sets no status; one of the status subresource sets its status
    and metadata, not its spec (upstream's reset fields of the two strategies)."""
    found = openapi.kind_schema(kind)
    if found is None:
        return _fields(None, None, obj, (), maps, subresource)
    schemas, name = found
    return _fields(schemas, {"$ref": name}, obj, (), maps, subresource)


def keyed(items: list[Any], name: str) -> list[Any]:
    """The elements of a list that a FieldsV1 `k:{...}` or `v:VALUE` names."""
    wanted = json.loads(name[2:])
    if name.startswith("v:"):
        return [i for i in items if i == wanted]
    return [
        i
        for i in items
        if isinstance(i, dict)
        and all(i.get(k, KEY_DEFAULTS.get(k)) == v for k, v in wanted.items())
    ]


def leaves(fields: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The leaf paths of a FieldsV1 set (its `.` markers aside)."""
    out: list[tuple[str, ...]] = []
    for name, sub in fields.items():
        if name == ".":
            continue
        out.extend(leaves(sub, (*path, name)) if sub else [(*path, name)])
    return out


def members(fields: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every member of a FieldsV1 set: its leaves and its `.` markers (as `(..., ".")`)."""
    out: list[tuple[str, ...]] = []
    for name, sub in fields.items():
        if name == "." or not sub:
            out.append((*path, name))
        else:
            out.extend(members(sub, (*path, name)))
    return out


def value_at(obj: Any, path: tuple[str, ...]) -> Any:
    """The value at a FieldsV1 path of an object, or ABSENT."""
    node = obj
    for name in path:
        if name == ".":
            continue
        if name.startswith("f:") and isinstance(node, dict) and name[2:] in node:
            node = node[name[2:]]
        elif name[:2] in ("k:", "v:") and isinstance(node, list):
            matches = keyed(node, name)
            if not matches:
                return ABSENT
            node = matches[0]
        else:
            return ABSENT
    return node


def has(fields: dict[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = fields
    for name in path:
        if not isinstance(node, dict) or name not in node:
            return False
        node = node[name]
    return True


def without(fields: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """A FieldsV1 set without one member (and the maps it leaves empty)."""
    if not path or path[0] not in fields:
        return fields
    out = dict(fields)
    if len(path) == 1:
        del out[path[0]]
        return out
    rest = without(fields[path[0]], path[1:])
    if rest:
        out[path[0]] = rest
    else:
        del out[path[0]]
    return out


def minus(fields: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    for path in members(other):
        fields = without(fields, path)
    return fields


def union(one: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    out = dict(one)
    for name, sub in other.items():
        out[name] = union(out[name], sub) if name in out else sub
    return out


def field_path(path: tuple[str, ...]) -> str:
    """A FieldsV1 path as upstream prints it: `.spec.ports[port=5060,protocol="SCTP"].name`."""
    out = ""
    for name in path:
        if name.startswith("f:"):
            out += "." + name[2:]
        elif name.startswith("k:"):
            keys = json.loads(name[2:])
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]"
        elif name.startswith("v:"):
            out += f"[={name[2:]}]"
    return out


# ------------------------------------------------------------------ entries


def manager_label(entry: dict[str, Any]) -> str:
    """How upstream's conflict message names a manager (managedfields printManager)."""
    label = json.dumps(entry.get("manager", ""))
    if entry.get("subresource"):
        label += f" with subresource {json.dumps(entry['subresource'])}"
    if entry.get("operation") == "Update":
        label += f" using {entry.get('apiVersion', '')}"
    return label


def manager_identifier(entry: dict[str, Any]) -> str:
    """upstream's BuildManagerIdentifier: the JSON of the entry without its fields and time
    (and, for an applier, without its apiVersion), by which conflicts are grouped and sorted."""
    ident: dict[str, Any] = {"manager": entry.get("manager", "")}
    ident["operation"] = entry.get("operation", "")
    if entry.get("operation") != "Apply" and entry.get("apiVersion"):
        ident["apiVersion"] = entry["apiVersion"]
    if entry.get("subresource"):
        ident["subresource"] = entry["subresource"]
    return json.dumps(ident, separators=(",", ":"))


def sorted_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """In upstream's order: Apply before Update, then by time, manager, apiVersion,
    subresource."""
    return sorted(
        entries,
        key=lambda e: (
            e.get("operation", ""),
            e.get("time") or "",
            e.get("manager", ""),
            e.get("apiVersion", ""),
            e.get("subresource", ""),
        ),
    )


def request_entries(live: dict[str, Any] | None, new: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries an update starts from (upstream's decodeLiveOrNew): the request's own when
    it sends some, none when it resets them (`[]` or `[{}]`), else the live object's."""
    sent = (new.get("metadata") or {}).get("managedFields")
    if isinstance(sent, list) and (sent == [] or sent == [{}]):
        return []
    if isinstance(sent, list) and sent:
        return [dict(e) for e in sent if isinstance(e, dict)]
    return [dict(e) for e in ((live or {}).get("metadata") or {}).get("managedFields") or []]


def record_update(
    kind: str,
    live: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    when: str,
    subresource: str = "",
) -> list[dict[str, Any]]:
    """The managedFields after MANAGER's create (LIVE None), update or patch turns LIVE into
    NEW: what it set or changed is its own and no one else's; what it removed is no one's."""
    before = live or {}
    api_version = str(new.get("apiVersion") or before.get("apiVersion") or "")
    entries = request_entries(live, new)
    old_set = field_set(kind, before, maps=True, subresource=subresource)
    new_set = field_set(kind, new, maps=True, subresource=subresource)
    changed: dict[str, Any] = {}
    for path in members(new_set):
        was, now = value_at(before, path), value_at(new, path)
        if path[-1] == ".":
            if was is ABSENT:
                changed = union(changed, _trie(path))
        elif was is ABSENT or was != now:
            changed = union(changed, _trie(path))
    removed: dict[str, Any] = {}
    for path in members(old_set):
        if not has(new_set, path):
            removed = union(removed, _trie(path))
    mine: dict[str, Any] | None = None
    out = []
    for entry in entries:
        if (
            entry.get("manager") == manager
            and entry.get("operation") == "Update"
            and entry.get("apiVersion") == api_version
            and (entry.get("subresource") or "") == subresource
        ):
            mine = entry
            continue
        owned = minus(minus(entry.get("fieldsV1") or {}, changed), removed)
        if owned:
            out.append({**entry, "fieldsV1": owned})
    owned = union(minus((mine or {}).get("fieldsV1") or {}, removed), changed)
    if owned:
        entry = {
            "manager": manager,
            "operation": "Update",
            "apiVersion": api_version,
            # the time moves only when the request took fields
            "time": when if changed or mine is None else mine.get("time", when),
            "fieldsType": "FieldsV1",
            "fieldsV1": owned,
        }
        if subresource:
            entry["subresource"] = subresource
        out.append(entry)
    return sorted_entries(out)


def entry_key(entry: dict[str, Any]) -> tuple[str, str, str]:
    """What tells entries apart: manager, operation, subresource (and an Update's apiVersion,
    which the lab's one version per kind makes moot)."""
    return (
        str(entry.get("manager") or ""),
        str(entry.get("operation") or ""),
        str(entry.get("subresource") or ""),
    )


def with_entries(
    entries: list[dict[str, Any]], theirs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """ENTRIES with THEIRS in place of the entries of the same key."""
    keys = {entry_key(e) for e in theirs}
    return sorted_entries([e for e in entries if entry_key(e) not in keys] + list(theirs))


def controller_entry(
    kind: str,
    before: dict[str, Any],
    after: dict[str, Any],
    manager: str,
    when: str,
    subresource: str = "",
    api_version: str = "",
) -> dict[str, Any] | None:
    """The Update entry of a controller whose write turned BEFORE into AFTER (both without
    managedFields): what it set or changed, None when that is nothing. (Every rendering of an
    object asks again: the answers are cached.)"""
    # (the schemas read are the release's of the request's cluster, where lab/openapi.py
    # keeps one per release: its name is part of the key)
    release = getattr(openapi, "current_release", lambda: "")()
    # The key leaves out the top-level metadata no field set holds (_UNREAD_META): a rendering
    # that differs only in its resourceVersion (every derived object, on every change) is the
    # same question.
    question = [kind, _unstripped(before), _unstripped(after), manager, when, subresource]
    found = _controller_entry(json.dumps([*question, api_version, release]))
    return json.loads(found) if found else None


# What no field set holds and record_update never reads (managedFields it does: the entries
# a request sends).
_UNREAD_META = STRIPPED_META - {"managedFields"}


def _unstripped(obj: dict[str, Any]) -> dict[str, Any]:
    """OBJ without the top-level metadata record_update never reads (_UNREAD_META)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not _UNREAD_META.intersection(meta):
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k not in _UNREAD_META}}


@functools.lru_cache(maxsize=4096)
def _controller_entry(args: str) -> str:
    kind, before, after, manager, when, subresource, api_version, _release = json.loads(args)
    new = {"apiVersion": api_version, **after}
    entries = record_update(kind, before, new, manager, when, subresource)
    return json.dumps(entries[0]) if entries else ""


def _trie(path: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in reversed(path):
        out = {name: out}
    return out
