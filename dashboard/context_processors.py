from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from .roles import is_maintainer, role_of


def roles(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {"role": role_of(user), "is_maintainer": is_maintainer(user)}
