"""Issue 22, finding 7: behind the ingress every visitor shared one address, and about 30 failed
log-ins under any names locked everyone out, the maintainer's right password included. The
client address is read from a trusted proxy's header only; the account lockout (per user name)
does not depend on the address's limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from django.test import Client

from dashboard.web.ratelimit import client_ip

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("inside_one_window")]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def behind_the_ingress(settings):
    settings.RATE_LIMIT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    settings.RATE_LIMIT_TRUSTED_PROXIES = "10.50.0.0/24"
    settings.LOGIN_RATE_LIMIT_IP = "30/900"


def log_in(name: str, password: str, *, peer: str, forwarded: str | None = None):
    client = Client()
    extra: dict[str, Any] = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    response = client.post(
        "/login/", {"username": name, "password": password}, REMOTE_ADDR=peer, **extra
    )
    return response, "_auth_user_id" in client.session


def test_failures_under_other_names_from_a_shared_address_never_lock_out_a_known_maintainer(
    settings, maintainer
) -> None:
    """Every visitor behind one address (an ingress with no header configured, an office NAT)."""
    settings.LOGIN_RATE_LIMIT_IP = "30/900"
    assert log_in("maria", "maria-password", peer="10.6.6.6")[1]
    for i in range(35):
        log_in(f"someone-{i}", "Winter2026!", peer="10.6.6.6")
    response, ok = log_in("maria", "maria-password", peer="10.6.6.6")
    assert ok and response.status_code == 302
    # the address's limit still stops spraying at names it never saw log in
    response, ok = log_in("someone-new", "Winter2026!", peer="10.6.6.6")
    assert response.status_code == 429 and not ok


def test_the_account_lockout_still_holds_for_a_known_user(settings, maintainer) -> None:
    assert log_in("maria", "maria-password", peer="10.6.6.7")[1]
    for _ in range(10):
        log_in("maria", "a-guess", peer="10.6.6.7")
    response, ok = log_in("maria", "maria-password", peer="10.6.6.7")
    assert response.status_code == 429 and not ok


def test_behind_the_trusted_proxy_each_visitor_is_counted_alone(
    behind_the_ingress, maintainer
) -> None:
    for i in range(35):
        log_in(f"someone-{i}", "Winter2026!", peer="10.50.0.2", forwarded="198.51.100.7")
    response, ok = log_in("maria", "maria-password", peer="10.50.0.3", forwarded="203.0.113.5")
    assert ok and response.status_code == 302
    response, ok = log_in("maria", "maria-password", peer="10.50.0.2", forwarded="198.51.100.7")
    assert response.status_code == 429 and not ok  # the sprayer's own address is locked


def test_the_header_is_ignored_from_a_peer_that_is_not_a_trusted_proxy(
    behind_the_ingress, maintainer
) -> None:
    """A client that sends its own X-Forwarded-For, a new one each time, is still one address."""
    for i in range(35):
        log_in(f"someone-{i}", "Winter2026!", peer="198.51.100.9", forwarded=f"192.0.2.{i}")
    response, ok = log_in("maria", "maria-password", peer="198.51.100.9", forwarded="192.0.2.200")
    assert response.status_code == 429 and not ok


def test_the_client_is_the_nearest_hop_that_is_not_a_trusted_proxy(rf, settings) -> None:
    settings.RATE_LIMIT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    settings.RATE_LIMIT_TRUSTED_PROXIES = "10.50.0.0/24,172.29.0.250/32"
    spoofed = "1.2.3.4, 203.0.113.5, 10.50.0.9"  # client's word, what the ingress saw, a proxy
    request = rf.get("/", REMOTE_ADDR="172.29.0.250", HTTP_X_FORWARDED_FOR=spoofed)
    assert client_ip(request) == "203.0.113.5"
    request = rf.get("/", REMOTE_ADDR="192.0.2.1", HTTP_X_FORWARDED_FOR=spoofed)
    assert client_ip(request) == "192.0.2.1"


def test_the_manifests_and_compose_configure_the_trusted_hop() -> None:
    config = yaml.safe_load((ROOT / "deploy/base/configmap.yaml").read_text())["data"]
    assert config["RATE_LIMIT_IP_HEADER"] == "HTTP_X_FORWARDED_FOR"
    assert config["RATE_LIMIT_TRUSTED_PROXIES"]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    web = compose["services"]["web"]["environment"]
    proxy = compose["services"]["proxy"]
    address = proxy["networks"]["default"]["ipv4_address"]
    assert web["RATE_LIMIT_IP_HEADER"] == "HTTP_X_FORWARDED_FOR"
    assert web["RATE_LIMIT_TRUSTED_PROXIES"] == f"{address}/32"
    # the pinned address is outside the range compose hands out to the other containers
    import ipaddress

    ipam = compose["networks"]["default"]["ipam"]["config"][0]
    assert ipaddress.ip_address(address) in ipaddress.ip_network(ipam["subnet"])
    assert ipaddress.ip_address(address) not in ipaddress.ip_network(ipam["ip_range"])
