"""Drill: hostile cluster servers against a real Celery worker (issue 22, finding 3).

One vendor's two clusters drip their answers a byte at a time and a third one hangs. They
used to hold every worker slot for many minutes. Now each of their runs ends at the call
deadline, requested runs hold at most RUNS_REQUESTED_MAX_RUNNING of the worker's slots, and
meanwhile another vendor's cluster (the lab) gets its periodic basic run and a requested run
done on time. The limits are lowered through the worker's environment to keep this short.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
from django.test import Client

from dashboard.domain.models import Run
from dashboard.domain.runs import request_run
from tests import factories
from tests.battery_specs import FAST
from tests.e2e import wait_for
from tests.hostile_api import BANNER, hostile
from tests.labtools import lab_clusters, profile
from tests.worker import celery_worker
from workers.tasks import run_schedule

pytestmark = [
    pytest.mark.drills,
    pytest.mark.e2e,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]

DEADLINE = 2.0


def test_hostile_clusters_neither_hold_the_workers_nor_delay_another_vendors_runs(settings):
    settings.RUNS_QUEUED_PER_OWNER = 5
    hostile_vendor = factories.vendor("Hostile vendor", ("calico",))
    with (
        hostile("drip", pace=0.3) as drip_a,
        hostile("drip-body", pace=0.3) as drip_b,
        hostile("hang") as hang,
        lab_clusters(profile(name="lab-cilium", plugin="cilium")) as (_, clusters),
    ):
        lab = clusters["lab-cilium"]
        lab.timeouts = {**lab.timeouts, **dataclasses.asdict(FAST)}
        lab.save(update_fields=["timeouts"])
        schedule = factories.schedule(lab, battery="basic")
        bad = [
            factories.cluster(
                f"hostile-{i}",
                owner=hostile_vendor,
                kubeconfig=server.kubeconfig(),
                timeouts={"request": 60, "api_tries": 4, "api_backoff": 0.05},
            )
            for i, server in enumerate((drip_a, drip_b, hang))
        ]
        with celery_worker(
            concurrency=2,
            extra_env={
                "CLUSTER_CALL_DEADLINE_SECONDS": str(DEADLINE),
                "RUNS_REQUESTED_MAX_RUNNING": "1",
            },
        ) as worker:
            started = time.monotonic()
            hostile_runs = [request_run(c, "all").pk for c in bad]
            time.sleep(0.5)  # the hostile runs are first in the queue
            periodic = run_schedule(schedule.pk)
            other = request_run(lab, "basic").pk

            def ended(pk: int) -> bool:
                return Run.objects.get(pk=pk).state in ("finished", "error", "cancelled")

            wait_for(lambda: ended(periodic), 90, "the periodic run", worker["log"])
            periodic_took = time.monotonic() - started
            wait_for(
                lambda: all(ended(pk) for pk in [*hostile_runs, other]),
                120,
                "every run to end",
                worker["log"],
            )
            all_took = time.monotonic() - started

    run = Run.objects.get(pk=periodic)
    assert run.trigger == "periodic" and run.state == "finished", (run.state, run.error)
    assert Run.objects.get(pk=other).state == "finished", Run.objects.get(pk=other).error
    # Without the limits two dripping servers held both slots for minutes (each call up to its
    # 60 s read timeout, four tries); now every hostile call ends at the 2 s deadline.
    assert periodic_took < 60, periodic_took
    assert all_took < 100, all_took
    for pk in hostile_runs:
        r = Run.objects.get(pk=pk)
        assert r.state == "error" and "CLUSTER_CALL_DEADLINE_SECONDS" in r.error, r.error
        page = Client().get(f"/runs/{pk}/").content.decode()
        assert BANNER.decode() not in page and "longer than 2 s in all" in page
