"""Public pages made from the published evaluation (the readiness page, the matrix).

Everything such a page shows changes only with a new publication (evidence changes bump it, and
beat makes one every minute), so its body is rendered once per publication in each process, and
per role where it differs. The frame around it (who is logged in, pending messages) is rendered
per request; visitors with neither a session nor a pending message (READMEs' readers, crawlers:
most of the traffic) all get the same whole page, also made once per publication. Relative times
("3 minutes ago") are those of the publication, at most READINESS_MAX_AGE_SECONDS old.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django.utils.safestring import SafeString

from dashboard.domain import publication
from dashboard.domain.roles import is_maintainer

FRAME = "front/published.html"

# (the published evaluation, whether the reader is a maintainer) -> the page's body
Body = Callable[[dict[str, Any], bool], SafeString]


def first_visit(request: HttpRequest) -> bool:
    """No session and no pending message: the page is the same for every such visitor."""
    return (
        settings.SESSION_COOKIE_NAME not in request.COOKIES
        and CookieStorage.cookie_name not in request.COOKIES
    )


def published_page(
    request: HttpRequest, name: str, title: str, body: Body, *, by_role: bool = False
) -> HttpResponse:
    def frame(content: SafeString) -> HttpResponse:
        return render(request, FRAME, {"title": title, "body": content})

    if request.method == "GET" and first_visit(request):
        page = publication.derived((name, "visitor"), lambda data: frame(body(data, False)).content)
        response = HttpResponse(page)
    else:
        maintainer = by_role and is_maintainer(request.user)
        response = frame(
            publication.derived((name, maintainer), lambda data: body(data, maintainer))
        )
    patch_vary_headers(response, ("Cookie",))  # a shared cache must not mix the two
    return response
