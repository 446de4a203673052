"""The login lockout (and the fixed-window limiter it counts with), in Django's cache.

The token API's limits are DRF throttles (dashboard/api/throttles.py); both key a client by
`client_ip` below.

Fixed windows: a counter per (scope, identity, window) whose key names the window, so that it
expires by itself and a backend that resets a key's timeout on `incr` cannot stretch it. When
the cache is unreachable (Redis stopped) the limiter fails open: serving the dashboard matters
more than counting, and the outage is logged.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Limit:
    count: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> Limit:
        """'120/60' → 120 per 60 seconds."""
        count, _, seconds = text.partition("/")
        return cls(int(count), int(seconds or 60))


class Limiter:
    """Counts hits of one scope per identity; says how long to wait once over the limit."""

    def __init__(self, scope: str, limit: Limit) -> None:
        self.scope = scope
        self.limit = limit

    def _key(self, identity: str, at: float) -> tuple[str, float]:
        window = math.floor(at / self.limit.seconds)
        ends = (window + 1) * self.limit.seconds
        digest = hashlib.sha256(identity.encode()).hexdigest()[:32]  # no raw tokens or names in the cache
        return f"rl:{self.scope}:{digest}:{window}", ends

    def hit(self, identity: str) -> float:
        """Counts one hit. Returns 0 when within the limit, else the seconds until the window ends."""
        at = time.time()
        key, ends = self._key(identity, at)
        ttl = max(1, math.ceil(ends - at))
        try:
            cache = caches["default"]
            if cache.add(key, 1, ttl):
                count = 1
            else:
                count = cache.incr(key)
                cache.touch(key, ttl)  # the database cache's incr() resets the timeout
        except ValueError:  # the key expired between add() and incr(): a new window
            return 0
        except Exception as exc:
            log.warning("rate limit %s not counted, the cache is unavailable: %s", self.scope, exc)
            return 0
        return 0 if count <= self.limit.count else max(1.0, ends - at)

    def blocked(self, identity: str) -> float:
        """Like hit(), without counting: 0 when allowed, else the seconds to wait."""
        at = time.time()
        key, ends = self._key(identity, at)
        try:
            count = caches["default"].get(key, 0)
        except Exception as exc:
            log.warning("rate limit %s not checked, the cache is unavailable: %s", self.scope, exc)
            return 0
        return 0 if count < self.limit.count else max(1.0, ends - at)

    def reset(self, identity: str) -> None:
        key, _ = self._key(identity, time.time())
        try:
            caches["default"].delete(key)
        except Exception as exc:
            log.warning("rate limit %s not reset, the cache is unavailable: %s", self.scope, exc)


def client_ip(request: HttpRequest) -> str:
    header = getattr(settings, "RATE_LIMIT_IP_HEADER", "")
    if header:
        # The last hop is the one the trusted proxy appended; earlier ones are the client's word.
        forwarded = [h.strip() for h in request.META.get(header, "").split(",") if h.strip()]
        if forwarded:
            return forwarded[-1]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def login_limiter() -> Limiter:
    return Limiter("login", Limit.parse(settings.LOGIN_RATE_LIMIT))


def login_identity(request: HttpRequest) -> str:
    return f"{request.POST.get('username', '').strip().lower()}|{client_ip(request)}"


class LockedOutForm(AuthenticationForm):
    """The login form while locked out: it refuses without asking the password backend."""

    def __init__(self, *args: Any, message: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.message = message

    def clean(self) -> dict[str, Any]:
        raise forms.ValidationError(self.message, code="locked_out")


class RateLimitedLoginView(LoginView):
    """Django's LoginView, refusing a user name + address after too many failures."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        identity = login_identity(request)
        wait = login_limiter().blocked(identity)
        if wait:
            minutes = max(1, math.ceil(wait / 60))
            form = LockedOutForm(
                request, data=request.POST,
                message=(f"Too many failed log-ins for this user from your address. "
                         f"Try again in {minutes} minute{'s' if minutes != 1 else ''}."),
            )
            form.is_valid()
            response = self.render_to_response(self.get_context_data(form=form), status=429)
            response["Retry-After"] = str(math.ceil(wait))
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        login_limiter().hit(login_identity(self.request))
        return super().form_invalid(form)

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        login_limiter().reset(login_identity(self.request))
        return super().form_valid(form)
