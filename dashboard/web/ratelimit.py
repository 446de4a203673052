"""The log-in lockout and the cluster registration limit, counted in Django's cache.

The token API's request limits are DRF throttles (dashboard/web/api/throttles.py); all of them key
a client by `client_ip` below.

Fixed windows: a counter per (scope, identity, window) whose key names the window, so that it
expires by itself and a backend that resets a key's timeout on `incr` cannot stretch it. When
the cache is unreachable (Redis stopped) the limiter fails open: serving the dashboard matters
more than counting, and the outage is logged.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import caches
from django.core.exceptions import PermissionDenied
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
        digest = hashlib.sha256(identity.encode()).hexdigest()[
            :32
        ]  # no raw tokens or names in the cache
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


def _networks(text: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(n.strip(), strict=False) for n in text.split(",") if n.strip()]


def in_networks(address: str, networks: str) -> bool:
    """Whether `address` (an IP, maybe with a port or brackets) is in the comma-separated CIDRs."""
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    return any(ip in net for net in _networks(networks) if net.version == ip.version)


def from_trusted_proxy(request: HttpRequest) -> bool:
    """The request's peer is one of RATE_LIMIT_TRUSTED_PROXIES (the ingress, compose's nginx)."""
    return in_networks(
        request.META.get("REMOTE_ADDR", ""), getattr(settings, "RATE_LIMIT_TRUSTED_PROXIES", "")
    )


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, unless the peer is a trusted proxy and sets
    RATE_LIMIT_IP_HEADER. Then the header's hops are read from the right (the proxy appends what it
    saw), skipping trusted proxies: the first other hop is the client; what lies left of it is the
    client's word and never believed. A header from any other peer is ignored."""
    remote = request.META.get("REMOTE_ADDR", "") or "unknown"
    header = getattr(settings, "RATE_LIMIT_IP_HEADER", "")
    if not header or not from_trusted_proxy(request):
        return remote
    trusted = getattr(settings, "RATE_LIMIT_TRUSTED_PROXIES", "")
    hops = [h.strip() for h in request.META.get(header, "").split(",") if h.strip()]
    for hop in reversed(hops):
        if not in_networks(hop, trusted):
            return hop
    return hops[0] if hops else remote


def registration_wait(request: HttpRequest, identity: str) -> float:
    """Counts one cluster registration attempt (page or API): 0 when allowed, else seconds to wait.

    Each attempt makes the dashboard resolve and contact a server someone named, so attempts
    count per account (`identity`: a user name or token) and per client address, whether they
    succeed or not.
    """
    limit = Limit.parse(settings.CLUSTER_REGISTER_RATE_LIMIT)
    return max(
        Limiter("register-user", limit).hit(identity),
        Limiter("register-ip", limit).hit(client_ip(request)),
    )


def login_limiter() -> Limiter:
    return Limiter("login", Limit.parse(settings.LOGIN_RATE_LIMIT))


def _login_counters(request: HttpRequest, username: str) -> list[tuple[Limiter, str, bool]]:
    """(limiter, identity, cleared by a successful log-in): the pair, the user name, the address.

    The address's counter is never cleared by a success: logging into one's own account must
    not buy more guesses at other people's.
    """
    name, ip = (username or "").strip().lower(), client_ip(request)
    return [
        (login_limiter(), f"{name}|{ip}", True),
        (Limiter("login-user", Limit.parse(settings.LOGIN_RATE_LIMIT_USER)), name, True),
        (Limiter("login-ip", Limit.parse(settings.LOGIN_RATE_LIMIT_IP)), ip, False),
    ]


def _known_key(request: HttpRequest, username: str) -> str:
    name = (username or "").strip().lower()
    digest = hashlib.sha256(f"{name}|{client_ip(request)}".encode()).hexdigest()[:32]
    return f"rl:login-known:{digest}"


def known_login(request: HttpRequest, username: str) -> bool:
    """This user name has logged in successfully from this address before (LOGIN_KNOWN_SECONDS)."""
    try:
        return bool(caches["default"].get(_known_key(request, username)))
    except Exception as exc:
        log.warning("known log-ins not checked, the cache is unavailable: %s", exc)
        return False


def login_lock_wait(request: HttpRequest, username: str) -> float:
    """0 when this user name may try to log in from this address, else the seconds to wait.

    The account's own lockout (the user name, and the name from this address) always holds. The
    address's limit (spraying: one guess at many names) is separate from it: it does not stop a
    user name that has logged in from this address before, so failures under other names from a
    shared address (an office, a proxy that hides its clients) never lock a known user out.
    """
    pair, user, address = _login_counters(request, username)
    account = max(pair[0].blocked(pair[1]), user[0].blocked(user[1]))
    if account:
        return account
    wait = address[0].blocked(address[1])
    if wait and known_login(request, username):
        return 0
    return wait


def login_failed(request: HttpRequest, username: str) -> None:
    for limiter, identity, _ in _login_counters(request, username):
        limiter.hit(identity)


def login_succeeded(request: HttpRequest, username: str) -> None:
    for limiter, identity, clears in _login_counters(request, username):
        if clears:
            limiter.reset(identity)
    try:
        caches["default"].set(
            _known_key(request, username), 1, getattr(settings, "LOGIN_KNOWN_SECONDS", 0) or None
        )
    except Exception as exc:
        log.warning("known log-in not recorded, the cache is unavailable: %s", exc)


def lockout_message(wait: float) -> str:
    minutes = max(1, math.ceil(wait / 60))
    return (
        f"Too many failed log-ins for this user or from your address. "
        f"Try again in {minutes} minute{'s' if minutes != 1 else ''}."
    )


class LockoutModelBackend(ModelBackend):
    """Django's ModelBackend behind the log-in lockout: one lockout for every log-in page.

    `/login/` and `/admin/login/` (and anything else calling `authenticate` with a request) go
    through here, so a lockout earned on one page holds on the other. While locked out the
    password is never checked, not even the right one.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if request is None:  # management commands, tests: no address to count
            return super().authenticate(request, username=username, password=password, **kwargs)
        name = username if username is not None else kwargs.get(get_user_model().USERNAME_FIELD, "")
        wait = login_lock_wait(request, str(name or ""))
        if wait:
            request.login_locked_out = wait  # type: ignore[attr-defined]
            raise PermissionDenied(lockout_message(wait))  # ends authenticate(): no other backend
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            login_failed(request, str(name or ""))
        else:
            login_succeeded(request, str(name or ""))
        return user


class LockoutAwareMixin:
    """A log-in form that says "locked out" (not "wrong password") when the lockout refused it."""

    request: HttpRequest | None

    def get_invalid_login_error(self) -> forms.ValidationError:
        wait = getattr(self.request, "login_locked_out", 0)
        if wait:
            return forms.ValidationError(lockout_message(wait), code="locked_out")
        return super().get_invalid_login_error()  # type: ignore[misc]


class LockoutAuthenticationForm(LockoutAwareMixin, AuthenticationForm):
    pass


class LockoutAdminAuthenticationForm(LockoutAwareMixin, AdminAuthenticationForm):
    pass


def locked_out_status(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """429 with Retry-After on a log-in page the lockout refused."""
    wait = getattr(request, "login_locked_out", 0)
    if wait:
        response.status_code = 429
        response["Retry-After"] = str(math.ceil(wait))
    return response


class RateLimitedLoginView(LoginView):
    """Django's LoginView with the lockout's message and status (the backend does the counting)."""

    form_class = LockoutAuthenticationForm

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return locked_out_status(request, super().post(request, *args, **kwargs))


def admin_login(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
    """The admin's log-in page under the same lockout (its form and status as /login/'s)."""

    response = admin.site.login(request, extra_context)
    if hasattr(response, "render") and not getattr(response, "is_rendered", True):
        response.render()
    return locked_out_status(request, response)
