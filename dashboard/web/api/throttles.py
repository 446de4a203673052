"""DRF throttles for the token API: POSTs per token and per client address.

Reads are public and cheap, so only POSTs count. Rates come from the settings the hand-written
limiter read ("N/S": N requests in S seconds, `API_RATE_LIMIT_TOKEN`, `API_RATE_LIMIT_IP`),
looked up per request so that a changed setting applies at once. The client address is the
one the login lockout uses (`dashboard.web.ratelimit.client_ip`): `REMOTE_ADDR`, or the last hop
of `RATE_LIMIT_IP_HEADER` when a trusted proxy sets it; `X-Forwarded-For` is never believed
otherwise (DRF's own `get_ident` would). When the cache is unreachable the throttle lets the
request through and logs it: serving the dashboard matters more than counting.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from dashboard.web.api.auth import bearer
from dashboard.web.ratelimit import Limit, client_ip

log = logging.getLogger(__name__)


class PostThrottle(SimpleRateThrottle):
    setting = ""
    message = ""

    def get_rate(self) -> str:
        return getattr(settings, self.setting)

    def parse_rate(self, rate: str | None) -> tuple[int | None, int | None]:
        if rate is None:
            return None, None
        limit = Limit.parse(rate)
        return limit.count, limit.seconds

    def allow_request(self, request: Request, view: Any) -> bool:
        if request.method != "POST":
            return True
        # the rate is read per request (settings may change); DRF reads it once in __init__
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        try:
            return super().allow_request(request, view)
        except Exception as exc:  # the cache is down: fail open
            log.warning("rate limit %s not counted, the cache is unavailable: %s", self.scope, exc)
            return True

    def identity(self, request: Request) -> str | None:
        raise NotImplementedError

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        ident = self.identity(request)
        if ident is None:
            return None
        digest = hashlib.sha256(ident.encode()).hexdigest()[:32]  # no raw tokens in the cache
        return f"rl:{self.scope}:{digest}"

    def describe(self) -> str:
        return f"{self.message} (limit {self.rate} s)"


class TokenThrottle(PostThrottle):
    scope = "api-token"
    setting = "API_RATE_LIMIT_TOKEN"
    message = "too many requests with this token"

    def identity(self, request: Request) -> str | None:
        return bearer(request)


class AddressThrottle(PostThrottle):
    scope = "api-ip"
    setting = "API_RATE_LIMIT_IP"
    message = "too many requests from this address"

    def identity(self, request: Request) -> str | None:
        return client_ip(request._request if isinstance(request, Request) else request)

    def get_ident(self, request: Request) -> str:
        return client_ip(request._request)
