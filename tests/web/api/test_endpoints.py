from __future__ import annotations

import pytest

from dashboard.domain.catalog import ALL_KEYS
from dashboard.domain.models import Run
from tests import factories as f
from tests.conftest import auth

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


def test_readiness_answers_the_contract_shape(client):
    data = client.get("/api/v1/readiness/").json()
    assert data["feature"] == "sctp" and data["stage"] == "alpha"
    assert [(t["from"], t["to"]) for t in data["transitions"]] == [
        ("alpha", "beta"),
        ("beta", "stable"),
    ]
    keys = [c["key"] for t in data["transitions"] for c in t["criteria"]]
    assert keys == [
        "tests-written",
        "periodic-basic-passing",
        "two-out-of-tree-plugins",
        "iptables-and-ipvs",
    ]
    for t in data["transitions"]:
        assert t["ready"] is False
        for c in t["criteria"]:
            assert {"key", "title", "status", "detail", "evidence"} <= set(c)
            assert c["status"] in ("met", "unmet", "at_risk", "stale") and c["detail"]


def test_readiness_evidence_links_point_at_runs_and_submissions(client):
    r1 = f.run(f.cluster(plugin_slug="calico"))
    s = f.submission("cilium")
    data = client.get("/api/v1/readiness/").json()
    crit = next(
        c
        for t in data["transitions"]
        for c in t["criteria"]
        if c["key"] == "two-out-of-tree-plugins"
    )
    assert crit["status"] == "met"
    assert {(e["kind"], e["id"], e["url"]) for e in crit["evidence"]} == {
        ("run", r1.id, f"/runs/{r1.id}/"),
        ("submission", s.id, f"/submissions/{s.id}/"),
    }


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


def test_requesting_a_run_needs_the_owner_or_a_maintainer(
    client, vendor_token, other_vendor_token, maintainer_token, django_capture_on_commit_callbacks
):
    owner = f.vendor("Calico vendor", ("calico",))
    c = f.cluster("calico-a", owner=owner)
    assert client.post(f"/api/v1/clusters/{c.name}/runs/", {"battery": "basic"}).status_code == 401
    resp = client.post(
        f"/api/v1/clusters/{c.name}/runs/", {"battery": "basic"}, **auth(other_vendor_token)
    )
    assert resp.status_code == 403
    assert not Run.objects.exists()
    with django_capture_on_commit_callbacks() as callbacks:
        resp = client.post(
            f"/api/v1/clusters/{c.name}/runs/",
            {"battery": "basic"},
            content_type="application/json",
            **auth(vendor_token),
        )
    assert resp.status_code == 202
    run = Run.objects.get(pk=resp.json()["run"])
    assert (run.battery, run.trigger, run.state) == ("basic", "api", "queued")
    assert len(callbacks) == 1  # dispatched only after the commit
    resp = client.post(
        f"/api/v1/clusters/{c.name}/runs/",
        {"battery": "all"},
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert resp.status_code == 202


def test_requesting_a_run_refuses_unknown_clusters_and_batteries(client, maintainer_token):
    f.cluster("c1")
    assert (
        client.post("/api/v1/clusters/nope/runs/", {}, **auth(maintainer_token)).status_code == 404
    )
    resp = client.post(
        "/api/v1/clusters/c1/runs/",
        {"battery": "everything"},
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert resp.status_code == 400 and "unknown battery" in resp.json()["error"]
    assert not Run.objects.exists()


def test_a_run_answers_with_state_timings_and_every_test(client):
    r = f.run(f.cluster(), f.with_outcome("pod-to-loadbalancer", "skipped"))
    data = client.get(f"/api/v1/runs/{r.id}/").json()
    assert data["state"] == "finished" and data["started"] and data["finished"]
    assert set(data["results"]) == set(ALL_KEYS)
    assert data["results"]["pod-to-loadbalancer"]["outcome"] == "skipped"
    assert client.get("/api/v1/runs/999999/").status_code == 404


def test_the_cluster_list_carries_the_last_run(client, django_assert_max_num_queries):
    c = f.cluster("with-runs")
    f.run(c, days_ago=2)
    newest = f.run(c, days_ago=1)
    for _ in range(5):
        f.run(f.cluster())
    with django_assert_max_num_queries(3):
        data = client.get("/api/v1/clusters/").json()
    assert next(x for x in data if x["name"] == "with-runs")["last_run"]["id"] == newest.id
