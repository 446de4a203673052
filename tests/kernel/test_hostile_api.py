"""Drill: a vendor's cluster server that is hostile (issue 22, finding 3).

Huge answers, answers dripped a byte at a time, silence, malformed JSON: each run ends in
bounded time and bounded memory, in error, with words naming the limit it broke, and never
quotes what the server sent. The limits are settings the tests lower to keep them short. The
runs go through the worker's own code (workers.runner.execute) in this process; the worker
drill (test_hostile_api_worker.py) shows the same through a real Celery worker.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest
from django.test import Client

from dashboard.domain.models import Run
from dashboard.domain.runs import request_run
from tests import factories
from tests.hostile_api import BANNER, hostile
from tests.labtools import lab_clusters, profile
from workers import runner

pytestmark = [pytest.mark.drills, pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def limits(settings):
    settings.CLUSTER_RESPONSE_MAX_BYTES = 1024 * 1024
    settings.CLUSTER_CALL_DEADLINE_SECONDS = 1.5
    return settings


def run_on(server, battery: str = "basic") -> tuple[Run, float]:
    cluster = factories.cluster(
        f"hostile-{server.mode}",
        kubeconfig=server.kubeconfig(),
        # generous read timeouts and retries: only the new limits can end these calls quickly
        timeouts={"request": 30, "api_tries": 4, "api_backoff": 0.05},
    )
    run = request_run(cluster, battery, dispatch_on_commit=False)
    started = time.monotonic()
    assert runner.execute(run.pk, worker="drill") == runner.DONE
    run.refresh_from_db()
    return run, time.monotonic() - started


def everything_shown(run: Run) -> str:
    page = Client().get(f"/runs/{run.pk}/").content.decode()
    api = Client().get(f"/api/v1/runs/{run.pk}/").content.decode()
    reasons = " ".join(run.results.values_list("reason", flat=True))
    return " ".join([run.error, reasons, page, api])


def assert_refused_in_words(run: Run, *words: str) -> None:
    assert run.state == "error", (run.state, run.error)
    assert all(w in run.error for w in words), run.error
    shown = everything_shown(run)
    assert BANNER.decode() not in shown
    for name in ("UnicodeDecodeError", "JSONDecodeError", "ValueError", "Traceback"):
        assert name not in shown, name


def test_a_huge_answer_is_cut_at_the_size_limit_in_bounded_memory(limits):
    with hostile("not-json") as server:  # the first run imports the battery: not measured
        run_on(server)
    with hostile("huge") as server:
        tracemalloc.start()
        try:
            run, took = run_on(server)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        sent = server.sent
    assert_refused_in_words(run, "larger than 1048576 bytes", "CLUSTER_RESPONSE_MAX_BYTES")
    # one answer of up to 400 MB on offer: the worker read a little past 1 MB and hung up
    assert sent < 64 * 1024 * 1024, sent
    assert peak < 16 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
    assert took < 20, took


def test_a_declared_huge_answer_is_refused_before_reading_it(limits):
    with hostile("huge-declared") as server:
        run, took = run_on(server)
    assert_refused_in_words(run, "CLUSTER_RESPONSE_MAX_BYTES")
    assert took < 20


@pytest.mark.parametrize("mode", ["drip", "drip-body", "hang"])
def test_a_server_that_drips_or_hangs_trips_the_total_deadline_of_a_call(limits, mode):
    # A byte every 0.25 s never trips a 30 s read timeout; the 1.5 s total deadline does.
    with hostile(mode, pace=0.25) as server:
        run, took = run_on(server)
    assert_refused_in_words(run, "longer than 1.5 s in all", "CLUSTER_CALL_DEADLINE_SECONDS")
    # the call is not retried and the rest of the run does not ask again (the time includes the
    # readiness recomputed after the run, seconds on a busy machine)
    assert took < 20, took
    assert server.requests <= 2, server.requests


@pytest.mark.parametrize(
    "mode,words",
    [("not-utf8", "not UTF-8 text where JSON was expected"), ("not-json", "not valid JSON")],
)
def test_a_malformed_answer_is_named_in_words(limits, mode, words):
    with hostile(mode) as server:
        run, took = run_on(server)
    assert_refused_in_words(run, "malformed answer", words)
    assert took < 20


def test_a_run_stops_at_its_wall_clock_limit(settings):
    # A healthy but endlessly slow cluster: pods never start, each wait is long.
    settings.RUN_TIME_LIMIT_SECONDS = 3
    with lab_clusters(profile(name="drill-slow", faults={"stuck_pending": True})) as (_, clusters):
        cluster = clusters["drill-slow"]
        cluster.timeouts = {**cluster.timeouts, "pod_start": 600}
        cluster.save(update_fields=["timeouts"])
        run = request_run(cluster, "basic", dispatch_on_commit=False)
        started = time.monotonic()
        assert runner.execute(run.pk, worker="drill") == runner.DONE
        took = time.monotonic() - started
    run.refresh_from_db()
    assert run.state == "error" and "wall-clock limit of 3 s" in run.error, run.error
    assert "RUN_TIME_LIMIT_SECONDS" in run.error
    assert took < 20, took
