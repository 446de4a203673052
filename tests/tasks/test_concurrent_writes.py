"""Drill: several workers write runs and results at once (PostgreSQL in CI; SQLite in WAL mode too)."""

from __future__ import annotations

import itertools

import pytest
from django.db import connection
from django.db.models import Count

from dashboard.domain.catalog import keys_of
from dashboard.domain.models import Run, TestResult
from dashboard.domain.runs import request_run
from tests.e2e import wait_for
from tests.labtools import lab_clusters, profile
from tests.worker import celery_worker

pytestmark = [
    pytest.mark.drills,
    pytest.mark.e2e,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]

# Eight runs for eight processes: every process busy at once, every cluster asked for two runs
# at the same moment. (Sixteen runs took past 420 s in CI, with coverage on two cores beside the
# qemu guest; the contention is the same with eight.)
CLUSTERS = 4
RUNS_PER_CLUSTER = 2


def test_two_workers_of_four_processes_lose_no_result_and_duplicate_no_run():
    profiles = [
        profile(name=f"drill-pg-{i:02d}", proxier=("iptables", "ipvs")[i % 2])
        for i in range(CLUSTERS)
    ]
    with lab_clusters(*profiles) as (_, clusters):
        # All eight processes compete: the share kept free for periodic jobs
        # (RUNS_REQUESTED_MAX_RUNNING, 3 by default) is lifted, or three would run at a time.
        unlimited = {"RUNS_REQUESTED_MAX_RUNNING": "0"}
        with (
            celery_worker(concurrency=4, extra_env=unlimited) as first,
            celery_worker(concurrency=4, queue=first["queue"], extra_env=unlimited),
        ):
            # Two batteries per cluster: a second request for a battery still queued is that run.
            ids = [
                request_run(c, battery).pk
                for battery in ("basic", "all")[:RUNS_PER_CLUSTER]
                for c in clusters.values()
            ]
            wait_for(
                lambda: (
                    not Run.objects.filter(pk__in=ids, state__in=["queued", "running"]).exists()
                ),
                # About 40 s alone on a quiet machine; the rest is for CI's load (the other
                # xdist workers, Chromium and the qemu guest share the two cores). A timeout
                # fails the test.
                420,
                f"{len(ids)} runs on {connection.vendor}",
                first["log"],
            )

    runs = list(Run.objects.filter(pk__in=ids))
    assert Run.objects.count() == len(ids) == CLUSTERS * RUNS_PER_CLUSTER  # no run created twice
    assert {r.state for r in runs} == {"finished"}, {
        r.pk: (r.state, r.error) for r in runs if r.state != "finished"
    }

    basic = set(keys_of("basic"))
    per_run = dict(
        TestResult.objects.filter(run_id__in=ids).values_list("run_id").annotate(n=Count("id"))
    )
    keys_per_run: dict[int, set[str]] = {}
    for run_id, key in TestResult.objects.filter(run_id__in=ids).values_list("run_id", "test_key"):
        keys_per_run.setdefault(run_id, set()).add(key)
    for run in runs:
        assert basic <= keys_per_run.get(run.pk, set()), (run.pk, keys_per_run.get(run.pk))
        assert per_run[run.pk] == len(keys_per_run[run.pk]), (
            f"run {run.pk} has a result recorded twice"
        )
        assert run.basic_ok, (run.pk, run.qualifying_reason)

    # One cluster, one run at a time, even with eight processes competing for the leases.
    for cluster in clusters.values():
        spans = sorted((r.started, r.finished) for r in runs if r.cluster_id == cluster.pk)
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert end <= start, (cluster.name, spans)
