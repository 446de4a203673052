"""Telling an RBAC refusal apart from every other 403, and naming the missing permission.

A 403 from Pod Security admission or an OpenShift SCC means the cluster gives no node access:
tests that need it are skipped. A 403 from the RBAC authorizer means the battery's own
credentials lack a permission: that is the harness broken (`error`), never a skip, and the
result names the permission so the vendor can fix the role. The RBAC authorizer words every
refusal the same way (k8s.io/apiserver responsewriters.forbiddenMessage):
`User "U" cannot VERB resource "RES[/SUB]" in API group "G" in the namespace "NS"` (or
`at the cluster scope`), and `User "U" cannot VERB path "/URL"` for non-resource URLs.
"""

from __future__ import annotations

import json
import re

from kubernetes.client.exceptions import ApiException

from workers.kube import api_error_message

_DENIED = re.compile(
    r'User "[^"]*" cannot (?P<verb>[a-z]+) (?:resource "(?P<resource>[^"]+)" in API group '
    r'"(?P<group>[^"]*)"|path "(?P<path>[^"]+)")'
)
PREFIX = "missing RBAC permission: "


def missing_permission(exc: BaseException) -> str | None:
    """`VERB RESOURCE[.GROUP]` (e.g. `get pods/log`, `create networkpolicies.networking.k8s.io`,
    `get /version/`) when `exc` is an RBAC refusal; None for any other error."""
    if not isinstance(exc, ApiException) or exc.status != 403:
        return None
    try:
        body = json.loads(exc.body or "{}")
        message = str(body.get("message", "")) if isinstance(body, dict) else ""
    except (ValueError, TypeError):
        message = str(exc.body or "")
    found = _DENIED.search(message)
    if not found:
        return None
    if found.group("path"):
        return f"{found.group('verb')} {found.group('path')}"
    resource, group = found.group("resource"), found.group("group")
    if group:
        base, _, sub = resource.partition("/")
        resource = f"{base}.{group}/{sub}" if sub else f"{base}.{group}"
    return f"{found.group('verb')} {resource}"


def denial_reason(exc: BaseException) -> str | None:
    """`missing RBAC permission: VERB RESOURCE (403 Forbidden: …)`, or None when not RBAC."""
    permission = missing_permission(exc)
    if permission is None:
        return None
    assert isinstance(exc, ApiException)
    return f"{PREFIX}{permission} ({api_error_message(exc)})"
