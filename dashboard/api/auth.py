"""Token authentication for the API, separate from the session login of the pages."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, JsonResponse

from dashboard.models import ApiToken


def error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def bearer(request: HttpRequest) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() in ("token", "bearer") and value.strip():
        return value.strip()
    return None


def token_required(*roles: str) -> Callable:
    """401 without a valid token, 403 when the token's role is not one of `roles`."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any):
            raw = bearer(request)
            if raw is None:
                return error(401, "missing token: send the header 'Authorization: Token <token>'")
            token = ApiToken.authenticate(raw)
            if token is None:
                return error(401, "invalid or revoked token")
            if roles and token.role not in roles:
                return error(403, f"this call needs a {' or '.join(roles)} token")
            request.api_token = token  # type: ignore[attr-defined]
            return view(request, *args, **kwargs)

        return wrapper

    return decorator
