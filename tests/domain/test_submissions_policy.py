"""Vendor submissions move the verdicts exactly as the evidence policy says, through the HTTP API:
release floor, the e2e run's own time, declared proxier, plugin, NetworkPolicy, emulated mark."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils.timezone import now

from dashboard.domain.models import Submission
from tests import factories
from tests.conftest import auth
from tests.domain.ingest import builders as b
from tests.uploads import SCTP, post

pytestmark = pytest.mark.django_db


def junit(*, when=None, salt: str = "", properties=None, netpol: str = "passed") -> bytes:
    cases = [
        (SCTP["pod-to-pod"], "passed"),
        (SCTP["pod-to-service"], "passed"),
        (SCTP["netpol-allow-deny"], netpol),
        (f"[sig-node] unrelated {salt}", "passed"),
    ]
    stamp = (when or now() - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%S")
    return b.junit_v2(cases, timestamp=stamp, properties=properties)


def criteria(client) -> dict[str, dict]:
    data = client.get("/api/v1/readiness/").json()
    return {c["key"]: c for t in data["transitions"] for c in t["criteria"]}


def submit_and_verify(client, maintainer_token, slug, data, **fields) -> int:
    resp = post(
        client,
        factories.issued_token(slug) if slug not in TOKENS else TOKENS[slug],
        data,
        plugin=slug,
        **fields,
    )
    assert resp.status_code == 201, resp.content
    sub_id = resp.json()["id"]
    verified = client.post(
        f"/api/v1/submissions/{sub_id}/verify",
        {"reason": "checked the PR"},
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert verified.status_code == 200
    return sub_id


TOKENS: dict[str, str] = {}


@pytest.fixture(autouse=True)
def tokens(db):
    TOKENS.clear()
    for slug in ("calico", "cilium", "antrea", "flannel"):
        TOKENS[slug] = factories.issued_token(slug)
    yield


def test_two_fresh_verified_plugins_on_both_proxiers_meet_the_ga_criteria(client, maintainer_token):
    submit_and_verify(client, maintainer_token, "calico", junit(salt="a"), proxier="iptables")
    submit_and_verify(client, maintainer_token, "cilium", junit(salt="b"), proxier="ipvs")
    c = criteria(client)
    assert c["two-out-of-tree-plugins"]["status"] == "met"
    assert c["iptables-and-ipvs"]["status"] == "met"


def test_a_release_below_the_floor_never_counts(client, maintainer_token, settings):
    submit_and_verify(
        client, maintainer_token, "calico", junit(salt="a"), kubernetes_version="1.34.2"
    )
    sub = submit_and_verify(
        client, maintainer_token, "cilium", junit(salt="b"), kubernetes_version="1.29.4"
    )
    c = criteria(client)["two-out-of-tree-plugins"]
    assert c["status"] == "unmet"
    entry = next(e for e in c["evidence"] if e["kind"] == "submission" and e["id"] == sub)
    assert not entry["counts"] and "1.29 is older than 1.34" in entry["why"]
    settings.READINESS_MIN_KUBERNETES = "1.29"
    Submission.objects.filter(pk=sub).update(plugin_version="x")  # any change republishes
    assert criteria(client)["two-out-of-tree-plugins"]["status"] == "met"


def test_the_age_is_the_e2e_runs_not_the_upload(client, maintainer_token):
    submit_and_verify(client, maintainer_token, "calico", junit(salt="a"))
    old = submit_and_verify(
        client, maintainer_token, "cilium", junit(when=now() - timedelta(days=200), salt="b")
    )
    sub = Submission.objects.get(pk=old)
    assert sub.run_at_source == "file" and (now() - sub.run_at).days >= 199
    c = criteria(client)["two-out-of-tree-plugins"]
    assert c["status"] == "stale"  # would be met only with evidence older than the window
    entry = next(e for e in c["evidence"] if e["kind"] == "submission" and e["id"] == old)
    assert not entry["counts"] and "older than 90 days" in entry["why"]


def test_the_declared_proxier_of_a_verified_submission_is_demonstrated(client, maintainer_token):
    submit_and_verify(client, maintainer_token, "calico", junit(salt="a"), proxier="iptables")
    assert criteria(client)["iptables-and-ipvs"]["status"] == "unmet"
    submit_and_verify(client, maintainer_token, "calico", junit(salt="b"), proxier="ipvs")
    assert criteria(client)["iptables-and-ipvs"]["status"] == "met"


def test_a_plugin_without_network_policy_needs_an_exemption(client, maintainer_token):
    from dashboard.domain.models import Plugin
    from dashboard.domain.trust import set_netpol_exemption

    Plugin.objects.filter(slug="flannel").update(implements_network_policy=False)
    submit_and_verify(client, maintainer_token, "calico", junit(salt="a"))
    submit_and_verify(client, maintainer_token, "flannel", junit(salt="b", netpol="skipped"))
    c = criteria(client)["two-out-of-tree-plugins"]
    assert c["status"] == "unmet" and "flannel does not implement NetworkPolicy" in c["detail"]
    set_netpol_exemption(
        Plugin.objects.get(slug="flannel"), "SIG Network decision, 2026-11", "maria"
    )
    assert criteria(client)["two-out-of-tree-plugins"]["status"] == "met"


def test_an_emulated_file_never_counts_and_the_detail_says_what_it_would_do(
    client, maintainer_token
):
    submit_and_verify(client, maintainer_token, "calico", junit(salt="a"))
    sub = submit_and_verify(
        client, maintainer_token, "cilium", junit(salt="b", properties={"emulated": "true"})
    )
    c = criteria(client)["two-out-of-tree-plugins"]
    assert (
        c["status"] == "unmet"
        and c["what_if"] == "would be met on emulated clusters only: not counted"
    )
    entry = next(e for e in c["evidence"] if e["kind"] == "submission" and e["id"] == sub)
    assert entry["emulated"] and not entry["counts"]


def test_pending_and_rejected_submissions_are_shown_but_never_count(client, maintainer_token):
    submit_and_verify(client, maintainer_token, "calico", junit(salt="a"))
    pending = post(client, TOKENS["cilium"], junit(salt="b"), plugin="cilium").json()["id"]
    c = criteria(client)["two-out-of-tree-plugins"]
    assert c["status"] == "unmet"
    entry = next(e for e in c["evidence"] if e["kind"] == "submission" and e["id"] == pending)
    assert not entry["counts"] and "pending review" in entry["why"]
