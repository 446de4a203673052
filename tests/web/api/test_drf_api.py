"""The parts the DRF API adds: pages, the schema and its Swagger UI, throttling identity."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from tests import apischema, factories
from tests.conftest import auth

pytestmark = pytest.mark.django_db


def test_the_submission_list_pages_keep_the_filters_and_accept_the_older_limit(client) -> None:
    subs = [factories.submission("calico", days_ago=i) for i in range(7)]  # subs[0] newest
    factories.submission("cilium")
    page = client.get("/api/v1/submissions/?plugin=calico&limit=3").json()
    assert set(page) == {"count", "next", "previous", "results"} and page["count"] == 7
    assert [s["id"] for s in page["results"]] == [s.id for s in subs[:3]]
    assert (
        "plugin=calico" in page["next"]
        and "page_size=3" in page["next"]
        and "limit" not in page["next"]
    )
    last = client.get("/api/v1/submissions/?plugin=calico&page_size=3&page=3").json()
    assert [s["id"] for s in last["results"]] == [subs[6].id] and last["next"] is None
    assert client.get("/api/v1/submissions/?page=9").json()["results"] == []  # past the end: empty
    # Far past the end (schemathesis found a 500: an OFFSET beyond what the database can hold).
    far = client.get("/api/v1/submissions/?page_size=100&page=2626745789035047485964288")
    assert far.status_code == 200 and far.json()["results"] == []


def test_the_list_filters_combine_and_refuse_an_unknown_status(client) -> None:
    factories.submission("calico")
    pending = factories.submission("calico", status="pending_review")
    factories.submission("cilium", status="pending_review")
    page = client.get("/api/v1/submissions/?plugin=calico&status=pending_review").json()
    assert [s["id"] for s in page["results"]] == [pending.id]
    refused = client.get("/api/v1/submissions/?status=bogus")
    assert refused.status_code == 400 and "status" in refused.json()["error"]


def test_the_schema_is_generated_from_the_views_and_describes_every_answer_field(client) -> None:
    schema = client.get("/api/v1/schema/").json()
    assert schema["paths"].keys() == apischema.openapi()["paths"].keys()
    components = schema["components"]["schemas"]
    run_fields = set(components["Run"]["properties"])
    assert {
        "id",
        "state",
        "started",
        "finished",
        "emulated",
        "fingerprint",
        "results",
        "qualifying_reason",
        "conformance",
        "duration_seconds",
    } <= run_fields
    assert set(components["Run"]["required"]) == run_fields  # every field is always in the answer
    assert {"emulated", "approved", "last_run", "owner"} <= set(components["Cluster"]["properties"])
    reasons = components["SubmissionResult"]["properties"]["reasons"]
    assert reasons["type"] == "array"
    params = {p["name"] for p in schema["paths"]["/api/v1/submissions/"]["get"]["parameters"]}
    assert {"plugin", "status", "page", "page_size"} <= params
    assert schema["components"]["securitySchemes"]["token"]["name"] == "Authorization"
    assert client.get("/api/v1/schema/?format=yaml")["Content-Type"].startswith(
        "application/vnd.oai.openapi"
    )


def test_swagger_ui_is_served_from_local_static_files_without_inline_script(client) -> None:
    page = client.get("/api/v1/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
    assert scripts and all(
        'src="/' in attrs and not body.strip() for attrs, body in scripts
    )  # nothing inline
    assert "<style" not in html and "http://" not in html and "https://" not in html  # no CDN
    for ref in re.findall(r'(?:src|href)="(/static/[^"]+)"', html):
        assert finders.find(ref.removeprefix("/static/")), ref  # shipped by drf-spectacular-sidecar
    script = re.search(r'<script src="(/api/v1/docs/\?script=?)"', html)
    assert script is not None, html
    initializer = client.get(script.group(1))
    assert initializer.status_code == 200 and "/api/v1/schema/" in initializer.content.decode()


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
