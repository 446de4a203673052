"""Rate limits: the token API answers 429 with Retry-After; the login locks a name + address out."""

from __future__ import annotations

import socket
import time

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.test import Client

from dashboard.domain.models import Run
from tests import factories
from tests.conftest import auth

pytestmark = pytest.mark.django_db


def post_run(client: Client, token: str, cluster: str, ip: str = "10.0.0.1"):
    return client.post(
        f"/api/v1/clusters/{cluster}/runs/",
        {"battery": "basic"},
        content_type="application/json",
        REMOTE_ADDR=ip,
        **auth(token),
    )


def test_the_api_answers_429_with_retry_after_once_a_token_is_over_its_limit(
    settings, vendor_token, other_vendor_token
) -> None:
    settings.API_RATE_LIMIT_TOKEN = "3/60"
    c = factories.cluster("calico-a", owner=factories.vendor("Calico vendor", ("calico",)))
    client = Client()
    # The wait is what is left of the limit's duration since the oldest counted request:
    # three requests at t0, t0+10 and t0+10, the refused fourth at t0+20, leave 40 s.
    with time_machine.travel(time.time(), tick=False) as clock:
        statuses = [post_run(client, vendor_token, c.name).status_code]
        clock.shift(10)
        statuses += [post_run(client, vendor_token, c.name).status_code for _ in range(2)]
        clock.shift(10)
        refused = post_run(client, vendor_token, c.name)
    assert 429 not in statuses
    assert refused.status_code == 429
    assert refused["Retry-After"] == "40"
    assert "too many requests with this token" in refused.json()["error"]
    # another token from the same address is not held back, and reads are never limited
    assert post_run(client, other_vendor_token, c.name).status_code == 403
    assert client.get("/api/v1/clusters/", REMOTE_ADDR="10.0.0.1").status_code == 200


def test_the_api_limits_an_address_whatever_token_it_sends(settings) -> None:
    settings.API_RATE_LIMIT_IP = "5/60"
    client = Client()
    codes = [
        client.post(
            "/api/v1/submissions/", REMOTE_ADDR="10.0.0.2", HTTP_AUTHORIZATION=f"Token guess-{i}"
        ).status_code
        for i in range(7)
    ]
    assert codes == [401] * 5 + [429] * 2
    assert (
        client.post("/api/v1/submissions/", REMOTE_ADDR="10.0.0.3").status_code == 401
    )  # another address


def test_a_refused_request_does_nothing(settings, maintainer_token) -> None:
    settings.API_RATE_LIMIT_TOKEN = "1/60"
    c = factories.cluster("calico-b")
    client = Client()
    assert post_run(client, maintainer_token, c.name).status_code == 202
    assert post_run(client, maintainer_token, c.name).status_code == 429
    assert Run.objects.count() == 1


def test_the_limits_work_on_the_database_cache_of_the_embedded_mode(
    settings, maintainer_token
) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "dashboard_cache",
        }
    }
    settings.API_RATE_LIMIT_TOKEN = "2/60"
    c = factories.cluster("calico-c")
    codes = [post_run(Client(), maintainer_token, c.name).status_code for _ in range(3)]
    assert codes[-1] == 429 and 429 not in codes[:2]


def test_an_unreachable_cache_lets_requests_through(settings, maintainer_token, caplog) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    settings.API_RATE_LIMIT_TOKEN = "1/60"
    c = factories.cluster("calico-d")
    assert post_run(Client(), maintainer_token, c.name).status_code == 202
    assert post_run(Client(), maintainer_token, c.name).status_code != 429
    client = Client()
    assert client.post("/login/", {"username": "nobody", "password": "x"}).status_code == 200
    assert "the cache is unavailable" in caplog.text


@pytest.fixture
def walter(db):
    return get_user_model().objects.create_user("walter", password="walter-password")


def login(client: Client, password: str, ip: str = "10.1.1.1", username: str = "walter"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_the_login_locks_out_a_user_name_and_address_after_ten_failures(walter) -> None:
    client = Client()
    for _ in range(10):
        response = login(client, "wrong")
        assert response.status_code == 200  # the ordinary "wrong password" form
    locked = login(client, "walter-password")  # even the right password is refused now
    assert locked.status_code == 429
    assert "Too many failed log-ins" in locked.content.decode()
    assert int(locked["Retry-After"]) > 0
    assert "_auth_user_id" not in client.session
    # the same user from another address, and another user from this one, may still log in
    assert login(Client(), "walter-password", ip="10.1.1.2").status_code == 302
    get_user_model().objects.create_user("xena", password="xena-password")
    assert login(Client(), "xena-password", username="xena").status_code == 302


def test_a_successful_login_clears_the_failures(walter) -> None:
    client = Client()
    for _ in range(9):
        login(client, "wrong")
    assert login(client, "walter-password").status_code == 302
    for _ in range(9):
        assert login(Client(), "wrong").status_code == 200


def test_the_lockout_counts_per_configured_limit(settings, walter) -> None:
    settings.LOGIN_RATE_LIMIT = "2/900"
    client = Client()
    assert [login(client, "wrong").status_code for _ in range(3)] == [200, 200, 429]
