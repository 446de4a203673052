"""Issue 36: one verified file with no run time took `/`, the readiness API, the catalog and the
matrix down (a stale-but-undated item reached a date format). Undated evidence is not `stale`
(its age is unknown, not old): it is "not demonstrated", and the pages keep answering."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain.models import Submission
from dashboard.domain.readiness import evaluate
from tests import factories as f

pytestmark = pytest.mark.django_db

PAGES = ("/", "/api/v1/readiness/", "/api/v1/catalog/", "/matrix/")


def _undated_verified(proxier: str, plugin: str = "calico") -> Submission:
    s = f.submission(plugin, proxier=proxier)
    Submission.objects.filter(pk=s.pk).update(run_at=None, run_at_source="")
    return Submission.objects.get(pk=s.pk)


def _criterion(evaluation: dict, key: str) -> dict:
    return next(c for t in evaluation["transitions"] for c in t["criteria"] if c["key"] == key)


@pytest.mark.parametrize("proxier", ["ipvs", "iptables", "nftables"])
def test_an_undated_verified_submission_is_not_demonstrated_not_stale(proxier: str) -> None:
    s = _undated_verified(proxier)
    crit = _criterion(evaluate(), "iptables-and-ipvs")
    row = next(r for r in crit["rows"] if r["proxier"] == proxier)
    assert row["status"] == "not demonstrated"
    assert f"submission {s.pk}" in row["why"] and "no run time" in row["why"]
    assert crit["status"] == "unmet"


def test_undated_evidence_beside_stale_evidence_keeps_the_stale_date() -> None:
    _undated_verified("ipvs")
    f.submission("calico", proxier="ipvs", run_days_ago=400)
    row = next(
        r for r in _criterion(evaluate(), "iptables-and-ipvs")["rows"] if r["proxier"] == "ipvs"
    )
    assert row["status"] == "stale" and row["why"].startswith("last demonstrated 20")


def test_every_page_answers_with_an_undated_verified_file(client: Client) -> None:
    for proxier in ("iptables", "ipvs"):
        _undated_verified(proxier, "calico")
        _undated_verified(proxier, "cilium")
    for path in PAGES:
        assert client.get(path).status_code == 200, path
