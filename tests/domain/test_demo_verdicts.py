"""The demo's state after `lab --register --kickoff`, through the HTTP API: emulated evidence
alone leaves every criterion unmet, and each detail says what it would do if it counted."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.test import Client

from dashboard.domain import lab_clusters as labreg
from dashboard.domain.models import Cluster, Run, Schedule
from dashboard.domain.runs import request_run
from lab.server import LabServer
from workers import runner

pytestmark = pytest.mark.django_db(transaction=True)

PROFILES = Path(__file__).resolve().parents[2] / "lab" / "profiles"
DEMO = ("calico-iptables", "calico-ipvs", "antrea-iptables")


@pytest.fixture
def demo_lab(monkeypatch):
    # One seam: runs are executed in this process instead of being sent to a broker.
    monkeypatch.setattr("dashboard.domain.runs.dispatch", lambda run_id: True)
    server = LabServer(
        [yaml.safe_load((PROFILES / f"{name}.yaml").read_text()) for name in DEMO]
    ).start()
    try:
        clusters = labreg.register(server)
        labreg.kickoff(clusters)
        yield {c.name: c for c in Cluster.objects.all()}
    finally:
        server.stop()


def run_queued() -> None:
    for run_id in (
        Run.objects.filter(state=Run.State.QUEUED).order_by("id").values_list("id", flat=True)
    ):
        assert runner.execute(run_id, worker="test") != runner.BUSY


def test_emulated_runs_alone_leave_every_criterion_unmet_with_the_what_if(demo_lab):
    run_queued()
    schedule = Schedule.objects.get()
    assert schedule.cluster.name == "calico-iptables"
    assert Cluster.objects.get(name="calico-iptables").basic_only  # its basic runs stay conclusive
    for _ in range(2):  # three scheduled runs in all: the kickoff's basic run is manual
        request_run(schedule.cluster, "basic", trigger=Run.Trigger.PERIODIC, schedule=schedule)
        run_queued()
    request_run(schedule.cluster, "basic", trigger=Run.Trigger.PERIODIC, schedule=schedule)
    run_queued()
    assert set(Run.objects.values_list("state", flat=True)) == {"finished"}

    data = Client().get("/api/v1/readiness/").json()
    assert not any(t["ready"] for t in data["transitions"])
    criteria = {c["key"]: c for t in data["transitions"] for c in t["criteria"]}
    assert {c["status"] for c in criteria.values()} == {"unmet"}
    for key in (
        "tests-written",
        "two-out-of-tree-plugins",
        "iptables-and-ipvs",
        "periodic-basic-passing",
    ):
        assert criteria[key]["what_if"] == "would be met on emulated clusters only: not counted", (
            criteria[key]
        )
        assert criteria[key]["detail"].endswith(
            "would be met on emulated clusters only: not counted"
        )
    for c in criteria.values():
        assert c["evidence"], c["key"]
        assert all(
            e["counts"] is False and e["emulated"] and "emulated" in e["why"] for e in c["evidence"]
        )
        assert "emulated" in c["detail"]
    # Every run says it is emulated, and the fingerprint says what the lab's /version said.
    run = Run.objects.filter(battery="all").first()
    body = Client().get(f"/api/v1/runs/{run.id}/").json()
    assert body["emulated"] is True


def test_the_kickoff_refuses_connectivity_runs_on_the_periodic_cluster(demo_lab):
    from dashboard.domain.runs import RunRequestError

    with pytest.raises(RunRequestError) as refused:
        request_run(demo_lab["calico-iptables"], "connectivity")
    assert refused.value.status == 409 and "basic-only" in refused.value.message
    kinds = dict(Run.objects.values_list("cluster__name", "battery"))
    assert kinds == {"calico-iptables": "basic", "calico-ipvs": "all", "antrea-iptables": "all"}


def test_the_demo_seeds_two_vendor_submissions_from_its_own_runs_and_they_never_count(
    demo_lab, maintainer
):
    from dashboard.domain.demo_seed import seed_submissions
    from dashboard.domain.models import Submission
    from tests import factories as f

    maintainer.username = "maintainer"
    maintainer.save()
    f.vendor("Calico vendor", ("calico",))
    f.vendor("Antrea vendor", ("antrea",))
    run_queued()
    made = seed_submissions(wait_seconds=0)
    assert len(made) == 2
    subs = list(Submission.objects.order_by("id"))
    assert [s.status for s in subs] == ["verified", "pending_review"]
    assert all(s.emulated and s.run_at_source == "file" for s in subs)
    assert {s.plugin.slug for s in subs} == {"calico", "antrea"}
    assert seed_submissions(wait_seconds=0) == []  # once per database

    data = Client().get("/api/v1/readiness/").json()
    entries = [
        e
        for t in data["transitions"]
        for c in t["criteria"]
        for e in c["evidence"]
        if e["kind"] == "submission"
    ]
    assert entries and all(not e["counts"] and e["emulated"] for e in entries)
    client = Client()
    client.force_login(maintainer)
    report = client.get("/review/report.md").content.decode()
    row = next(line for line in report.splitlines() if line.startswith(f"| [{subs[0].id}]"))
    assert "emulated, not counted" in row and "maintainer" in row
