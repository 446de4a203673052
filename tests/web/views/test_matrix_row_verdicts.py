"""Issue 39: each plugin × proxier row of the matrix says whether its connectivity qualifies and
why not, before its cells; a "not demonstrated" line cites the candidate closest to counting."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain import publication, readiness
from tests import factories as f

pytestmark = pytest.mark.django_db


def _row(body: str, plugin: str, proxier: str, minor: str) -> str:
    start = body.index(f'data-plugin="{plugin}" data-proxier="{proxier}" data-minor="{minor}"')
    return body[start : body.index("</tr>", start)]


def test_each_row_answers_before_its_cells(client: Client) -> None:
    good = f.run(f.cluster("calico-ipt", kubernetes_version="1.34.1"))
    bad = f.run(
        f.cluster("cilium-ipvs", plugin_slug="cilium", proxier="ipvs", kubernetes_version="1.34.1"),
        f.with_outcome("pod-to-service", "failed", dict(f.PASSING)),
    )
    publication.invalidate()
    body = client.get("/matrix/").content.decode()
    calico = _row(body, "calico", "iptables", "1.34")
    assert 'data-row-verdict="holds"' in calico and "✔ connectivity qualifies" in calico
    assert f'href="/runs/{good.id}/">run {good.id}</a>' in calico
    assert calico.index("data-row-verdict") < calico.index('class="cell"')
    cilium = _row(body, "cilium", "ipvs", "1.34")
    assert "✘ connectivity does not qualify: pod-to-service failed" in cilium
    assert f"run {bad.id}" in cilium and cilium.index("data-row-verdict") < cilium.index(
        'class="cell"'
    )


def test_a_row_of_evidence_that_does_not_count_says_why(client: Client) -> None:
    f.run(f.cluster("calico-lab", approved=False, kubernetes_version="1.34.1"))
    publication.invalidate()
    row = _row(client.get("/matrix/").content.decode(), "calico", "iptables", "1.34")
    assert "✘ connectivity not counted: cluster calico-lab is not approved by a maintainer" in row


def test_not_demonstrated_cites_the_candidate_closest_to_counting() -> None:
    # the newest ipvs run is blocked twice (emulated, too old a release); an older one once
    far = f.run(
        f.cluster("ipvs-lab", proxier="ipvs", emulated=True, kubernetes_version="1.20.0"),
        days_ago=1,
    )
    near = f.run(f.cluster("ipvs-unapproved", proxier="ipvs", approved=False), days_ago=5)
    evaluation = readiness.evaluate()
    (criterion,) = [
        c
        for t in evaluation["transitions"]
        for c in t["criteria"]
        if c["key"] == "iptables-and-ipvs"
    ]
    ipvs = next(r for r in criterion["rows"] if r["proxier"] == "ipvs")
    assert ipvs["status"] == "not demonstrated"
    assert ipvs["why"].startswith(f"run {near.id}:") and f"run {far.id}" not in ipvs["why"]
    assert f"ipvs (run {near.id}:" in criterion["detail"]
