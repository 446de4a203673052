"""GET /api/v1/runs/<id>/: a run's state, timings and every test."""

from __future__ import annotations

import pytest

from dashboard.domain.catalog import ALL_KEYS
from tests import factories as f

pytestmark = pytest.mark.django_db


def test_a_run_answers_with_state_timings_and_every_test(client):
    r = f.run(f.cluster(), f.with_outcome("pod-to-loadbalancer", "skipped"))
    data = client.get(f"/api/v1/runs/{r.id}/").json()
    assert data["state"] == "finished" and data["started"] and data["finished"]
    assert set(data["results"]) == set(ALL_KEYS)
    assert data["results"]["pod-to-loadbalancer"]["outcome"] == "skipped"
    assert client.get("/api/v1/runs/999999/").status_code == 404
