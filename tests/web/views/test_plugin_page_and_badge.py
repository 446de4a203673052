"""A plugin's page and its cacheable SVG badge."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain.catalog import Outcome
from tests import factories
from tests.web.views.page_data import grow_history, grow_submissions, queries

pytestmark = pytest.mark.django_db


def test_the_page_lists_clusters_submissions_and_qualifying_evidence(client: Client) -> None:
    c = factories.cluster("calico-a")
    r = factories.run(c)
    s = factories.submission("calico", status="pending_review")
    body = client.get("/plugins/calico/").content.decode()
    assert 'href="/clusters/calico-a/"' in body and f'href="/submissions/{s.id}/"' in body
    assert f'href="/runs/{r.id}/"' in body and "connectivity passing" in body
    assert (
        "[![SCTP](http://testserver/badge/calico.svg)](http://testserver/plugins/calico/)" in body
    )


def test_the_badge_says_passing_failing_or_no_evidence() -> None:
    client = Client()
    body = client.get("/badge/calico.svg").content.decode()
    assert body.startswith("<svg") and "no evidence" in body
    c = factories.cluster("calico-a")
    factories.run(c, days_ago=3)
    assert "connectivity passing" in client.get("/badge/calico.svg").content.decode()
    factories.run(c, factories.with_outcome("pod-to-service", Outcome.FAILED), days_ago=1)
    assert "connectivity failing" in client.get("/badge/calico.svg").content.decode()


def test_old_qualifying_evidence_makes_a_stale_badge(client: Client) -> None:
    factories.run(factories.cluster("calico-a"), days_ago=200)
    assert "connectivity stale" in client.get("/badge/calico.svg").content.decode()


def test_the_badge_is_cacheable_and_answers_304_to_its_etag(client: Client) -> None:
    first = client.get("/badge/calico.svg")
    assert first["Content-Type"].startswith("image/svg+xml")
    assert "max-age=300" in first["Cache-Control"] and first["ETag"]
    again = client.get("/badge/calico.svg", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again["ETag"] == first["ETag"]
    factories.run(factories.cluster("calico-a"))
    changed = client.get("/badge/calico.svg", HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]


def test_an_unknown_plugin_gets_a_404_badge(client: Client) -> None:
    response = client.get("/badge/nope.svg")
    assert response.status_code == 404 and b"unknown plugin" in response.content


def test_query_counts_do_not_grow_with_history(client: Client) -> None:
    c = factories.cluster("cilium-a", plugin_slug="cilium")
    grow_history(c, 3)
    grow_submissions(3)
    before = (queries(client, "/plugins/cilium/"), queries(client, "/badge/cilium.svg"))
    grow_history(c, 40)
    grow_submissions(40)
    assert (
        (queries(client, "/plugins/cilium/"), queries(client, "/badge/cilium.svg"))
        == before
        == (15, 1)  # +2: the pass rate per release; +1: agreement.contradictions
    )


def test_a_badge_per_proxier_follows_the_demonstrated_mode_with_the_same_rules(
    client: Client,
) -> None:
    """The post-GA watch (issue 23): /badge/<slug>.svg?proxier=MODE, for iptables, ipvs and
    nftables; a run counts for the mode its Service's rules demonstrated, not the registered one."""
    on_ipvs = factories.cluster("calico-ipvs", proxier="ipvs")
    factories.run(on_ipvs, days_ago=2)
    # Registered as iptables, but its Service went through nftables rules.
    factories.run(factories.cluster("calico-reg-iptables"), detected="nftables", days_ago=2)
    factories.run(
        factories.cluster("calico-ipt"),
        factories.with_outcome("pod-to-service", Outcome.FAILED),
        days_ago=1,
    )

    def badge(mode: str) -> str:
        response = client.get(f"/badge/calico.svg?proxier={mode}")
        assert response.status_code == 200, mode
        return response.content.decode()

    assert "SCTP ipvs" in badge("ipvs") and "connectivity passing" in badge("ipvs")
    assert "connectivity passing" in badge("nftables")
    assert "connectivity failing" in badge("iptables")
    assert "connectivity failing" in client.get("/badge/calico.svg").content.decode()
    unknown = client.get("/badge/calico.svg?proxier=<script>")
    assert unknown.status_code == 404 and b"unknown proxier" in unknown.content
    assert b"<script>" not in unknown.content
