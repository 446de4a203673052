"""The public readiness answers share one evaluation until evidence changes."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.models import Run, TestResult
from dashboard.readiness.history import record_evaluation
from tests import factories as f

pytestmark = pytest.mark.django_db


def status(client, key: str) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        data = client.get("/api/v1/readiness/").json()
    found = next(c["status"] for t in data["transitions"] for c in t["criteria"] if c["key"] == key)
    return found, len(ctx.captured_queries)


def test_a_second_request_reuses_the_evaluation(client):
    _, first = status(client, "iptables-and-ipvs")
    _, second = status(client, "iptables-and-ipvs")
    assert first > 5 and second == 0


def test_new_evidence_shows_at_once(client):
    assert status(client, "iptables-and-ipvs")[0] == "unmet"
    f.run(f.cluster(proxier="iptables"))
    f.run(f.cluster(proxier="ipvs"))
    assert status(client, "iptables-and-ipvs")[0] == "met"


def test_a_run_finished_by_a_bulk_update_refreshes_it_through_record_evaluation(client):
    f.run(f.cluster(proxier="iptables"))
    r = f.run(f.cluster(proxier="ipvs"))
    assert status(client, "iptables-and-ipvs")[0] == "met"
    # Bulk updates send no signal, as the runner's are.
    Run.objects.filter(pk=r.pk).update(pod_to_service_passed=False)
    TestResult.objects.filter(run=r, test_key="pod-to-service").update(outcome="failed")
    record_evaluation(reason="test")
    assert status(client, "iptables-and-ipvs")[0] == "unmet"


def test_zero_seconds_turns_it_off(client, settings):
    settings.READINESS_CACHE_SECONDS = 0
    status(client, "tests-written")
    assert status(client, "tests-written")[1] > 5
