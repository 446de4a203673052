"""Issue 36: one verified file with no run time took `/`, the readiness API, the catalog and the
matrix down (a stale-but-undated item reached a date format). Undated evidence is not `stale`
(its age is unknown, not old): it is "not demonstrated", and the pages keep answering."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from dashboard.domain.models import Submission
from dashboard.domain.policy import on_proxier
from dashboard.domain.readiness import evaluate
from dashboard.domain.readiness.criteria import iptables_and_ipvs
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


# --- the page never goes down with one item (item 3) ---------------------------------------------
# A defect of the same kind put back (both guards of the fix above stop the real one): an
# undated item's time reaches a date format inside the criterion, as it did in issue 36.


def _defect(item: Any, mode: str) -> bool:
    return bool(f"{item.when:%Y-%m-%d}") and on_proxier(item, mode)


@pytest.fixture
def the_old_defect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(iptables_and_ipvs, "on_proxier", _defect)


def _readiness(client: Client) -> dict:
    response = client.get("/api/v1/readiness/")
    assert response.status_code == 200
    return response.json()


def _metric(client: Client, name: str) -> float:
    text = client.get("/metrics").content.decode()
    line = next(x for x in text.splitlines() if x.startswith(f"sctp_dashboard_{name} "))
    return float(line.split()[-1])


def test_one_raising_criterion_is_unmet_and_named_the_others_stand(the_old_defect) -> None:
    s = _undated_verified("ipvs")
    evaluation = evaluate()
    [failure] = evaluation["failures"]
    assert failure["part"] == "iptables-and-ipvs" and failure["error"].startswith("TypeError")
    assert (failure["item_kind"], failure["item_id"]) == ("submission", s.pk)
    assert failure["item_url"] == f"/submissions/{s.pk}/"
    assert "in _defect" in failure["where"]  # the innermost frame, where it raised
    crit = _criterion(evaluation, "iptables-and-ipvs")
    assert crit["status"] == "unmet" and "could not be evaluated" in crit["detail"]
    assert _criterion(evaluation, "tests-written")["status"] in ("met", "unmet")
    assert "failure" not in _criterion(evaluation, "tests-written")


@pytest.mark.usefixtures("memory_cache")
def test_the_last_good_publication_is_served_and_the_failure_shown_and_counted(
    client: Client, maintainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    f.run(f.cluster(proxier="iptables"))
    f.run(f.cluster(proxier="ipvs"))
    good = _readiness(client)
    assert "publication" not in good
    assert _criterion(good, "iptables-and-ipvs")["status"] == "met"
    assert _metric(client, "readiness_evaluation_failures_total") == 0

    monkeypatch.setattr(iptables_and_ipvs, "on_proxier", _defect)
    bad = _undated_verified("ipvs", "cilium")  # a new item: the publication is out of date

    served = _readiness(client)
    assert served["publication"]["current"] is False
    assert served["publication"]["last_good_evaluated_at"] == good["evaluated_at"]
    assert served["publication"]["failed"] == ["iptables-and-ipvs"]
    assert served["transitions"] == good["transitions"]  # the last good, not a half one
    assert "failures" not in served
    assert _metric(client, "readiness_evaluation_failures_total") == 1
    assert _metric(client, "readiness_serving_last_good") == 1
    _readiness(client)  # served again: not evaluated (and failed) once per request
    assert _metric(client, "readiness_evaluation_failures_total") == 1

    page = client.get("/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'data-publication="last-good"' in body and "TypeError" not in body
    client.force_login(maintainer)
    body = client.get("/").content.decode()
    assert 'data-failed="iptables-and-ipvs"' in body and "TypeError" in body
    assert f'href="/submissions/{bad.pk}/"' in body
    for path in PAGES:
        assert client.get(path).status_code == 200, path

    monkeypatch.setattr(iptables_and_ipvs, "on_proxier", on_proxier)
    f.run(f.cluster(proxier="nftables"))  # evidence changes: the next evaluation succeeds
    again = _readiness(client)
    assert "publication" not in again and again["evaluated_at"] != good["evaluated_at"]
    assert _metric(client, "readiness_serving_last_good") == 0
    assert _metric(client, "readiness_evaluation_failures_total") == 1


@pytest.mark.usefixtures("memory_cache", "the_old_defect")
def test_with_no_good_publication_yet_what_failed_is_unmet_never_met(client: Client) -> None:
    f.run(f.cluster(proxier="iptables"))
    f.run(f.cluster(proxier="ipvs"))
    _undated_verified("ipvs", "cilium")
    served = _readiness(client)
    assert served["publication"]["last_good_evaluated_at"] is None
    assert _criterion(served, "iptables-and-ipvs")["status"] == "unmet"
    assert served["transitions"][1]["ready"] is False


@pytest.mark.usefixtures("memory_cache")
def test_an_evaluation_that_raises_as_a_whole_leaves_every_criterion_unmet(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dashboard.domain.publication as pub

    def broken(ctx=None):
        raise RuntimeError("the lookups failed")

    monkeypatch.setattr(pub, "evaluate", broken)
    served = _readiness(client)
    assert served["publication"]["failed"] == ["evaluation"]
    assert {c["status"] for t in served["transitions"] for c in t["criteria"]} == {"unmet"}
    assert client.get("/").status_code == 200
