"""Cluster trust (contract: Evidence policy): vendor clusters count only once a maintainer
approves them; re-registering never re-enables or re-approves; basic-only clusters refuse
connectivity runs; a vendor who loses a plugin loses its clusters. Through the HTTP API."""

from __future__ import annotations

import pytest
import yaml

from dashboard.domain.models import AuditEvent, Cluster, Plugin, Vendor
from dashboard.domain.readiness import evaluate
from tests import factories as f
from tests.conftest import auth
from tests.labtools import profile

pytestmark = pytest.mark.django_db


@pytest.fixture
def labs():
    from lab.server import LabServer

    a = LabServer([profile(name="vendor-lab", kubernetes_version="1.34.2")]).start()
    b = LabServer([profile(name="vendor-lab", kubernetes_version="1.34.2")]).start()
    yield a, b
    a.stop()
    b.stop()


def form(lab, **overrides):
    data = {
        "name": "calico-prod",
        "plugin": "calico",
        "plugin_version": "3.28.0",
        "proxier": "iptables",
        "node_access": "true",
        "kubeconfig": yaml.safe_dump(lab.kubeconfig("vendor-lab")),
    }
    data.update(overrides)
    return data


def criterion(key: str) -> dict:
    return next(c for t in evaluate()["transitions"] for c in t["criteria"] if c["key"] == key)


def real(cluster: Cluster) -> Cluster:
    """The lab's /version marks it emulated; these tests are about trust alone, so clear it."""
    Cluster.objects.filter(pk=cluster.pk).update(emulated=False)
    cluster.refresh_from_db()
    return cluster


def test_a_vendor_cluster_counts_only_after_a_maintainer_approves_it(
    client, vendor_token, maintainer_token, labs
):
    resp = client.post("/api/v1/clusters/", form(labs[0]), **auth(vendor_token))
    assert resp.status_code == 201 and resp.json()["approved"] is False
    cluster = real(Cluster.objects.get(name="calico-prod"))
    run = f.run(cluster)
    f.run(f.cluster("cilium-a", plugin_slug="cilium"))
    c = criterion("two-out-of-tree-plugins")
    assert c["status"] == "unmet"
    entry = next(e for e in c["evidence"] if e["id"] == run.id)
    assert entry["counts"] is False and "not approved by a maintainer" in entry["why"]

    refused = client.post("/api/v1/clusters/calico-prod/approve", **auth(vendor_token))
    assert refused.status_code == 403
    assert not Cluster.objects.get(pk=cluster.pk).approved

    approved = client.post("/api/v1/clusters/calico-prod/approve", **auth(maintainer_token))
    assert approved.status_code == 200 and approved.json() == {
        "name": "calico-prod",
        "approved": True,
    }
    event = AuditEvent.objects.get(action="cluster.approve")
    assert event.actor == "maria" and event.target == "cluster calico-prod"
    assert criterion("two-out-of-tree-plugins")["status"] == "met"
    assert client.get("/api/v1/clusters/").json()[0]["approved"] is True


def test_approving_an_unknown_or_disabled_cluster_is_refused(client, maintainer_token):
    assert client.post("/api/v1/clusters/nope/approve", **auth(maintainer_token)).status_code == 404
    f.cluster("off", approved=False, enabled=False)
    resp = client.post("/api/v1/clusters/off/approve", **auth(maintainer_token))
    assert resp.status_code == 409 and "disabled" in resp.json()["error"]
    assert not Cluster.objects.get(name="off").approved


def test_a_taken_name_is_refused_and_an_edit_never_re_enables_while_a_new_server_clears_the_approval(
    client, vendor_token, maintainer_token, labs
):
    assert client.post("/api/v1/clusters/", form(labs[0]), **auth(vendor_token)).status_code == 201
    Cluster.objects.filter(name="calico-prod").update(approved=True, enabled=False)
    for token in (vendor_token, maintainer_token):  # whoever sends it, a registration never edits
        again = client.post(
            "/api/v1/clusters/",
            form(labs[0], plugin_version="3.29.0", proxier="ipvs"),
            **auth(token),
        )
        assert again.status_code == 409, again.content
        assert again.json()["url"].endswith("/clusters/calico-prod/")
        assert "already registered" in again.json()["error"]
    cluster = Cluster.objects.get(name="calico-prod")
    assert (cluster.plugin_version, cluster.proxier) == ("3.28.0", "iptables")

    edited = client.patch(
        "/api/v1/clusters/calico-prod/",
        {"plugin_version": "3.29.0"},
        content_type="application/json",
        **auth(vendor_token),
    )
    assert edited.status_code == 200, edited.content
    assert edited.json()["changes"] == {"plugin_version": ["3.28.0", "3.29.0"]}
    cluster = Cluster.objects.get(name="calico-prod")
    assert (cluster.enabled, cluster.approved, cluster.plugin_version, cluster.proxier) == (
        False,
        True,
        "3.29.0",
        "iptables",
    )
    event = AuditEvent.objects.filter(action="cluster.update").latest("id")
    assert event.detail["changes"] == {"plugin_version": ["3.28.0", "3.29.0"]}

    moved = client.patch(
        "/api/v1/clusters/calico-prod/",
        {"kubeconfig": form(labs[1])["kubeconfig"]},
        content_type="application/json",
        **auth(vendor_token),
    )
    assert moved.status_code == 200 and moved.json()["approved"] is False
    assert "server" in moved.json()["changes"]
    assert Cluster.objects.get(name="calico-prod").enabled is False


def test_only_the_owner_or_a_maintainer_may_edit_a_cluster(client, vendor_token):
    f.cluster("cilium-prod", plugin_slug="cilium")
    refused = client.patch(
        "/api/v1/clusters/cilium-prod/",
        {"plugin_version": "9"},
        content_type="application/json",
        **auth(vendor_token),
    )
    assert refused.status_code == 403
    assert not AuditEvent.objects.filter(action="cluster.update").exists()


def test_a_maintainers_registration_is_approved(client, maintainer_token, labs):
    resp = client.post(
        "/api/v1/clusters/", form(labs[0], plugin="cilium"), **auth(maintainer_token)
    )
    assert resp.status_code == 201 and resp.json()["approved"] is True


def test_the_lab_mark_on_version_flags_a_cluster_registered_through_the_api_as_emulated(
    client, vendor_token, labs
):
    resp = client.post("/api/v1/clusters/", form(labs[0]), **auth(vendor_token))
    assert resp.status_code == 201 and resp.json()["emulated"] is True


def test_a_vendor_who_loses_the_plugin_cannot_run_its_cluster(client, vendor_token):
    vendor = Vendor.objects.get(name="Calico vendor")
    c = f.cluster("calico-prod", owner=vendor)
    ok = client.post(
        "/api/v1/clusters/calico-prod/runs/",
        {"battery": "basic"},
        content_type="application/json",
        **auth(vendor_token),
    )
    assert ok.status_code == 202
    vendor.plugins.remove(Plugin.objects.get(slug="calico"))
    refused = client.post(
        f"/api/v1/clusters/{c.name}/runs/",
        {"battery": "basic"},
        content_type="application/json",
        **auth(vendor_token),
    )
    assert refused.status_code == 403
    assert c.runs.count() == 1


def test_a_basic_only_cluster_refuses_connectivity_runs_with_the_reason(client, maintainer_token):
    from dashboard.domain.trust import set_basic_only

    c = f.cluster("periodic-home")
    set_basic_only(c, True, "maria")
    for battery in ("connectivity", "all"):
        resp = client.post(
            "/api/v1/clusters/periodic-home/runs/",
            {"battery": battery},
            content_type="application/json",
            **auth(maintainer_token),
        )
        assert (
            resp.status_code == 409
            and "basic-only" in resp.json()["error"]
            and "sctp.ko" in resp.json()["error"]
        )
    assert (
        client.post(
            "/api/v1/clusters/periodic-home/runs/",
            {"battery": "basic"},
            content_type="application/json",
            **auth(maintainer_token),
        ).status_code
        == 202
    )
    assert c.runs.count() == 1
    assert AuditEvent.objects.filter(action="cluster.basic_only").exists()


def test_the_schedule_warning_names_connectivity_runs_on_a_periodic_cluster():
    from dashboard.domain.trust import periodic_conflict, set_basic_only

    c = f.cluster("periodic-home")
    f.schedule(c)
    assert periodic_conflict(c) is None
    run = f.run(c, battery="connectivity")
    warning = periodic_conflict(c)
    assert (
        warning and f"run {run.id}" in warning and "sctp.ko" in warning and "basic-only" in warning
    )
    set_basic_only(c, True, "maria")
    assert periodic_conflict(c) is None


def test_a_disabled_cluster_shows_its_runs_but_they_do_not_count():
    c = f.cluster("calico-a")
    f.run(f.cluster("cilium-a", plugin_slug="cilium"))
    f.run(c)
    assert criterion("two-out-of-tree-plugins")["status"] == "met"
    Cluster.objects.filter(pk=c.pk).update(enabled=False)
    verdict = criterion("two-out-of-tree-plugins")
    assert verdict["status"] == "unmet"
    assert any("calico-a is disabled" in e["why"] for e in verdict["evidence"])
