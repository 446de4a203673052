"""What every API endpoint shares: throttling and its identity, the token read before the body, JSON for unknown paths."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests import apischema
from tests.conftest import auth

pytestmark = pytest.mark.django_db


def test_throttling_ignores_x_forwarded_for_unless_a_proxy_header_is_trusted(settings) -> None:
    settings.API_RATE_LIMIT_IP = "2/60"
    client = Client()
    codes = [
        client.post(
            "/api/v1/submissions/", REMOTE_ADDR="10.9.0.1", HTTP_X_FORWARDED_FOR=f"10.8.0.{i}"
        ).status_code
        for i in range(3)
    ]
    assert codes == [401, 401, 429]  # a forged header per request does not make a new client
    settings.RATE_LIMIT_IP_HEADER = "HTTP_X_FORWARDED_FOR"
    settings.RATE_LIMIT_TRUSTED_PROXIES = "10.9.0.2/32"  # the header counts from this peer only
    codes = [
        client.post(
            "/api/v1/submissions/",
            REMOTE_ADDR="10.9.0.2",
            HTTP_X_FORWARDED_FOR=f"1.2.3.4, 10.7.0.{i}",
        ).status_code
        for i in range(3)
    ]
    assert codes == [401, 401, 401]  # behind the trusted proxy, its last hop is the client


def test_reads_are_never_throttled_and_a_bad_token_does_not_break_them(settings, client) -> None:
    settings.API_RATE_LIMIT_IP = "1/60"
    for _ in range(3):
        assert client.get("/api/v1/catalog/", **auth("sctp_not-a-token")).status_code == 200


def test_unknown_api_paths_answer_json(client) -> None:
    for method in ("get", "post"):
        response = getattr(Client(), method)("/api/v1/nothing-here/")
        assert response.status_code == 404 and response.json() == {"error": "not found"}


def test_every_api_post_refuses_a_missing_or_bad_token_without_reading_the_body() -> None:
    """The body guard leaves API 401s to the API: each POST operation must refuse unread."""
    from tests.web.test_body_limits import post_unread

    posts = [path for path, item in apischema.openapi()["paths"].items() if "post" in item]
    assert len(posts) >= 6
    for template in posts:
        path = re.sub(r"\{[^}]+\}", "1", template)
        for headers in ({}, {"HTTP_AUTHORIZATION": "Token sctp_not-a-real-token"}):
            resp, body = post_unread(
                Client(), path, 1024 * 1024, **headers
            )  # within every body limit
            assert resp.status_code == 401 and "token" in resp.json()["error"], (path, resp.content)
            assert body.read_bytes == 0, path


def test_token_guesses_with_a_body_are_throttled_by_address(settings) -> None:
    from tests.web.test_body_limits import post_unread

    settings.API_RATE_LIMIT_IP = "3/60"
    codes = [
        post_unread(
            Client(),
            "/api/v1/submissions/",
            1024,
            REMOTE_ADDR="10.5.0.1",
            HTTP_AUTHORIZATION=f"Token guess-{i}",
        )[0].status_code
        for i in range(5)
    ]
    assert codes == [401, 401, 401, 429, 429]
