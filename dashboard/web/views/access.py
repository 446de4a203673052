"""Role checks for pages: anonymous users are sent to log in, the wrong role gets a 403.

Every page action goes through one of these decorators; the templates only hide buttons,
they never decide who may do what.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.domain.roles import is_maintainer, vendor_ids

View = Callable[..., HttpResponse]


class AuthenticatedRequest(HttpRequest):
    """The request a view behind one of these decorators receives: its user has logged in."""

    user: User


def forbidden(request: HttpRequest, why: str) -> HttpResponse:
    return render(request, "errors/403.html", {"why": why}, status=403)


def _requires(check: Callable[[Any], bool], why: str) -> Callable[[View], View]:
    def decorator(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not check(request.user):
                return forbidden(request, why)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


maintainer_required = _requires(is_maintainer, "Only maintainers may do this.")
vendor_required = _requires(
    lambda u: bool(vendor_ids(u)), "Only members of a plugin vendor may do this."
)
login_required = _requires(lambda u: True, "")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a refused form gets the styled 403 page too, saying what to do."""
    return forbidden(
        request,
        "The form was refused: it is too old or came from another site. "
        "Go back, reload the page and send it again.",
    )
