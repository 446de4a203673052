"""Kubernetes `Status` errors, shaped as a real kube-apiserver sends them."""

from __future__ import annotations

import json
from typing import Any

# HTTP code -> the `reason` a real API server puts beside it.
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "AlreadyExists",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An error answer; `status()` renders it as a `v1.Status`."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or _REASONS.get(code, "Unknown")
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(
        404,
        f'{qualified} "{name}" not found',
        details={"name": name, "group": group, "kind": resource}
        if group
        else {"name": name, "kind": resource},
    )


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(
        409,
        f'{qualified} "{name}" already exists',
        details={"name": name, "group": group, "kind": resource}
        if group
        else {"name": name, "kind": resource},
    )


def invalid(kind: str, name: str, causes: list[tuple[str, str, str]], group: str = "") -> ApiError:
    """422 Invalid, as apimachinery's `NewInvalid` builds it.

    `causes` are (field, cause type, ErrorBody) triples. The message aggregates
    "field: body" strings the way `field.ErrorList.ToAggregate` does (duplicates dropped, more
    than one wrapped in brackets); `details.causes` keeps every cause; an empty group is
    omitted, as `omitempty` does on a real server.
    """
    qualified = f"{kind}.{group}" if group else kind
    parts: list[str] = []
    for field, _reason, text in causes:
        part = f"{field}: {text}" if field else text
        if part not in parts:
            parts.append(part)
    quoted = json.dumps(name)
    if not parts:
        message = f"{qualified} {quoted} is invalid"
    elif len(parts) == 1:
        message = f"{qualified} {quoted} is invalid: {parts[0]}"
    else:
        message = f"{qualified} {quoted} is invalid: [" + ", ".join(parts) + "]"
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [
        {"reason": reason, "message": text, "field": field} for field, reason, text in causes
    ]
    return ApiError(422, message, details=details)
