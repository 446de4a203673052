from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from dashboard.domain.roles import is_maintainer, role_of


def roles(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    path = getattr(request, "path", "/") or "/"
    # The navigation's current section: "/" for the readiness page, else the path's first part.
    section = "/" if path == "/" else path.strip("/").split("/")[0]
    return {"role": role_of(user), "is_maintainer": is_maintainer(user), "section": section}
