"""Runs requested through the API, executed by a real Celery worker over Redis against the lab."""

from __future__ import annotations

import os
import signal
import time

import pytest
from django.test import Client

from dashboard.domain.models import Run
from dashboard.domain.readiness import evaluate
from tests.e2e import maintainer_token, request_run, wait_for
from tests.labtools import lab_clusters, profile
from tests.worker import celery_worker
from workers.lease import Lease

pytestmark = [pytest.mark.e2e, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def test_a_run_requested_through_the_api_is_executed_by_a_worker_and_moves_the_verdicts():
    token = maintainer_token()
    client = Client()
    with lab_clusters(
        profile(name="e2e-calico", proxier="iptables", kubernetes_version="1.34.2"),
        profile(name="e2e-cilium", plugin="cilium", proxier="ipvs", kubernetes_version="1.34.2"),
    ):
        with celery_worker(concurrency=2) as worker:
            ids = [
                request_run(client, token, "e2e-calico", "all"),
                request_run(client, token, "e2e-cilium", "all"),
            ]
            for run_id in ids:
                wait_for(
                    lambda run_id=run_id: Run.objects.get(pk=run_id).state in ("finished", "error"),
                    240,  # about 40 s alone for both runs; CI at load 6-8 took past 90 s
                    f"run {run_id}",
                    worker["log"],
                )
    for run_id in ids:
        run = Run.objects.get(pk=run_id)
        assert run.state == "finished", run.error
        assert run.trigger == "api" and run.worker.startswith("test-")
        data = client.get(f"/api/v1/runs/{run_id}/").json()
        assert data["results"]["pod-to-service"]["outcome"] == "passed"
        # Upstream's SCTP hostPort test runs on every cluster (the iptables rule only on kubenet).
        assert data["results"]["hostport-kubenet"]["outcome"] == "passed"
        assert data["fingerprint"]["worker_sctp"]["available"] is False
        assert data["emulated"] is True
    # Lab clusters are emulated: their runs move no verdict, and each detail says what they would do.
    criteria = {c["key"]: c for t in evaluate()["transitions"] for c in t["criteria"]}
    for key in ("two-out-of-tree-plugins", "iptables-and-ipvs"):
        assert criteria[key]["status"] == "unmet"
        assert "would be met on emulated clusters only: not counted" in criteria[key]["detail"]
        assert criteria[key]["evidence"] and not any(e["counts"] for e in criteria[key]["evidence"])
        assert all(e["emulated"] and "emulated" in e["why"] for e in criteria[key]["evidence"])


def test_two_runs_on_one_cluster_requested_at_once_never_overlap():
    token = maintainer_token()
    client = Client()
    with lab_clusters(profile(name="busy", faults={"pod_start_delay_s": 0.1})):
        with celery_worker(concurrency=2) as worker:
            ids = [
                request_run(client, token, "busy", "basic"),
                request_run(client, token, "busy", "connectivity"),
            ]
            wait_for(
                lambda: all(r.state == "finished" for r in Run.objects.filter(pk__in=ids)),
                120,
                "both runs",
                worker["log"],
            )
    first, second = sorted(Run.objects.filter(pk__in=ids), key=lambda r: r.started)
    assert first.finished <= second.started, (first.started, first.finished, second.started)


def test_a_worker_killed_mid_run_leaves_the_run_in_error_and_the_lease_free(settings):
    from workers.tasks import reap_stale_runs

    settings.RUN_HEARTBEAT_SECONDS = 1
    settings.RUN_HEARTBEAT_TIMEOUT = 4
    settings.RUN_LEASE_SECONDS = 30  # longer than the test: only the reaper can free it this fast
    token = maintainer_token()
    client = Client()
    with lab_clusters(profile(name="slow", faults={"pod_start_delay_s": 1.0})) as (_, clusters):
        cluster = clusters["slow"]
        with celery_worker() as worker:
            run_id = request_run(client, token, "slow", "all")
            wait_for(
                lambda: Run.objects.get(pk=run_id).state == "running",
                30,
                "the run to start",
                worker["log"],
            )
            assert Lease.holder_of(cluster.id) == f"run-{run_id}"
            os.killpg(worker["proc"].pid, signal.SIGKILL)
            worker["proc"].wait()
        assert Run.objects.get(pk=run_id).state == "running"  # nobody has noticed yet
        time.sleep(settings.RUN_HEARTBEAT_TIMEOUT + 1)
        assert run_id in reap_stale_runs()
        run = Run.objects.get(pk=run_id)
        assert run.state == "error" and run.error.startswith("worker lost")
        assert Lease.holder_of(cluster.id) is None
        assert run.results.filter(outcome="not_run").exists()
        # and a retry on the same cluster succeeds
        with celery_worker() as worker:
            retry_id = request_run(client, token, "slow", "basic")
            wait_for(
                lambda: Run.objects.get(pk=retry_id).state == "finished",
                90,
                "the retry",
                worker["log"],
            )
