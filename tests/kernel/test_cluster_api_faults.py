"""Drill: the cluster's API answers 5xx, hangs, or is gone.

Transient errors are retried with backoff and a limit; a cluster that stays broken ends the run
in bounded time with the cause. The run goes through the worker's own code (workers.runner.execute,
in this process: the lab's faults are what is under test, not the broker).
"""

from __future__ import annotations

import logging
import time

import pytest

from dashboard.domain.models import Cluster, Run
from dashboard.domain.runs import request_run
from tests.labtools import lab_clusters, profile
from workers import runner

pytestmark = [pytest.mark.drills, pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def run_now(cluster: Cluster, battery: str = "basic", **timeouts: float) -> tuple[Run, float]:
    if timeouts:
        cluster.timeouts = {**cluster.timeouts, **timeouts}
        cluster.save(update_fields=["timeouts"])
    run = request_run(cluster, battery, dispatch_on_commit=False)
    started = time.monotonic()
    assert runner.execute(run.pk, worker="drill") == runner.DONE
    run.refresh_from_db()
    return run, time.monotonic() - started


def assert_ended_broken_with(run: Run, *causes: str) -> None:
    """`error` with the cause, or (the runner of the day) every test in error saying why."""
    results = list(run.results.all())
    assert results, "every test of the battery has a result"
    if run.state == "error":
        text = run.error
    else:
        assert run.state == "finished", run.state
        assert {r.outcome for r in results} <= {"error", "not_run"}, {
            r.test_key: r.outcome for r in results
        }
        text = " ".join(r.reason for r in results)
    assert any(c in text for c in causes), f"none of {causes} in {text[:500]!r}"


def test_an_api_failing_a_third_of_its_requests_is_retried_and_the_run_finishes(caplog):
    caplog.set_level(logging.INFO, logger="kernel.kube")
    with lab_clusters(profile(name="drill-flaky", faults={"api_error_rate": 0.3})) as (_, clusters):
        # ten tries a call: a call fails for good with probability 0.3**10, the run has a few hundred
        run, _took = run_now(clusters["drill-flaky"], api_tries=10, api_backoff=0.01)
    retried = [r for r in caplog.records if "transient API error" in r.getMessage()]
    assert len(retried) >= 5, "the lab injected errors and the battery retried them"
    assert run.state == "finished", run.error
    outcomes = dict(run.results.values_list("test_key", "outcome"))
    assert "error" not in outcomes.values() and "not_run" not in outcomes.values(), outcomes
    # The retries' own cost is bounded by the backoff (0.01 s doubled per try), whatever the
    # machine's load: the waits that followed each logged failure, from the log itself.
    waited = sum(0.01 * 2 ** (r.args[0] - 1) for r in retried if r.args[0] < r.args[1])
    assert waited < 5, f"{waited:.2f} s of backoff over {len(retried)} retries"


def test_an_api_that_always_answers_5xx_ends_the_run_with_the_status_after_bounded_retries():
    with lab_clusters(profile(name="drill-5xx", faults={"api_error_rate": 1.0})) as (_, clusters):
        run, took = run_now(clusters["drill-5xx"], api_tries=4, api_backoff=0.05)
    assert_ended_broken_with(run, "500", "503")
    assert took < 10, f"4 tries with 0.05 s backoff, not {took:.1f} s"


def test_an_api_that_hangs_ends_the_run_as_unreachable_within_its_request_timeouts():
    with lab_clusters(
        profile(name="drill-hang", faults={"api_timeout": True, "api_timeout_s": 10})
    ) as (_, clusters):
        run, took = run_now(clusters["drill-hang"], request=0.3, api_tries=3, api_backoff=0.05)
    assert_ended_broken_with(run, "unreachable", "Timeout", "timed out")
    # 3 tries of 0.3 s, then every later call tries once: far below the lab's 10 s hang per call
    assert took < 8, took


def test_a_cluster_whose_api_is_gone_ends_the_run_as_unreachable_quickly():
    with lab_clusters(profile(name="drill-gone")) as (_, clusters):
        cluster = clusters["drill-gone"]
    # the lab has stopped: nothing listens at the kubeconfig's address any more
    run, took = run_now(cluster, api_tries=3, api_backoff=0.05)
    assert_ended_broken_with(run, "unreachable")
    assert took < 5, took
