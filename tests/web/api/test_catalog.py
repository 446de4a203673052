"""GET /api/v1/catalog/: the eight tests in the contract's shape, encoded once per publication."""

from __future__ import annotations

import pytest

from dashboard.domain.catalog import ALL_KEYS

pytestmark = pytest.mark.django_db


def test_the_catalog_lists_the_eight_tests_in_the_contract_shape(client):
    data = client.get("/api/v1/catalog/").json()
    assert [t["key"] for t in data] == list(ALL_KEYS)
    for t in data:
        assert {"key", "title", "battery", "tags", "upstream_names"} <= set(t)
        assert t["battery"] in ("basic", "connectivity")
    assert next(t for t in data if t["key"] == "pod-to-loadbalancer")["upstream_names"] == []


def test_the_catalog_is_encoded_once_per_publication_and_a_change_shows_at_once(client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from dashboard.domain.models import CatalogTest

    client.get("/api/v1/catalog/")
    with CaptureQueriesContext(connection) as ctx:
        client.get("/api/v1/catalog/")
    assert len(ctx.captured_queries) == 1  # the publication's check only
    test = CatalogTest.objects.get(key="pod-to-pod")
    test.title = "Pod to pod over SCTP (renamed)"
    test.save()  # bumps the publication
    data = client.get("/api/v1/catalog/").json()
    assert next(t for t in data if t["key"] == "pod-to-pod")["title"] == test.title


def test_the_catalog_says_which_tests_have_no_upstream_spec(client):
    data = {t["key"]: t for t in client.get("/api/v1/catalog/").json()}
    noted = {k for k, t in data.items() if t["upstream_note"]}
    assert noted == {"service-iptables-rules", "pod-to-loadbalancer"}
    for key in noted:
        assert data[key]["upstream_note"].startswith("No upstream spec")
    assert data["pod-to-service"]["upstream_note"] == ""


def test_the_schema_describes_the_upstream_note():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    field = schema["components"]["schemas"]["CatalogTest"]["properties"]["upstream_note"]
    assert field["type"] == "string" and field["readOnly"] is True
    assert "ours alone" in field["description"]
