"""Queued runs are bounded (issue 12: a vendor queued 27 runs on one cluster, delaying everyone's
periodic jobs): one queued run per cluster and battery, a cap per owner, periodic runs exempt."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.domain.models import Run
from tests import factories
from tests.conftest import auth

pytestmark = pytest.mark.django_db


def ask(client: Client, token: str, cluster: str, battery: str = "basic"):
    return client.post(
        f"/api/v1/clusters/{cluster}/runs/",
        {"battery": battery},
        content_type="application/json",
        **auth(token),
    )


@pytest.fixture
def calico(db):
    return factories.vendor("Calico vendor", ("calico",))


def test_a_second_request_for_a_queued_battery_answers_with_the_queued_run(
    client, vendor_token, calico
):
    factories.cluster("calico-a", owner=calico)
    answers = [ask(client, vendor_token, "calico-a") for _ in range(27)]
    assert {a.status_code for a in answers} == {202}
    assert len({a.json()["run"] for a in answers}) == 1
    assert Run.objects.filter(state=Run.State.QUEUED).count() == 1
    # another battery is another run
    assert (
        ask(client, vendor_token, "calico-a", "connectivity").json()["run"]
        != answers[0].json()["run"]
    )


def test_the_run_now_button_does_not_queue_the_same_battery_twice(vendor_user):
    c = factories.cluster("calico-a", owner=vendor_user.vendors.get())
    page = Client()
    page.force_login(vendor_user)
    first = page.post(f"/clusters/{c.name}/run/", {"battery": "basic"}, follow=True)
    second = page.post(f"/clusters/{c.name}/run/", {"battery": "basic"}, follow=True)
    assert first.status_code == second.status_code == 200
    assert "already queued" in second.content.decode()
    assert Run.objects.count() == 1


def test_an_owner_may_have_only_so_many_runs_waiting(client, vendor_token, calico, settings):
    settings.RUNS_QUEUED_PER_OWNER = 3
    for name in ("calico-a", "calico-b", "calico-c", "calico-d"):
        factories.cluster(name, owner=calico)
    assert [
        ask(client, vendor_token, n).status_code for n in ("calico-a", "calico-b", "calico-c")
    ] == [202] * 3
    refused = ask(client, vendor_token, "calico-d")
    assert refused.status_code == 429
    assert "3 runs waiting or running (at most 3" in refused.json()["error"]
    assert not Run.objects.filter(cluster__name="calico-d").exists()
    # a run that started still holds a worker: it counts until it ends (issue 22, finding 3)
    Run.objects.filter(cluster__name="calico-a").update(state=Run.State.RUNNING)
    assert ask(client, vendor_token, "calico-d").status_code == 429
    Run.objects.filter(cluster__name="calico-a").update(state=Run.State.FINISHED)
    assert ask(client, vendor_token, "calico-d").status_code == 202


def test_periodic_runs_are_never_merged_capped_or_starved(client, vendor_token, calico, settings):
    from workers.tasks import run_schedule

    settings.RUNS_QUEUED_PER_OWNER = 1
    c = factories.cluster("calico-a", owner=calico)
    schedule = factories.schedule(c, battery="basic")
    manual = ask(client, vendor_token, "calico-a").json()["run"]
    assert ask(client, vendor_token, "calico-a", "connectivity").status_code == 429
    periodic = run_schedule(schedule.pk)
    assert periodic is not None and periodic != manual
    assert Run.objects.get(pk=periodic).trigger == Run.Trigger.PERIODIC
