"""Token authentication and the permission classes of the API, one per role.

The API takes only `Authorization: Token <token>` (never the pages' session cookie, so no
CSRF surface). A missing or bad token is not an error by itself: reads are open to anyone and
ignore it; the permission classes of the calls that need a role answer 401 (with why) or 403.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from rest_framework import exceptions, permissions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from dashboard.domain import tokens
from dashboard.domain.models import ApiToken
from dashboard.domain.roles import vendor_has_plugin

MISSING = "missing token: send the header 'Authorization: Token <token>'"
INVALID = "invalid or revoked token"


def bearer(request: HttpRequest | Request) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() in ("token", "bearer") and value.strip():
        return value.strip()
    return None


class ApiTokenAuthentication(BaseAuthentication):
    """`request.auth` is the ApiToken; `request.user` its maintainer (anonymous for a vendor)."""

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        raw = bearer(request)
        if raw is None:
            return None
        token = tokens.authenticate(raw)
        if token is None:
            request._token_refused = INVALID  # type: ignore[attr-defined]
            return None
        return (token.user or AnonymousUser()), token

    def authenticate_header(self, request: Request) -> str:
        return "Token"  # makes DRF answer 401 (not 403) when a token is missing or bad


def token_of(request: Request) -> ApiToken:
    """The request's token; raises 401 with the reason when there is none."""
    token = request.auth
    if isinstance(token, ApiToken):
        return token
    raise exceptions.NotAuthenticated(
        getattr(request._request, "_token_refused", None)
        or getattr(request, "_token_refused", None)
        or MISSING
    )


class TokenRole(permissions.BasePermission):
    """Any valid token whose role is one of `roles` (all roles when empty)."""

    roles: tuple[str, ...] = ()

    def has_permission(self, request: Request, view: Any) -> bool:
        token = token_of(request)
        if self.roles and token.role not in self.roles:
            self.message = f"this call needs a {' or '.join(self.roles)} token"
            return False
        return True


class AnyToken(TokenRole):
    roles = ()


class MaintainerToken(TokenRole):
    roles = (ApiToken.Role.MAINTAINER,)


class VendorToken(TokenRole):
    roles = (ApiToken.Role.VENDOR,)


class VendorOrMaintainerToken(TokenRole):
    roles = (ApiToken.Role.VENDOR, ApiToken.Role.MAINTAINER)


class ClusterOwnerOrMaintainer(AnyToken):
    """A cluster's owning vendor (still the vendor of its plugin) or a maintainer (object
    permission on a Cluster)."""

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        token = token_of(request)
        if token.role == ApiToken.Role.MAINTAINER or (
            token.vendor_id
            and token.vendor_id == obj.owner_id
            and vendor_has_plugin(token.vendor_id, obj.plugin_id)
        ):
            return True
        self.message = f"only the owner of cluster {obj.name} or a maintainer may run its battery"
        return False
