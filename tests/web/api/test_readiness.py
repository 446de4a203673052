"""GET /api/v1/readiness/: the verdict in the contract's shape, with links to its evidence."""

from __future__ import annotations

import pytest

from tests import factories as f

pytestmark = pytest.mark.django_db


def test_readiness_answers_the_contract_shape(client):
    data = client.get("/api/v1/readiness/").json()
    # a fresh install: the KEP's stage (GA in 1.20), marked as history, not a sign-off here
    assert data["feature"] == "sctp" and data["stage"] == "stable"
    assert data["stage_source"] == "kep"
    assert [(m["stage"], m["release"], m["date"]) for m in data["kep_history"]] == [
        ("alpha", "1.12", "2018-09-27"),
        ("beta", "1.19", "2020-08-26"),
        ("stable", "1.20", "2020-12-08"),
    ]
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
