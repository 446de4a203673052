"""No Redis at all: the embedded broker (files under var/) and database leases give the same
guarantees as Redis: runs are executed by a real worker, one run per cluster at a time."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain.models import ClusterLease, Run
from tests.e2e import maintainer_token, request_run, wait_for
from tests.labtools import lab_clusters, profile
from tests.worker import celery_worker

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_runs_go_through_the_embedded_broker_and_never_overlap_on_a_cluster(tmp_path, settings):
    settings.EMBEDDED_BROKER = True  # the leases of this process live in the database too
    token = maintainer_token()
    client = Client()
    with lab_clusters(profile(name="no-redis", faults={"pod_start_delay_s": 0.05})):
        with celery_worker(
            concurrency=2, embedded_dir=tmp_path, extra_env={"REDIS_URL": "redis://127.0.0.1:1/0"}
        ) as worker:
            ids = [
                request_run(client, token, "no-redis", "basic"),
                request_run(client, token, "no-redis", "connectivity"),
            ]
            wait_for(
                lambda: all(r.state == "finished" for r in Run.objects.filter(pk__in=ids)),
                120,
                "both runs through the embedded broker",
                worker["log"],
            )
            banner = worker["log"].read_text()
            assert "transport:   filesystem://" in banner, banner[:2000]
    first, second = sorted(Run.objects.filter(pk__in=ids), key=lambda r: r.started)
    assert first.finished <= second.started
    assert not ClusterLease.objects.exists()  # both leases were released
