"""GET /api/v1/schema/ and /api/v1/docs/: the OpenAPI document generated from the views, and its Swagger UI."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders

from tests import apischema

pytestmark = pytest.mark.django_db


def test_the_schema_is_openapi_3_and_names_every_contract_path(client):
    schema = client.get("/api/v1/schema/").json()
    assert schema["openapi"].startswith("3.")
    for path in (
        "/api/v1/catalog/",
        "/api/v1/readiness/",
        "/api/v1/submissions/",
        "/api/v1/submissions/{id}/",
        "/api/v1/submissions/{id}/verify",
        "/api/v1/submissions/{id}/reject",
        "/api/v1/clusters/",
        "/api/v1/clusters/{name}/runs/",
        "/api/v1/runs/{id}/",
    ):
        assert path in schema["paths"], path


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
