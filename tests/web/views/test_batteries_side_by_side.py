"""Issue 38, item 3: where a cluster has both batteries' runs in the evidence window, the
matrix cell and the plugin page show both outcomes per catalog test, and a disagreement is
flagged on the cluster, the plugin and the criterion; the pages' query counts stay fixed."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from dashboard.domain.catalog import Outcome
from dashboard.web.views.matrix import build_matrix
from tests import factories as f

pytestmark = pytest.mark.django_db


def _cell(body: str, plugin: str, key: str) -> str:
    row = body[body.index(f'<tr class="first" data-plugin="{plugin}"') :].split("</tr>")[0]
    found = re.search(rf'<td class="cell" data-label="{key}"[^>]*>.*?</td>', row, re.S)
    assert found is not None
    return found.group(0)


def _both(plugin: str = "calico", upstream_days: float = 2, version: str | None = None):
    c = f.cluster(f"{plugin}-both", plugin_slug=plugin)
    ours = f.run(c, days_ago=1)
    if version:
        c.kubernetes_version = version
        c.save(update_fields=["kubernetes_version"])
    theirs = f.run(
        c,
        f.with_outcome("pod-to-service", Outcome.FAILED),
        battery="upstream",
        days_ago=upstream_days,
        detected=None,
    )
    return c, ours, theirs


def test_a_matrix_cell_shows_upstreams_outcome_beside_ours_and_flags_a_disagreement(
    client: Client,
) -> None:
    c, ours, theirs = _both()
    body = client.get("/matrix/").content.decode()
    cell = _cell(body, "calico", "pod-to-service")
    assert f'href="/runs/{ours.id}/" class="o o-passed trust-run"' in cell and c.name in cell
    assert 'data-upstream="failed"' in cell and 'data-disagree="true"' in cell
    assert f'href="/runs/{theirs.id}/" class="upstream-note"' in cell
    assert "upstream e2e.test: failed" in cell and "⚠ batteries disagree" in cell
    agreeing = _cell(body, "calico", "pod-to-pod")
    assert 'data-upstream="passed"' in agreeing and "data-disagree" not in agreeing
    # Upstream's run gets no row of its own (it demonstrates no proxier).
    assert body.count('data-plugin="calico"') == 1


def test_no_upstream_outcome_outside_the_window_or_on_another_release(client: Client) -> None:
    _both(upstream_days=200)
    _both("cilium", version="1.33.4")
    body = client.get("/matrix/").content.decode()
    assert "data-upstream" not in body and "upstream-note" not in body


def test_the_matrix_query_count_stays_fixed_with_both_batteries() -> None:
    def build() -> int:
        with CaptureQueriesContext(connection) as ctx:
            build_matrix()
        return len(ctx.captured_queries)

    _both()
    before = build()
    for plugin in ("cilium", "antrea", "ovn-kubernetes"):
        _both(plugin)
    assert build() == before


def test_the_plugin_page_shows_both_batteries_per_cluster_and_flags_a_disagreement(
    client: Client,
) -> None:
    c, ours, theirs = _both()
    body = client.get("/plugins/calico/").content.decode()
    section = body[body.index('id="batteries"') :].split("</section>")[0]
    assert 'data-flag="disagree"' in section and "pod-to-service" in section
    row = re.search(r'<tr data-key="pod-to-service"[^>]*>.*?</tr>', section, re.S)
    assert row is not None and 'data-state="disagree"' in row.group(0)
    assert f'href="/clusters/{c.name}/"' in section
    assert f"/runs/{ours.id}/" in section and f"/runs/{theirs.id}/" in section


def test_the_plugin_page_query_count_stays_fixed_with_more_clusters(client: Client) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert client.get("/plugins/calico/").status_code == 200
        return len(ctx.captured_queries)

    _both()
    client.get("/plugins/calico/")
    before = queries()
    for n in range(3):
        c = f.cluster(f"calico-more-{n}")
        f.run(c, days_ago=1)
        f.run(c, battery="upstream", days_ago=2, detected=None)
    assert queries() == before


def test_the_criterion_flags_the_disagreement(client: Client) -> None:
    c, ours, theirs = _both()
    body = client.get("/").content.decode()
    assert 'data-flag="batteries-disagree"' in body
    flag = body[body.index('data-flag="batteries-disagree"') :].split("</p>")[0]
    assert "upstream&#x27;s e2e.test failed pod-to-service" in flag and c.name in flag
    assert f'href="/runs/{ours.id}/"' in flag and f"(run {theirs.id})" in flag
