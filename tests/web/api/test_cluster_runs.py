"""POST /api/v1/clusters/<name>/runs/: who may request a run, and what is refused."""

from __future__ import annotations

import pytest

from dashboard.domain.models import Run
from tests import factories as f
from tests.conftest import auth

pytestmark = pytest.mark.django_db


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
