"""Every API error is the contract's `{"error": "…"}` (plus named extras), whatever raised it."""

from __future__ import annotations

import math
from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler


class ApiError(exceptions.APIException):
    """A refusal from the domain (SubmissionError, ClusterError, RunRequestError) with its status."""

    def __init__(self, status_code: int, message: str, **extra: Any) -> None:
        super().__init__(detail=message)
        self.status_code = status_code
        self.extra = {k: v for k, v in extra.items() if v is not None}


class TooManyRequests(exceptions.Throttled):
    wait: int  # set by Throttled.__init__ (its stubs do not declare it)

    def __init__(self, wait: float, message: str) -> None:
        super().__init__(wait=math.ceil(max(1.0, wait)))
        self.message = message


def flatten(detail: Any, field: str = "") -> list[str]:
    """DRF's nested error details as 'field: message' lines."""
    if isinstance(detail, dict):
        out: list[str] = []
        for key, value in detail.items():
            name = "" if key in ("detail", "non_field_errors") else str(key)
            out += flatten(value, f"{field}.{name}" if field and name else field or name)
        return out
    if isinstance(detail, list):
        return [line for item in detail for line in flatten(item, field)]
    return [f"{field}: {detail}" if field else str(detail)]


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = exception_handler(exc, context)
    if response is None:
        return None  # a bug: Django's 500 handling, logged
    if isinstance(exc, TooManyRequests):
        wait = int(exc.wait or 1)
        response.data = {"error": f"{exc.message}; retry in {wait} s", "retry_after": wait}
        response["Retry-After"] = str(wait)
        return response
    if response.status_code == status.HTTP_404_NOT_FOUND and not isinstance(exc, ApiError):
        response.data = {"error": "not found"}
        return response
    body: dict[str, Any] = {"error": "; ".join(flatten(response.data)) or "refused"}
    if isinstance(exc, ApiError):
        body.update(exc.extra)
    response.data = body
    return response
