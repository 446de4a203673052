"""A least-privilege, time-bound kubeconfig for the battery, and its renewal.

`make_kubeconfig` (the management command) uses the caller's own access to a cluster (their
kubeconfig context: exec plugins of GKE/EKS/AKS are fine *here*, on the caller's machine) to
apply `deploy/rbac/`, ask the TokenRequest API for a ServiceAccount token with an expiry, and
write a kubeconfig with that token inline: the only kind registration accepts.

Renewal needs no human: the role also lets the ServiceAccount request a token for itself
(`create serviceaccounts/token`, that one account only, `deploy/rbac/renew-role.yaml`), so
the dashboard re-issues a registered cluster's token once a third of its lifetime is left
(beat task `renew_cluster_tokens`, every 15 minutes) and keeps the old one until the new one
has answered GET /version. A failed renewal leaves the cluster as it was and is tried again at
the next beat, for days before the token expires.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from kernel.kube import api_error_message
from kernel.kubeconfig import KubeconfigError, api_client_from_kubeconfig, validate_kubeconfig

log = logging.getLogger(__name__)

RBAC_DIR = Path(__file__).resolve().parent.parent / "deploy" / "rbac"
DEFAULT_NAMESPACE = "sctp-battery"
SERVICE_ACCOUNT = "sctp-battery"
DEFAULT_DURATION = 7 * 24 * 3600
# The TokenRequest API refuses less than 10 minutes; renewal runs every 15 minutes and starts
# with a third of the lifetime left, so a token must live long enough for several tries.
MIN_DURATION = 3600
RENEW_WHEN_LEFT = 1 / 3  # renew once a third of the token's lifetime is left
_DURATION_RE = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SA_SUB = re.compile(r"^system:serviceaccount:([a-z0-9.-]+):([a-z0-9.-]+)$")


class AccessError(Exception):
    """Applying the RBAC or issuing a token failed; the message says what to do."""


def parse_duration(text: str) -> int:
    """`90m`, `24h`, `7d` (or plain seconds) -> seconds, at least 10 minutes."""
    text = str(text).strip()
    found = _DURATION_RE.match(text)
    if found:
        seconds = int(found.group(1)) * _UNITS[found.group(2)]
    elif text.isdigit():
        seconds = int(text)
    else:
        raise AccessError(f"duration {text!r} is not like 90m, 24h or 7d")
    if seconds < MIN_DURATION:
        raise AccessError(
            "the duration must be at least 1h (the dashboard renews tokens every 15 minutes, "
            "once a third of their lifetime is left)"
        )
    return seconds


def rbac_objects(
    namespace: str = DEFAULT_NAMESPACE, node_access: bool = False
) -> list[dict[str, Any]]:
    """The manifests of deploy/rbac (and deploy/rbac/node-access), moved to `namespace`."""
    dirs = [RBAC_DIR] + ([RBAC_DIR / "node-access"] if node_access else [])
    objects: list[dict[str, Any]] = []
    for directory in dirs:
        listed = yaml.safe_load((directory / "kustomization.yaml").read_text())["resources"]
        for name in listed:
            for doc in yaml.safe_load_all((directory / name).read_text()):
                if doc:
                    objects.append(_moved(doc, namespace))
    return objects


def _moved(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    if obj["kind"] == "Namespace":
        meta["name"] = namespace
    elif "namespace" in meta:
        meta["namespace"] = namespace
    for subject in obj.get("subjects") or []:
        if subject.get("kind") == "ServiceAccount":
            subject["namespace"] = namespace
    return obj


def apply_rbac(api: k8s.ApiClient, objects: list[dict[str, Any]]) -> list[str]:
    """Create each object, or replace it when it exists (roles follow the shipped file);
    namespaces and ServiceAccounts that exist are kept. One line per object."""
    core, rbac = k8s.CoreV1Api(api), k8s.RbacAuthorizationV1Api(api)
    done: list[str] = []
    for obj in objects:
        kind, name = obj["kind"], obj["metadata"]["name"]
        ns = obj["metadata"].get("namespace")
        create, replace = _calls(core, rbac, kind, name, ns)
        where = f"{kind} {ns + '/' if ns else ''}{name}"
        try:
            create(obj)
            done.append(f"{where} created")
        except ApiException as exc:
            if exc.status != 409:
                raise AccessError(f"creating {where}: {api_error_message(exc)}") from exc
            if replace is None:
                done.append(f"{where} exists")
                continue
            try:
                replace(obj)
            except ApiException as exc2:
                raise AccessError(f"updating {where}: {api_error_message(exc2)}") from exc2
            done.append(f"{where} updated")
    return done


_Call = Callable[[Any], object]  # a manifest dict: the client serializes it as it is


def _calls(
    core: k8s.CoreV1Api, rbac: k8s.RbacAuthorizationV1Api, kind: str, name: str, ns: str
) -> tuple[_Call, _Call | None]:
    """How to create and to replace one object (a function, so each lambda keeps its names)."""
    calls: dict[str, tuple[_Call, _Call | None]] = {
        "Namespace": (lambda o: core.create_namespace(o), None),
        "ServiceAccount": (lambda o: core.create_namespaced_service_account(ns, o), None),
        "ClusterRole": (
            lambda o: rbac.create_cluster_role(o),
            lambda o: rbac.replace_cluster_role(name, o),
        ),
        "ClusterRoleBinding": (
            lambda o: rbac.create_cluster_role_binding(o),
            lambda o: rbac.replace_cluster_role_binding(name, o),
        ),
        "Role": (
            lambda o: rbac.create_namespaced_role(ns, o),
            lambda o: rbac.replace_namespaced_role(name, ns, o),
        ),
        "RoleBinding": (
            lambda o: rbac.create_namespaced_role_binding(ns, o),
            lambda o: rbac.replace_namespaced_role_binding(name, ns, o),
        ),
    }
    return calls[kind]


def request_token(
    api: k8s.ApiClient, namespace: str, name: str, seconds: int
) -> tuple[str, datetime]:
    """A TokenRequest for the ServiceAccount; (token, expiry as the API server set it)."""
    body = k8s.AuthenticationV1TokenRequest(
        spec=k8s.V1TokenRequestSpec(audiences=[], expiration_seconds=seconds)
    )
    try:
        answer = k8s.CoreV1Api(api).create_namespaced_service_account_token(name, namespace, body)
    except ApiException as exc:
        raise AccessError(
            f"the TokenRequest for {namespace}/{name} failed: {api_error_message(exc)}"
        ) from exc
    status = answer.status
    if status is None or not status.token or status.expiration_timestamp is None:
        raise AccessError(f"the TokenRequest for {namespace}/{name} answered no token")
    expires = status.expiration_timestamp
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    return status.token, expires


@dataclass
class Target:
    """Where the kubeconfig points: the caller's server and how it is trusted."""

    server: str
    ca_data: str | None = None  # base64 PEM, inline
    insecure: bool = False
    tls_server_name: str | None = None


def target_of(api: k8s.ApiClient) -> Target:
    """The server and CA of the caller's client, the CA made inline (registration reads no files)."""
    conf = api.configuration
    ca_data = None
    if conf.ssl_ca_cert:
        ca_data = base64.b64encode(Path(conf.ssl_ca_cert).read_bytes()).decode()
    return Target(
        server=conf.host,
        ca_data=ca_data,
        insecure=not conf.verify_ssl,
        tls_server_name=getattr(conf, "tls_server_name", None) or None,
    )


def kubeconfig_text(
    target: Target, token: str, cluster_name: str, namespace: str, expires: datetime
) -> str:
    cluster: dict[str, Any] = {"server": target.server}
    if target.ca_data:
        cluster["certificate-authority-data"] = target.ca_data
    if target.insecure:
        cluster["insecure-skip-tls-verify"] = True
    if target.tls_server_name:
        cluster["tls-server-name"] = target.tls_server_name
    user = f"{SERVICE_ACCOUNT}@{cluster_name}"
    data = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": cluster_name,
                "context": {"cluster": cluster_name, "user": user, "namespace": namespace},
            }
        ],
        "current-context": cluster_name,
        "preferences": {},
    }
    header = (
        f"# SCTP battery access to {cluster_name}: ServiceAccount {namespace}/"
        f"{SERVICE_ACCOUNT}, token valid until {expires:%Y-%m-%dT%H:%M:%SZ}.\n"
        "# Register it as is; the dashboard renews the token before it expires.\n"
    )
    return header + yaml.safe_dump(data, sort_keys=False)


def token_claims(token: str) -> dict[str, Any] | None:
    """The payload of a ServiceAccount JWT (not verified: only to read `sub` and `exp`)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


@dataclass
class TokenInfo:
    namespace: str
    name: str
    issued: float
    expires: float

    def renew_due(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        return self.expires - now <= (self.expires - self.issued) * RENEW_WHEN_LEFT


def token_info(kubeconfig: str) -> TokenInfo | None:
    """The ServiceAccount and lifetime of the kubeconfig's token; None for other credentials."""
    try:
        data = yaml.safe_load(kubeconfig) or {}
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    current = data.get("current-context")
    contexts = {
        c.get("name"): c.get("context") or {}
        for c in data.get("contexts") or []
        if isinstance(c, dict)
    }
    users = {
        u.get("name"): u.get("user") or {} for u in data.get("users") or [] if isinstance(u, dict)
    }
    token = users.get(contexts.get(current, {}).get("user"), {}).get("token")
    claims = token_claims(token) if isinstance(token, str) else None
    if not claims or not isinstance(claims.get("exp"), int):
        return None
    found = _SA_SUB.match(str(claims.get("sub", "")))
    if not found:
        return None
    iat = claims.get("iat")
    issued = iat if isinstance(iat, int) else claims["exp"] - DEFAULT_DURATION
    return TokenInfo(found.group(1), found.group(2), float(issued), float(claims["exp"]))


def renewed_kubeconfig(kubeconfig: str, seconds: int | None = None) -> tuple[str, datetime]:
    """The kubeconfig with a fresh token, requested with its current one; AccessError else.

    The new token is checked (GET /version) before it is returned, so a caller that stores it
    never swaps a working credential for a broken one.
    """

    info = token_info(kubeconfig)
    if info is None:
        raise AccessError(
            "the kubeconfig's credential is not a ServiceAccount token "
            "(make it with manage.py make_kubeconfig)"
        )
    lifetime = seconds or max(MIN_DURATION, int(info.expires - info.issued))
    api = api_client_from_kubeconfig(kubeconfig, request_timeout=15)
    try:
        token, expires = request_token(api, info.namespace, info.name, lifetime)
    finally:
        api.close()
    data = yaml.safe_load(kubeconfig)
    current = data["current-context"]
    user = next(c["context"]["user"] for c in data["contexts"] if c["name"] == current)
    for entry in data["users"]:
        if entry["name"] == user:
            entry["user"]["token"] = token
    text = yaml.safe_dump(data, sort_keys=False)
    try:
        validate_kubeconfig(text, check_reachable=True)
    except KubeconfigError as exc:
        raise AccessError(f"the renewed token does not work: {exc}") from exc
    return text, expires
