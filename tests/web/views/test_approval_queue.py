"""Issue 39: clusters waiting for approval are listed on /review/, and the cluster page tells its
vendor that approval is pending and who gives it."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain.models import Cluster
from tests import factories as f

pytestmark = pytest.mark.django_db


def test_review_lists_the_clusters_waiting_for_approval_oldest_first(
    client: Client, maintainer
) -> None:
    calico = f.vendor("Calico vendor", ("calico",))
    f.cluster("calico-new", approved=False, owner=calico)
    f.cluster("cilium-new", plugin_slug="cilium", approved=False, proxier="ipvs")
    f.cluster("approved-one")
    f.cluster("lab-one", approved=False, lab=True, emulated=True)
    f.cluster("off-one", approved=False, enabled=False)
    client.force_login(maintainer)
    body = client.get("/review/").content.decode()
    queue = body[
        body.index('id="clusters-awaiting-approval"') : body.index(
            "<h2", body.index('id="clusters-awaiting-approval"') + 5
        )
    ]
    assert '<small class="muted">2</small>' in queue
    assert queue.index('data-awaiting="calico-new"') < queue.index('data-awaiting="cilium-new"')
    assert "Calico vendor" in queue and 'action="/clusters/calico-new/approve/"' in queue
    for name in ("approved-one", "lab-one", "off-one"):
        assert f'data-awaiting="{name}"' not in queue


def test_the_queue_says_when_nothing_waits(client: Client, maintainer) -> None:
    client.force_login(maintainer)
    assert "No cluster waits for approval." in client.get("/review/").content.decode()


def test_approving_from_the_queue_empties_it(client: Client, maintainer) -> None:
    f.cluster("calico-new", approved=False)
    client.force_login(maintainer)
    client.post("/clusters/calico-new/approve/")
    assert Cluster.objects.get(name="calico-new").approved
    assert 'data-awaiting="calico-new"' not in client.get("/review/").content.decode()


def test_the_cluster_page_tells_its_vendor_approval_is_pending_and_who_gives_it(
    client: Client, vendor_user
) -> None:
    vendor = f.vendor("Calico vendor", ("calico",))
    f.cluster("calico-new", approved=False, owner=vendor)
    client.force_login(vendor_user)
    body = client.get("/clusters/calico-new/").content.decode()
    notice = body[body.index('data-trust="unapproved"') :].split("</p>")[0]
    assert "approval pending" in notice and "Waiting for a maintainer" in notice
    assert "maintainers (the SIG Network reviewers who run it) give it" in notice
    assert "do not count as evidence; once it is approved, they count" in notice
    assert "/review/" not in notice  # a vendor cannot open the queue
