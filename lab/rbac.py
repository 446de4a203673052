"""RBAC in the lab: who a bearer token is, what it may do, and the RBAC objects themselves.

A real API server authenticates a request, then asks the RBAC authorizer whether the user may
do the request's verb on its resource, and answers 403 in fixed words when no rule allows it.
The lab does the same, so the battery can be run under the role this project ships
(`deploy/rbac/`) and a missing permission shows up the way it would on a real cluster.

Identities:
- the profile's token is cluster-admin, unless the profile names a role file (`rbac: PATH`):
  then it is a ServiceAccount (the file's ServiceAccount, or `sctp-battery/sctp-battery`)
  bound to every ClusterRole in that file, and nothing else (not even the default discovery
  roles: the role must name every URL the battery uses);
- tokens issued by the TokenRequest API (`POST .../serviceaccounts/NAME/token`) are that
  ServiceAccount, authorized by the ClusterRoleBindings and RoleBindings created in the lab,
  and expire at `expirationTimestamp`.

The RBAC objects (ServiceAccounts, ClusterRoles, ClusterRoleBindings, Roles, RoleBindings)
are served here, apart from `lab/cluster.py`, by `serve()`.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from lab.errors import ApiError, already_exists, invalid, not_found

DEFAULT_SA_NAMESPACE = "sctp-battery"
DEFAULT_SA_NAME = "sctp-battery"
RBAC_GROUP = "rbac.authorization.k8s.io"
# TokenRequest bounds of a real API server: at least 10 minutes, at most what
# --service-account-max-token-expiration allows (the lab: 48 hours).
MIN_TOKEN_SECONDS = 600
MAX_TOKEN_SECONDS = 48 * 3600
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True)
class Identity:
    name: str
    groups: tuple[str, ...] = ()
    admin: bool = False
    # Rules granted by the profile's role file (bound to the profile token only).
    rules: tuple[dict[str, Any], ...] = ()


@dataclass
class Attributes:
    """What the RBAC authorizer sees of a request (k8s.io/apiserver RequestInfo)."""

    verb: str
    path: str
    resource_request: bool
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass
class RbacState:
    """The RBAC objects of one lab cluster and the tokens issued for its ServiceAccounts."""

    objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(
        default_factory=lambda: {kind: {} for kind in _KINDS}
    )
    tokens: dict[str, tuple[Identity, float]] = field(default_factory=dict)
    profile_identity: Identity | None = None


# resource -> (kind, namespaced)
_KINDS: dict[str, tuple[str, bool]] = {
    "serviceaccounts": ("ServiceAccount", True),
    "clusterroles": ("ClusterRole", False),
    "clusterrolebindings": ("ClusterRoleBinding", False),
    "roles": ("Role", True),
    "rolebindings": ("RoleBinding", True),
}


def sa_user(namespace: str, name: str) -> Identity:
    return Identity(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
    )


def load_role_file(path: str | Path) -> tuple[Identity, tuple[dict[str, Any], ...]]:
    """The ServiceAccount and ClusterRole rules of a role file (one or more YAML documents),
    or of every YAML file in a directory (e.g. `deploy/rbac`)."""
    path = Path(path)
    files = (
        sorted(p for p in path.glob("*.y*ml") if p.name != "kustomization.yaml")
        if path.is_dir()
        else [path]
    )
    try:
        docs = [d for f in files for d in yaml.safe_load_all(f.read_text(encoding="utf-8")) if d]
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the RBAC file: {exc}") from exc
    rules: list[dict[str, Any]] = []
    namespace, name = DEFAULT_SA_NAMESPACE, DEFAULT_SA_NAME
    roles = 0
    for doc in docs:
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: every document must be a Kubernetes object")
        if doc.get("kind") == "ClusterRole":
            roles += 1
            for rule in doc.get("rules") or []:
                if not isinstance(rule, dict) or not isinstance(rule.get("verbs"), list):
                    raise ValueError(f"{path}: every rule needs a list of verbs")
                rules.append(rule)
        elif doc.get("kind") == "ServiceAccount":
            meta = doc.get("metadata") or {}
            name = meta.get("name") or name
            namespace = meta.get("namespace") or namespace
    if not roles:
        raise ValueError(f"{path}: no ClusterRole in the RBAC file")
    return sa_user(namespace, name), tuple(rules)


def state_of(cluster: Any) -> RbacState:
    state = cluster.addons.get("rbac")
    if state is None:
        state = RbacState()
        path = cluster.profile.get("rbac")
        if path:
            user, rules = load_role_file(path)
            state.profile_identity = Identity(user.name, user.groups, rules=rules)
        cluster.addons["rbac"] = state
    return state


def authenticate(
    cluster: Any, header: str | None, peer: tuple[str, tuple[str, ...]] | None = None
) -> Identity:
    """The identity of a client certificate (verified by the TLS layer against the lab's CA:
    CN the user, O the groups, as kube-apiserver's x509 authenticator reads them) or of a
    bearer token; 401 as a real server answers an unknown token."""
    state = state_of(cluster)
    if peer is not None:
        user, groups = peer
        return Identity(user, (*groups, "system:authenticated"), admin="system:masters" in groups)
    # The scheme is case-insensitive, as in the API server (the in-cluster loader sends "bearer").
    scheme, _, value = (header or "").partition(" ")
    token = value.strip() if scheme.lower() == "bearer" else ""
    if token and secrets.compare_digest(token, cluster.profile["token"]):
        return state.profile_identity or Identity(
            "kubernetes-admin", ("system:masters",), admin=True
        )
    issued = state.tokens.get(token) if token else None
    if issued is not None and issued[1] > time.time():
        return issued[0]
    raise ApiError(401, "Unauthorized")


# --- request attributes (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go) ------------


def attributes(method: str, path: str, query: dict[str, list[str]]) -> Attributes:
    verb = _VERBS.get(method, method.lower())
    parts = [unquote(p) for p in path.strip("/").split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return Attributes(verb, path, False)
    if not rest:
        return Attributes(verb, path, False)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if method == "GET":
        watch = (query.get("watch") or [""])[0] in ("true", "1")
        verb = "get" if name else ("watch" if watch else "list")
    elif method == "DELETE" and not name:
        verb = "deletecollection"
    return Attributes(verb, path, True, group, resource, subresource, namespace, name)


def _allows(rule: dict[str, Any], attrs: Attributes) -> bool:
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        for url in rule.get("nonResourceURLs") or []:
            if (
                url == attrs.path
                or url == "*"
                or (url.endswith("*") and attrs.path.startswith(url[:-1]))
            ):
                return True
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attrs.api_group not in groups:
        return False
    wanted = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    resources = rule.get("resources") or []
    if not (
        "*" in resources
        or wanted in resources
        or (attrs.subresource and f"*/{attrs.subresource}" in resources)
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


def _subject_matches(subject: dict[str, Any], who: Identity) -> bool:
    kind = subject.get("kind")
    if kind == "ServiceAccount":
        return who.name == f"system:serviceaccount:{subject.get('namespace')}:{subject.get('name')}"
    if kind == "User":
        return who.name == subject.get("name")
    if kind == "Group":
        return subject.get("name") in who.groups
    return False


def _bound_rules(state: RbacState, who: Identity, namespace: str) -> list[dict[str, Any]]:
    rules = list(who.rules)
    objects = state.objects
    for kind, scope in (("clusterrolebindings", None), ("rolebindings", namespace)):
        for (ns, _name), binding in objects[kind].items():
            if scope is not None and (not namespace or ns != scope):
                continue
            if not any(_subject_matches(s, who) for s in binding.get("subjects") or []):
                continue
            ref = binding.get("roleRef") or {}
            if ref.get("kind") == "ClusterRole":
                role = objects["clusterroles"].get(("", ref.get("name", "")))
            else:
                role = objects["roles"].get((ns, ref.get("name", "")))
            if role is not None:
                rules.extend(role.get("rules") or [])
    return rules


class _Forbidden(ApiError):
    """Its `details` always present, `{}` for paths, as the API server serializes them."""

    def status(self) -> dict[str, Any]:
        body = super().status()
        body["details"] = self.details or {}
        return body


def forbidden(attrs: Attributes, user: str) -> ApiError:
    """The 403 of k8s.io/apiserver responsewriters.Forbidden, word for word."""
    if not attrs.resource_request:
        return _Forbidden(
            403, f'forbidden: User "{user}" cannot {attrs.verb} path "{attrs.path}"', details={}
        )
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if attrs.namespace:
        where = f'in the namespace "{attrs.namespace}"'
    else:
        where = "at the cluster scope"
    why = (
        f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group '
        f'"{attrs.api_group}" {where}'
    )
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    subject = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    details: dict[str, Any] = {"kind": attrs.resource}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.api_group:
        details["group"] = attrs.api_group
    return _Forbidden(403, f"{subject} is forbidden: {why}", details=details)


def authorize(
    cluster: Any, who: Identity, method: str, path: str, query: dict[str, list[str]]
) -> None:
    """Raise the API server's 403 unless a rule bound to `who` allows the request."""
    if who.admin:
        return
    if path.rstrip("/") in ("/healthz", "/readyz", "/livez") and method == "GET":
        return  # system:public-info-viewer is bound to everyone, even anonymous users
    if method == "POST" and path.rstrip("/") == (
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    ):
        return  # system:basic-user: everyone may ask what they may do
    attrs = attributes(method, path, query)
    if any(_allows(rule, attrs) for rule in _bound_rules(state_of(cluster), who, attrs.namespace)):
        return
    raise forbidden(attrs, who.name)


def review(cluster: Any, who: Identity, spec: dict[str, Any]) -> tuple[bool, str]:
    """SelfSubjectAccessReview (`kubectl auth can-i`): may WHO do what SPEC describes?"""
    if who.admin:
        return True, ""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        attrs = Attributes(
            verb=str(resource.get("verb") or ""),
            path="",
            resource_request=True,
            api_group=str(resource.get("group") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            namespace=str(resource.get("namespace") or ""),
            name=str(resource.get("name") or ""),
        )
    else:
        other = spec.get("nonResourceAttributes") or {}
        attrs = Attributes(str(other.get("verb") or ""), str(other.get("path") or ""), False)
    for rule in _bound_rules(state_of(cluster), who, attrs.namespace):
        if _allows(rule, attrs):
            return True, "RBAC: allowed by a role bound to " + who.name
    return False, ""


# --- the RBAC objects and TokenRequest ------------------------------------------------------

_RBAC_PATH = re.compile(
    r"^/apis/rbac\.authorization\.k8s\.io/v1(?:/namespaces/(?P<ns>[^/]+))?/(?P<res>clusterroles|"
    r"clusterrolebindings|roles|rolebindings)(?:/(?P<name>[^/]+))?/?$"
)
_SA_PATH = re.compile(
    r"^/api/v1(?:/namespaces/(?P<ns>[^/]+))?/serviceaccounts"
    r"(?:/(?P<name>[^/]+)(?P<token>/token)?)?/?$"
)


def _namespaces_kept(cluster: Any) -> None:
    """What kube-controller-manager keeps true of namespaced RBAC objects: every namespace has
    its `default` ServiceAccount (the serviceaccount controller makes it again when it is
    deleted), and a deleted namespace's ServiceAccounts, Roles and RoleBindings are gone."""
    objects = state_of(cluster).objects
    live = set(cluster.namespaces)
    for resource, (_kind, namespaced) in _KINDS.items():
        if namespaced:
            for key in [k for k in objects[resource] if k[0] not in live]:
                del objects[resource][key]
    accounts = objects["serviceaccounts"]
    for ns in sorted(live):
        if (ns, "default") not in accounts:
            made = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
            _store(cluster, accounts, (ns, "default"), made, ns)


def serve(cluster: Any, method: str, path: str, body: Any) -> tuple[int, Any] | None:
    """Answer the RBAC object and TokenRequest calls; None for every other path."""
    found = _SA_PATH.match(path)
    if found:
        _namespaces_kept(cluster)
        ns, name = found.group("ns") or "", found.group("name")
        if not ns and (name is not None or method != "GET"):
            raise ApiError(404, "the server could not find the requested resource")
        if found.group("token"):
            if method != "POST":
                raise ApiError(
                    405,
                    "the server does not allow this method on the requested resource",
                    reason="MethodNotAllowed",
                )
            return 201, _token_request(cluster, ns, name, body)
        return _crud(cluster, method, "serviceaccounts", ns, name, body)
    found = _RBAC_PATH.match(path)
    if found:
        resource = found.group("res")
        namespaced = _KINDS[resource][1]
        ns = found.group("ns") or ""
        if namespaced:
            _namespaces_kept(cluster)
        if ns and not namespaced:
            raise ApiError(404, "the server could not find the requested resource")
        if namespaced and not ns and (found.group("name") is not None or method != "GET"):
            raise ApiError(404, "the server could not find the requested resource")
        return _crud(cluster, method, resource, ns, found.group("name"), body)
    return None


def _group_of(resource: str) -> str:
    return "" if resource == "serviceaccounts" else RBAC_GROUP


def _crud(
    cluster: Any, method: str, resource: str, ns: str, name: str | None, body: Any
) -> tuple[int, Any]:
    objects = state_of(cluster).objects[resource]
    kind, _namespaced = _KINDS[resource]
    group = _group_of(resource)
    api_version = f"{group}/v1" if group else "v1"
    if ns:
        cluster.require_namespace(ns)
    if name is None:
        if method == "GET":
            items = [
                copy.deepcopy(o) for (o_ns, _), o in sorted(objects.items()) if not ns or o_ns == ns
            ]
            return 200, {
                "kind": f"{kind}List",
                "apiVersion": api_version,
                "metadata": {"resourceVersion": str(cluster.resource_version)},
                "items": items,
            }
        if method != "POST":
            raise ApiError(
                405,
                "the server does not allow this method on the requested resource",
                reason="MethodNotAllowed",
            )
        obj = _checked(body, kind, api_version, resource, group)
        key = (ns, obj["metadata"]["name"])
        if key in objects:
            raise already_exists(resource, key[1], group)
        return 201, _store(cluster, objects, key, obj, ns)
    key = (ns, name)
    if method == "GET":
        if key not in objects:
            raise not_found(resource, name, group)
        return 200, copy.deepcopy(objects[key])
    if method == "PUT":
        obj = _checked(body, kind, api_version, resource, group)
        if obj["metadata"]["name"] != name:
            raise ApiError(400, "the name of the object does not match the name on the URL")
        if key not in objects:
            raise not_found(resource, name, group)
        return 200, _store(cluster, objects, key, obj, ns)
    if method == "DELETE":
        if key not in objects:
            raise not_found(resource, name, group)
        objects.pop(key)
        return 200, {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": name, "group": group, "kind": resource},
        }
    raise ApiError(
        405,
        "the server does not allow this method on the requested resource",
        reason="MethodNotAllowed",
    )


def _checked(body: Any, kind: str, api_version: str, resource: str, group: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    name = (body.get("metadata") or {}).get("name") or ""
    causes: list[tuple[str, str, str]] = []
    if not re.match(r"^[a-z0-9]([-a-z0-9.:]*[a-z0-9])?$", name):
        causes.append(
            (
                "metadata.name",
                "FieldValueRequired" if not name else "FieldValueInvalid",
                "Required value: name or generateName is required"
                if not name
                else f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of '
                "lower case alphanumeric characters, '-' or '.'",
            )
        )
    if kind in ("ClusterRoleBinding", "RoleBinding"):
        ref = body.get("roleRef") or {}
        if ref.get("kind") not in ("ClusterRole", "Role") or not ref.get("name"):
            causes.append(
                (
                    "roleRef.kind",
                    "FieldValueNotSupported",
                    'Unsupported value: "": supported values: "ClusterRole", "Role"',
                )
            )
    if kind in ("ClusterRole", "Role"):
        for i, rule in enumerate(body.get("rules") or []):
            if not isinstance(rule, dict) or not rule.get("verbs"):
                causes.append(
                    (
                        f"rules[{i}].verbs",
                        "FieldValueRequired",
                        "Required value: verbs must contain at least one value",
                    )
                )
    if causes:
        raise invalid(kind, name, causes, group)
    obj = copy.deepcopy(body)
    obj["kind"], obj["apiVersion"] = kind, api_version
    return obj


def _store(
    cluster: Any,
    objects: dict[tuple[str, str], dict[str, Any]],
    key: tuple[str, str],
    obj: dict[str, Any],
    ns: str,
) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    old = objects.get(key, {}).get("metadata", {})
    meta["uid"] = old.get("uid") or str(uuid.uuid4())  # a UUID, as the real server's
    meta["creationTimestamp"] = old.get("creationTimestamp") or time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime()
    )
    meta["resourceVersion"] = cluster.next_rv()
    if ns:
        meta["namespace"] = ns
    objects[key] = obj
    return copy.deepcopy(obj)


def _jwt(claims: dict[str, Any]) -> str:
    """A token shaped as the API server's (a JWT; the lab's signature is random bytes)."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = part(json.dumps({"alg": "RS256", "kid": "lab"}).encode())
    return f"{header}.{part(json.dumps(claims).encode())}.{part(secrets.token_bytes(32))}"


def _token_request(cluster: Any, ns: str, name: str | None, body: Any) -> dict[str, Any]:
    """authentication.k8s.io/v1 TokenRequest: a bound, time-limited token for the SA."""
    state = state_of(cluster)
    if (ns, name) not in state.objects["serviceaccounts"]:
        raise not_found("serviceaccounts", name or "")
    spec = (body or {}).get("spec") if isinstance(body, dict) else None
    if not isinstance(spec, dict):
        raise ApiError(400, "the request body must be a TokenRequest")
    seconds = spec.get("expirationSeconds")
    if seconds is None:  # kubectl create token without --duration sends null: the default hour
        seconds = 3600
    if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < MIN_TOKEN_SECONDS:
        raise invalid(
            "TokenRequest",
            name or "",
            [
                (
                    "spec.expirationSeconds",
                    "FieldValueInvalid",
                    f"Invalid value: {seconds}: may not specify a duration less than 10 minutes",
                )
            ],
            "authentication.k8s.io",
        )
    seconds = min(seconds, MAX_TOKEN_SECONDS)
    issued = time.time()
    expires = issued + seconds
    token = _jwt(
        {
            "aud": spec.get("audiences") or ["https://kubernetes.default.svc"],
            "exp": int(expires),
            "iat": int(issued),
            "nbf": int(issued),
            "iss": "https://kubernetes.default.svc.cluster.local",
            "sub": f"system:serviceaccount:{ns}:{name}",
            "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": name}},
        }
    )
    state.tokens[token] = (sa_user(ns, name or ""), expires)
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "audiences": spec.get("audiences") or ["https://kubernetes.default.svc"],
            "expirationSeconds": seconds,
            "boundObjectRef": spec.get("boundObjectRef"),
        },
        "status": {
            "token": token,
            "expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires)),
        },
    }
