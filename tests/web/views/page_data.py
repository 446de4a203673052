"""A history of runs and submissions that can be grown, for the page tests, and the queries one
page costs."""

from __future__ import annotations

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from dashboard.domain.catalog import Outcome
from dashboard.domain.models import Cluster, Submission
from tests import factories


def grow_history(cluster: Cluster, runs: int, *, start_days_ago: float = 40) -> None:
    """Adds `runs` finished runs on the cluster, alternating batteries and one flaky test."""
    for i in range(runs):
        outcomes = dict(factories.PASSING)
        if i % 3 == 0:
            outcomes["pod-to-pod"] = Outcome.FAILED
        outcomes["hostport-kubenet"] = Outcome.SKIPPED
        factories.run(
            cluster,
            outcomes,
            battery=("all", "basic", "connectivity")[i % 3],
            days_ago=start_days_ago - i * 0.1,
        )


def grow_submissions(n: int, plugin: str = "cilium") -> None:
    for i in range(n):
        factories.submission(
            plugin,
            status=(Submission.Status.VERIFIED, Submission.Status.PENDING)[i % 2],
            days_ago=30 - i * 0.01,
            proxier=("iptables", "ipvs")[i % 2],
        )


def queries(client: Client, url: str) -> int:
    """Queries of one request as visitors get it: the published readiness evaluation is warm
    (its own cost is pinned in tests/domain/readiness/test_readiness_criteria.py)."""
    client.get(url)
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(ctx.captured_queries)
