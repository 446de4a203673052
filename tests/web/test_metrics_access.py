"""Issue 22, finding 11: /metrics is not public; /healthz and /readyz stay open."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.test import Client

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def test_metrics_refuse_a_visitor_from_outside() -> None:
    response = Client().get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 401
    assert "sctp_dashboard_" not in response.content.decode()
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_the_probes_stay_open_to_anyone() -> None:
    assert Client().get("/healthz", REMOTE_ADDR="203.0.113.9").status_code == 200
    assert Client().get("/readyz", REMOTE_ADDR="203.0.113.9").status_code in (200, 503)


def test_metrics_answer_the_token(settings) -> None:
    settings.METRICS_TOKEN = "scrape-secret-4f1c"
    outside = "203.0.113.9"
    ok = Client().get(
        "/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret-4f1c", REMOTE_ADDR=outside
    )
    assert ok.status_code == 200 and "sctp_dashboard_" in ok.content.decode()
    wrong = Client().get(
        "/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret-4f1d", REMOTE_ADDR=outside
    )
    assert wrong.status_code == 401


def test_metrics_answer_the_allowed_network_but_not_through_a_proxy(settings) -> None:
    settings.METRICS_ALLOWED_NETWORKS = "10.60.0.0/16"
    assert Client().get("/metrics", REMOTE_ADDR="10.60.1.2").status_code == 200
    assert Client().get("/metrics", REMOTE_ADDR="10.61.1.2").status_code == 401
    # the ingress relays visitors from inside the network: what it relays is from outside
    settings.RATE_LIMIT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    settings.RATE_LIMIT_TRUSTED_PROXIES = "10.60.9.0/24"
    relayed = Client().get("/metrics", REMOTE_ADDR="10.60.9.1", HTTP_X_FORWARDED_FOR="10.60.1.2")
    assert relayed.status_code == 401


def test_the_manifests_protect_metrics() -> None:
    secret = yaml.safe_load((ROOT / "deploy/base/secret.example.yaml").read_text())
    assert "METRICS_TOKEN" in secret["stringData"]
    web = (ROOT / "deploy/base/web.yaml").read_text()
    assert "prometheus.io/scrape" not in web  # an annotation scrape cannot send the token
    nginx = (ROOT / "deploy/compose/nginx.conf").read_text()
    assert "location = /metrics" in nginx and "return 404" in nginx
