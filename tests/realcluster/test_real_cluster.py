"""The real cluster (`make cluster`) as the dashboard sees it: upstream's /version, and a
registration that takes it for what it is, a real cluster (not emulated) that counts once a
maintainer approves it (the evidence policy, docs/contract.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from dashboard.domain.models import ApiToken, Cluster
from tests import factories
from tests.conftest import auth
from tests.realcluster.conftest import ROOT, real_version

pytestmark = pytest.mark.realcluster


def pinned() -> str:
    text = (ROOT / "cluster" / "release.env").read_text()
    match = re.search(r"^KUBE_VERSION=(\S+)$", text, re.MULTILINE)
    assert match, "cluster/release.env pins no KUBE_VERSION"
    return match.group(1)


def test_version_is_upstreams_pinned_release_with_no_emulated_mark(real_kubeconfig: Path) -> None:
    version = real_version(real_kubeconfig)
    assert version["gitVersion"] == pinned() == "v1.36.3"
    assert version["major"] == "1" and version["minor"] == "36"
    # The lab marks its answers "emulated": true; the real API server has no such field (its
    # emulationMajor/emulationMinor are upstream's compatibility version, not that mark).
    assert "emulated" not in version
    assert version["gitTreeState"] == "clean"


@pytest.mark.django_db
def test_registration_takes_it_as_a_real_unapproved_cluster(
    client, maintainer_token, real_kubeconfig: Path
) -> None:
    # The real cluster's CNI is the reference bridge/host-local/portmap: kubenet's own plugins.
    _, token = ApiToken.issue(
        role=ApiToken.Role.VENDOR, vendor=factories.vendor("Kubenet vendor", ("kubenet",))
    )
    form = {
        "name": "real-cluster",
        "plugin": "kubenet",
        "plugin_version": pinned(),
        "proxier": "iptables",
        "kubeconfig": SimpleUploadedFile("kubeconfig", real_kubeconfig.read_bytes()),
    }
    resp = client.post("/api/v1/clusters/", form, **auth(token))
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["emulated"] is False
    assert body["approved"] is False  # a vendor's cluster counts once a maintainer approves it
    assert body["kubernetes_version"] == pinned().lstrip("v")  # read from the real server
    cluster = Cluster.objects.get(name="real-cluster")
    assert not cluster.emulated and not cluster.approved

    approved = client.post("/api/v1/clusters/real-cluster/approve", **auth(maintainer_token))
    assert approved.status_code == 200, approved.content
    assert approved.json() == {"name": "real-cluster", "approved": True}
    cluster.refresh_from_db()
    assert cluster.approved and not cluster.emulated
