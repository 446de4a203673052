"""Maintainers' trust decisions on the pages: approve a cluster, basic-only, NetworkPolicy
exemptions, and the periodic-conflict warning. Others are refused and nothing changes."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain.models import AuditEvent, Cluster, Plugin
from tests import factories

pytestmark = pytest.mark.django_db


def test_a_maintainer_approves_a_cluster_and_the_page_says_it_counts(
    client: Client, maintainer
) -> None:
    factories.cluster("calico-prod", approved=False)
    client.force_login(maintainer)
    body = client.get("/clusters/calico-prod/").content.decode()
    assert 'data-trust="unapproved"' in body and "Approve this cluster" in body
    response = client.post("/clusters/calico-prod/approve/")
    assert response.status_code == 302
    c = Cluster.objects.get(name="calico-prod")
    assert c.approved and c.approved_by == maintainer
    assert AuditEvent.objects.filter(action="cluster.approve", actor="maria").exists()
    body = client.get("/clusters/calico-prod/").content.decode()
    assert (
        'data-trust="approved"' in body
        and "Approved by maria" in body
        and "Withdraw approval" in body
    )
    client.post("/clusters/calico-prod/approve/", {"action": "revoke"})
    assert not Cluster.objects.get(name="calico-prod").approved


def test_an_emulated_cluster_says_its_runs_never_count(client: Client) -> None:
    factories.cluster("lab-calico", lab=True, emulated=True, approved=True)
    body = client.get("/clusters/lab-calico/").content.decode()
    assert 'data-trust="emulated"' in body and "never count" in body
    assert "emulated</small>" in client.get("/clusters/").content.decode()


def test_basic_only_toggles_and_the_conflict_warning_shows_until_then(
    client: Client, maintainer
) -> None:
    c = factories.cluster("calico-a", approved=True)
    factories.schedule(c, battery="basic")
    factories.run(c, battery="connectivity")
    client.force_login(maintainer)
    assert f'data-conflict="{c.name}"' in client.get("/clusters/calico-a/").content.decode()
    assert f'data-conflict="{c.name}"' in client.get("/schedules/").content.decode()
    client.post("/clusters/calico-a/basic-only/", {"basic_only": "true"})
    assert Cluster.objects.get(pk=c.pk).basic_only
    body = client.get("/clusters/calico-a/").content.decode()
    assert "data-conflict" not in body and "Basic-only" in body
    assert "data-conflict" not in client.get("/schedules/").content.decode()
    client.post("/clusters/calico-a/basic-only/", {"basic_only": "false"})
    assert not Cluster.objects.get(pk=c.pk).basic_only


def test_a_netpol_exemption_needs_a_reason_and_is_shown(client: Client, maintainer) -> None:
    p = factories.plugin("flannel", netpol=False)
    client.force_login(maintainer)
    assert "NetworkPolicy exemption" in client.get("/plugins/flannel/").content.decode()
    body = client.post(
        "/plugins/flannel/netpol-exemption/", {"reason": "  "}, follow=True
    ).content.decode()
    assert "needs a reason" in body and not Plugin.objects.get(pk=p.pk).netpol_exemption_reason
    client.post(
        "/plugins/flannel/netpol-exemption/", {"reason": "flannel never implements NetworkPolicy"}
    )
    p.refresh_from_db()
    assert (
        p.netpol_exemption_reason == "flannel never implements NetworkPolicy"
        and p.netpol_exempted_by == maintainer
    )
    assert (
        "flannel never implements NetworkPolicy"
        in Client().get("/plugins/flannel/").content.decode()
    )
    client.post("/plugins/flannel/netpol-exemption/", {"action": "clear"})
    assert not Plugin.objects.get(pk=p.pk).netpol_exemption_reason


@pytest.mark.parametrize(
    "url, data",
    [
        ("/clusters/calico-a/approve/", {}),
        ("/clusters/calico-a/basic-only/", {"basic_only": "true"}),
        ("/plugins/calico/netpol-exemption/", {"reason": "mine"}),
    ],
)
def test_vendors_may_not_make_trust_decisions(client: Client, vendor_user, url, data) -> None:
    factories.cluster("calico-a", owner=vendor_user.vendors.get(), approved=False)
    client.force_login(vendor_user)
    response = client.post(url, data)
    assert response.status_code == 403 and b"Not allowed" in response.content
    c = Cluster.objects.get(name="calico-a")
    assert (
        not c.approved
        and not c.basic_only
        and not Plugin.objects.get(slug="calico").netpol_exemption_reason
    )
    assert "Approve this cluster" not in client.get("/clusters/calico-a/").content.decode()
