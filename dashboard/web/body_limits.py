"""Request bodies judged by their headers before a byte of them is read.

Django spools a multipart upload to disk in full before a view can look at it (and CSRF
checking reads the form first), so a 400 MB body was written out before its sender was told
403. Here, before anything reads the body:

- a `Content-Length` over the path's limit is answered 413 (JSON on the API): uploads may
  carry `SUBMISSION_MAX_BYTES` plus the form around the file, everything else
  `REQUEST_MAX_BYTES`;
- a page POST with a body by someone not logged in beyond a log-in form's size is answered 401
  without reading (the API refuses a missing or bad token itself, also unread, after counting
  the attempt in its throttles).

A pure function (`refusal`) decides; the middleware only applies it, so an API framework can
call the same function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from dashboard.domain import tokens
from dashboard.web.api.auth import bearer

API_PREFIX = "/api/v1/"
UPLOAD_PATHS = ("/api/v1/submissions/", "/submissions/new/")
FORM_PATHS = ("/submissions/new/", "/clusters/new/")  # pages whose forms carry a file
FORM_OVERHEAD = 1024 * 1024  # the other fields and multipart boundaries around the file
ANONYMOUS_FORM_BYTES = 64 * 1024  # a log-in form, a search: nothing an anonymous user uploads


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str


def body_limit(path: str) -> int:
    if path in UPLOAD_PATHS:
        return int(settings.SUBMISSION_MAX_BYTES) + FORM_OVERHEAD
    if path == "/api/v1/agent-runs/":  # a run with its evidence (dashboard/domain/agent_runs.py)
        return int(getattr(settings, "AGENT_RUN_MAX_BYTES", settings.REQUEST_MAX_BYTES))
    return int(settings.REQUEST_MAX_BYTES)


def declared_length(request: HttpRequest) -> int | None:
    """The Content-Length, 0 when absent, None when it is not a number."""
    raw = request.META.get("CONTENT_LENGTH") or "0"
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 0 else None


def refusal(request: HttpRequest, *, authenticated: Callable[[], bool]) -> Refusal | None:
    """Why this request's body is refused unread, or None. `authenticated` is asked only when needed."""
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return None
    length = declared_length(request)
    if length is None:
        return Refusal(400, "the Content-Length header is not a number")
    limit = body_limit(request.path)
    if length > limit:
        return Refusal(
            413, f"the request body ({length} bytes) is larger than the {limit} bytes allowed here"
        )
    # An API POST without a valid token is refused by the API itself, unread: its views run the
    # throttles (per token and address, so guessing tokens is limited) and then the permission
    # classes before anything touches the body (dashboard/web/api/views.py ApiView.initial;
    # tests/web/api/test_api_boundaries.py posts to every operation to check it).
    if (
        length > ANONYMOUS_FORM_BYTES
        and not request.path.startswith(API_PREFIX)
        and not authenticated()
    ):
        return Refusal(401, "log in before uploading")
    return None


def _authenticated(request: HttpRequest) -> bool:
    if request.path.startswith(API_PREFIX):
        token = bearer(request)
        if not token:
            return False
        return tokens.authenticate(token) is not None
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated)


class BodyGuardMiddleware:
    """Applies `refusal` after authentication and before CSRF (which reads the form) or any view."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refused = refusal(request, authenticated=lambda: _authenticated(request))
        if refused is None:
            return self.get_response(request)
        if request.path.startswith(API_PREFIX):
            response: HttpResponse = JsonResponse({"error": refused.message}, status=refused.status)
        elif refused.status == 413 and request.path in FORM_PATHS:
            # A form's over-size body: a page that says so and the limit, not a line of text
            # (issue 39). The body stays unread, so the values come back with the browser's Back;
            # forms.js refuses the file inside the form before it is sent.
            response = render(
                request,
                "errors/413.html",
                {"why": refused.message.capitalize(), "limit": body_limit(request.path)},
                status=413,
            )
        else:
            response = HttpResponse(
                refused.message, status=refused.status, content_type="text/plain; charset=utf-8"
            )
        return response
