"""Drill: a worker SIGKILLed mid-run. The reaper ends the run, frees the lease, sweeps, a retry works."""

from __future__ import annotations

import os
import signal

import pytest
from django.test import Client

from dashboard.domain.models import Run
from kernel.battery.base import NAMESPACE_PREFIX
from tests.e2e import maintainer_token, request_run, wait_for
from tests.labtools import lab_clusters, profile
from tests.worker import celery_worker
from workers.lease import Lease

pytestmark = [
    pytest.mark.drills,
    pytest.mark.e2e,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]


def battery_namespaces(server, name: str) -> list[str]:
    cluster = server.cluster(name)
    with cluster.lock:
        return [ns for ns in cluster.namespaces if ns.startswith(NAMESPACE_PREFIX)]


def test_a_killed_worker_s_run_ends_in_error_its_lease_frees_its_namespaces_go_and_a_retry_succeeds(
    settings,
):
    from workers.tasks import reap_stale_runs, sweep_cluster

    settings.RUN_HEARTBEAT_SECONDS = 1
    settings.RUN_HEARTBEAT_TIMEOUT = 3
    settings.RUN_LEASE_SECONDS = (
        60  # far longer than the drill: only the reaper can free it in time
    )
    token, client = maintainer_token(), Client()
    with lab_clusters(profile(name="drill-killed", faults={"pod_start_delay_s": 1.0})) as (
        server,
        clusters,
    ):
        cluster = clusters["drill-killed"]
        with celery_worker() as worker:
            run_id = request_run(client, token, "drill-killed", "all")
            wait_for(
                lambda: (
                    Run.objects.get(pk=run_id).state == "running"
                    and battery_namespaces(server, "drill-killed")
                ),
                30,
                "the run to start and create its namespaces",
                worker["log"],
            )
            assert Lease.holder_of(cluster.id) == f"run-{run_id}"
            os.killpg(worker["proc"].pid, signal.SIGKILL)
            worker["proc"].wait()
        left_behind = battery_namespaces(server, "drill-killed")
        assert left_behind, "a killed worker cannot have cleaned up"

        # The reaper, as beat calls it every 30 s (in this process). The first call, right after
        # the kill, finds the run's heartbeat still fresh.
        assert run_id not in reap_stale_runs()

        # The replacement worker: the sweep the reaper queues goes to it, then a retry.
        with celery_worker() as worker:
            wait_for(
                lambda: run_id in reap_stale_runs(),
                settings.RUN_HEARTBEAT_TIMEOUT + 5,
                "the reaper",
            )
            run = Run.objects.get(pk=run_id)
            assert run.state == "error" and run.error.startswith("worker lost"), run.error
            assert run.finished is not None
            assert Lease.holder_of(cluster.id) is None
            keys = list(run.results.values_list("test_key", flat=True))
            assert len(keys) == len(set(keys)) and run.results.filter(outcome="not_run").exists()

            wait_for(
                lambda: not battery_namespaces(server, "drill-killed"),
                15,
                f"the sweep to delete {left_behind}",
                worker["log"],
            )
            assert sweep_cluster(cluster.id) == []  # nothing left for a second sweep

            retry_id = request_run(client, token, "drill-killed", "basic")
            wait_for(
                lambda: Run.objects.get(pk=retry_id).state not in ("queued", "running"),
                60,
                "the retry",
                worker["log"],
            )
        retry = Run.objects.get(pk=retry_id)
        assert retry.state == "finished", retry.error
        assert battery_namespaces(server, "drill-killed") == []
