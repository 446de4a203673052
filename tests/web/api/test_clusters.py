"""GET /api/v1/clusters/: the registered clusters with their last run."""

from __future__ import annotations

import pytest

from tests import factories as f

pytestmark = pytest.mark.django_db


def test_the_cluster_list_carries_the_last_run(client, django_assert_max_num_queries):
    c = f.cluster("with-runs")
    f.run(c, days_ago=2)
    newest = f.run(c, days_ago=1)
    for _ in range(5):
        f.run(f.cluster())
    with django_assert_max_num_queries(3):
        data = client.get("/api/v1/clusters/").json()
    assert next(x for x in data if x["name"] == "with-runs")["last_run"]["id"] == newest.id
