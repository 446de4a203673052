"""Operations endpoints: `/healthz` (liveness), `/readyz` (database and broker), `/metrics`
(only with METRICS_TOKEN or from METRICS_ALLOWED_NETWORKS: it tells how busy and how used the
dashboard is; the probes stay open).

Served by a middleware placed first, before host validation and the HTTPS redirect: a
kubelet probes the pod's IP over plain HTTP, and an ALLOWED_HOSTS refusal (400) or a
redirect (301, which a probe counts as success) would make the probes meaningless.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from kombu import Connection

from dashboard.domain.metrics import render
from dashboard.web.ratelimit import from_trusted_proxy, in_networks

log = logging.getLogger(__name__)

BROKER_TIMEOUT = 3.0


def check_database() -> str | None:
    """None when `SELECT 1` works on the default database, else what failed."""
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any failure means not ready
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


def check_broker() -> str | None:
    """None when the Celery broker accepts a connection within a few seconds."""
    url = settings.CELERY_BROKER_URL
    options = dict(getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {}) or {})
    try:
        with Connection(url, connect_timeout=BROKER_TIMEOUT, transport_options=options) as conn:
            conn.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT
            )
            if url.startswith(("redis://", "rediss://")):
                conn.default_channel.client.ping()
    except Exception as exc:  # the broker's URL may hold a password: type only
        return f"broker unreachable ({type(exc).__name__})"
    return None


def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok\n", content_type="text/plain")


def readyz(request: HttpRequest) -> JsonResponse:
    problems = {"database": check_database(), "broker": check_broker()}
    body = {name: problem or "ok" for name, problem in problems.items()}
    ready = not any(problems.values())
    if not ready:
        log.warning("not ready: %s", body)
    return JsonResponse({"ready": ready, **body}, status=200 if ready else 503)


def metrics_allowed(request: HttpRequest) -> bool:
    """`Authorization: Bearer <METRICS_TOKEN>` when one is set, or a peer in
    METRICS_ALLOWED_NETWORKS that is not a trusted proxy (whatever a proxy relays is from outside)."""

    expected = getattr(settings, "METRICS_TOKEN", "")
    if expected:
        scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), expected.encode()
        ):
            return True
    peer = request.META.get("REMOTE_ADDR", "")
    return not from_trusted_proxy(request) and in_networks(
        peer, getattr(settings, "METRICS_ALLOWED_NETWORKS", "")
    )


def metrics(request: HttpRequest) -> HttpResponse:

    if not metrics_allowed(request):
        refused = HttpResponse(
            "metrics need 'Authorization: Bearer <METRICS_TOKEN>'\n",
            status=401,
            content_type="text/plain",
        )
        refused["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return refused

    started = time.monotonic()
    text = render()
    text += (
        f"# HELP sctp_dashboard_scrape_seconds Time spent building this page.\n"
        f"# TYPE sctp_dashboard_scrape_seconds gauge\n"
        f"sctp_dashboard_scrape_seconds {time.monotonic() - started:.6f}\n"
    )
    return HttpResponse(text, content_type="text/plain; version=0.0.4; charset=utf-8")


ROUTES: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "/healthz": healthz,
    "/readyz": readyz,
    "/metrics": metrics,
}


class OpsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = ROUTES.get(request.path_info.rstrip("/") or "/")
        if view is not None and request.method in ("GET", "HEAD"):
            return view(request)
        return self.get_response(request)
