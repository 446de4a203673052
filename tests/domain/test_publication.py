"""The public readiness answers serve one stored evaluation until evidence changes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.domain import publication
from dashboard.domain.history import record_evaluation
from dashboard.domain.models import Run, TestResult
from tests import factories as f

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("memory_cache")]  # counts queries


def status(client, key: str) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as ctx:
        data = client.get("/api/v1/readiness/").json()
    found = next(c["status"] for t in data["transitions"] for c in t["criteria"] if c["key"] == key)
    return found, len(ctx.captured_queries)


def test_a_second_request_reuses_the_evaluation(client):
    _, first = status(client, "iptables-and-ipvs")
    _, second = status(client, "iptables-and-ipvs")
    assert first > 5 and second == 1  # the stored evaluation, one row


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
    settings.READINESS_MAX_AGE_SECONDS = 0
    status(client, "tests-written")
    assert status(client, "tests-written")[1] > 5


def test_the_beat_task_recomputes_what_time_alone_changed(client, settings):
    import time_machine
    from django.utils.timezone import now

    from dashboard.domain.models import PublishedReadiness
    from workers.tasks import refresh_readiness

    settings.READINESS_MAX_AGE_SECONDS = 10 * 24 * 3600  # readers would serve it for days
    f.run(f.cluster(proxier="iptables"), days_ago=89.5)
    f.run(f.cluster(proxier="ipvs"), days_ago=1)
    assert status(client, "iptables-and-ipvs")[0] == "met"
    with time_machine.travel(now() + timedelta(days=1)):  # no evidence changes; a day goes by
        assert status(client, "iptables-and-ipvs") == ("met", 1)
        refresh_readiness(reason="beat")
        assert status(client, "iptables-and-ipvs") == ("stale", 1)
        row = PublishedReadiness.objects.get()
        assert row.computed_version == row.version and (now() - row.computed).total_seconds() < 60


def test_a_changed_policy_setting_is_never_served_from_an_older_evaluation(client, settings):
    f.run(f.cluster(proxier="iptables"), days_ago=10)
    f.run(f.cluster(proxier="ipvs"), days_ago=1)
    assert status(client, "iptables-and-ipvs")[0] == "met"
    settings.READINESS_FRESH_DAYS = 5
    assert status(client, "iptables-and-ipvs")[0] == "stale"


def test_a_change_during_an_evaluation_leaves_it_out_of_date_not_lost(client):
    from dashboard.domain.models import PublishedReadiness
    from dashboard.domain.publication import publish

    status(client, "tests-written")
    row = PublishedReadiness.objects.get()
    version = row.version
    f.cluster()  # a save bumps the version
    assert PublishedReadiness.objects.get().version == version + 1
    publish()
    row = PublishedReadiness.objects.get()
    assert row.computed_version == row.version


def test_the_badge_is_served_from_the_published_evaluation(client):
    f.run(f.cluster(plugin_slug="calico"))
    client.get("/badge/calico.svg")
    with CaptureQueriesContext(connection) as ctx:
        body = client.get("/badge/calico.svg").content.decode()
    assert "connectivity passing" in body and len(ctx.captured_queries) == 1


@pytest.mark.heads_unchecked  # "another process" changes runs behind the application's back
def test_a_busy_process_looks_at_the_stored_row_once_per_recheck_window(
    client, settings, monkeypatch
):
    from dashboard.domain import publication
    from dashboard.domain.models import PublishedReadiness

    settings.READINESS_RECHECK_SECONDS = 1.0
    clock = [1000.0]
    monkeypatch.setattr(publication, "_clock", lambda: clock[0])
    f.run(f.cluster(proxier="iptables"))
    f.run(f.cluster(proxier="ipvs"))
    assert status(client, "iptables-and-ipvs")[0] == "met"
    assert status(client, "iptables-and-ipvs") == ("met", 0)  # within the second: no query
    clock[0] += 1.1
    assert status(client, "iptables-and-ipvs") == ("met", 1)  # looks again: still current
    assert status(client, "iptables-and-ipvs") == ("met", 0)

    # Another process (a worker) changes evidence: its bump is seen once the window is over.
    r = Run.objects.filter(proxier="ipvs").get()
    Run.objects.filter(pk=r.pk).update(pod_to_service_passed=False)
    TestResult.objects.filter(run=r, test_key="pod-to-service").update(outcome="failed")
    PublishedReadiness.objects.filter(pk=1).update(
        version=PublishedReadiness.objects.get().version + 1
    )
    clock[0] += 0.5
    assert status(client, "iptables-and-ipvs") == ("met", 0)
    clock[0] += 0.6
    assert status(client, "iptables-and-ipvs")[0] == "unmet"

    # A change made in this process is seen at once, inside the window.
    assert status(client, "iptables-and-ipvs") == ("unmet", 0)
    f.run(f.cluster(proxier="ipvs"))  # its signals bump the version here
    assert status(client, "iptables-and-ipvs")[0] == "met"


def test_the_age_limit_holds_inside_the_recheck_window(client, settings, monkeypatch):
    import time_machine
    from django.utils.timezone import now

    from dashboard.domain import publication

    settings.READINESS_RECHECK_SECONDS = 3600.0  # the version is never looked at again
    monkeypatch.setattr(publication, "_clock", lambda: 1000.0)
    f.run(f.cluster(proxier="iptables"), days_ago=89.99)
    f.run(f.cluster(proxier="ipvs"), days_ago=1)
    assert status(client, "iptables-and-ipvs")[0] == "met"
    assert status(client, "iptables-and-ipvs") == ("met", 0)
    with time_machine.travel(now() + timedelta(days=1)):  # older than READINESS_MAX_AGE_SECONDS
        assert status(client, "iptables-and-ipvs")[0] == "stale"


def test_requests_that_find_it_out_of_date_wait_for_one_evaluation(monkeypatch):
    import threading
    import time

    from dashboard.domain import publication

    stored: dict = {}
    evaluations: list[int] = []

    def publish(**_: object) -> dict:
        evaluations.append(1)
        time.sleep(0.2)  # an evaluation over a long history
        stored.update(computed="t1", data={"stage": "alpha"})
        return stored["data"]

    monkeypatch.setattr(publication, "_state", lambda: (None, False, False))
    monkeypatch.setattr(publication, "_served", lambda *_: dict(stored) if stored else None)
    monkeypatch.setattr(publication, "publish", publish)
    got: list[dict] = []
    threads = [threading.Thread(target=lambda: got.append(publication._entry())) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert len(evaluations) == 1 and len(got) == 6
    assert all(g["data"] == {"stage": "alpha"} for g in got)


def test_past_its_age_the_previous_publication_is_served_while_one_process_computes(
    client, settings
):
    import time_machine
    from django.core.cache import cache
    from django.utils.timezone import now

    from dashboard.domain.models import PublishedReadiness

    settings.READINESS_MAX_AGE_SECONDS = 120
    f.run(f.cluster(proxier="iptables"))
    f.run(f.cluster(proxier="ipvs"), days_ago=89.998)  # fresh for another 172 seconds
    assert status(client, "iptables-and-ipvs")[0] == "met"
    first = PublishedReadiness.objects.get().computed
    with time_machine.travel(now() + timedelta(seconds=200)):  # past its age, within twice it
        # Another process holds the lease: this one serves the previous publication at once
        # (one query: the look at the stored row), although its ipvs evidence aged meanwhile.
        assert cache.add(publication.LEASE_KEY, 1, 30)
        assert status(client, "iptables-and-ipvs") == ("met", 1)
        assert PublishedReadiness.objects.get().computed == first
        # The lease is free: this request computes the next publication and serves it.
        cache.delete(publication.LEASE_KEY)
        assert status(client, "iptables-and-ipvs")[0] == "stale"
        assert PublishedReadiness.objects.get().computed > first
    first = PublishedReadiness.objects.get().computed
    with time_machine.travel(first + timedelta(seconds=300)):  # past twice its age: never served
        assert cache.add(publication.LEASE_KEY, 1, 30)
        assert status(client, "iptables-and-ipvs")[0] == "stale"
        assert PublishedReadiness.objects.get().computed > first


def test_changed_evidence_is_never_served_from_the_previous_publication(client, settings):
    from django.core.cache import cache

    f.run(f.cluster(proxier="iptables"))
    assert status(client, "iptables-and-ipvs")[0] == "unmet"
    assert cache.add(publication.LEASE_KEY, 1, 30)  # even while another process computes
    f.run(f.cluster(proxier="ipvs"))
    assert status(client, "iptables-and-ipvs")[0] == "met"


def test_the_api_serves_the_stored_text_and_another_process_reads_the_same(client):
    """The publication is stored as the API's JSON text: the body is that text, byte for byte,
    in the process that published it and in one that only reads the row."""
    import json

    from dashboard.domain import publication
    from dashboard.domain.models import PublishedReadiness

    f.run(f.cluster(plugin_slug="calico", proxier="iptables"))
    body = client.get("/api/v1/readiness/").content
    stored = PublishedReadiness.objects.get().data
    assert isinstance(stored, str) and body == stored.encode()
    assert json.loads(stored)["transitions"][0]["criteria"]
    with publication._memo_lock:  # another process: nothing in memory, the row as it is
        publication._memo.clear()
        publication._look.clear()
    assert client.get("/api/v1/readiness/").content == body
    assert publication.published() == json.loads(stored)
