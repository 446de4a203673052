"""Every Celery task ends (soft and hard time limits), and a run waiting for a busy cluster backs
off exponentially instead of re-sending itself every 5 s for an hour (issue 12)."""

from __future__ import annotations

import pytest
import yaml
from billiard.exceptions import SoftTimeLimitExceeded

from dashboard.domain.models import Run
from tests import factories

KUBECONFIG = yaml.safe_dump(
    {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
)


def test_every_task_has_a_soft_and_a_hard_time_limit():
    from dashboard.celery import app

    app.loader.import_default_modules()
    ours = {
        name: task
        for name, task in app.tasks.items()
        if name.startswith(("workers.", "dashboard."))
    }
    assert {
        "workers.tasks.execute_run",
        "workers.tasks.deliver_notification",
        "workers.tasks.check_schedules",
        "workers.tasks.refresh_readiness",
        "workers.tasks.sweep_cluster",
    } <= set(ours)
    for name, task in ours.items():
        soft = task.soft_time_limit or app.conf.task_soft_time_limit
        hard = task.time_limit or app.conf.task_time_limit
        assert soft and hard and soft < hard, (name, soft, hard)


def test_the_busy_backoff_is_exponential_and_capped():
    from workers.tasks import BUSY_RETRY_MAX_SECONDS, busy_countdown

    waits = [busy_countdown(n) for n in range(10)]
    assert waits[:5] == [5, 10, 20, 40, 80]
    assert max(waits) == BUSY_RETRY_MAX_SECONDS == waits[-1]
    assert busy_countdown(10_000) == BUSY_RETRY_MAX_SECONDS


class Retried(Exception):
    def __init__(self, countdown: float) -> None:
        self.countdown = countdown


@pytest.mark.django_db(transaction=True)
def test_a_run_on_a_busy_cluster_retries_later_each_time_and_is_not_re_dispatched(monkeypatch):
    from datetime import timedelta

    from django.utils.timezone import now

    from workers import runner
    from workers.tasks import dispatch_pending, execute_run

    c = factories.cluster("busy-one", kubeconfig=KUBECONFIG)
    # Requested 20 min ago, first sent 11 min ago: the dispatcher would take it for lost.
    run = Run.objects.create(
        cluster=c,
        plugin=c.plugin,
        proxier="iptables",
        battery="basic",
        created=now() - timedelta(minutes=20),
        dispatched=now() - timedelta(minutes=11),
    )
    monkeypatch.setattr(runner, "execute", lambda *a, **k: runner.BUSY)
    monkeypatch.setattr(execute_run, "retry", lambda countdown: Retried(countdown))
    sent: list[int] = []
    monkeypatch.setattr(
        "dashboard.domain.runs.dispatch", lambda run_id: sent.append(run_id) or True
    )
    countdowns = []
    for retries in range(8):
        execute_run.push_request(retries=retries, id=f"t{retries}", hostname="w")
        try:
            with pytest.raises(Retried) as caught:
                execute_run.run(run.pk)
        finally:
            execute_run.pop_request()
        countdowns.append(caught.value.countdown)
        # Marked in flight: the dispatcher does not send a second copy while it waits.
        dispatch_pending()
    assert countdowns == sorted(countdowns) and countdowns[0] == 5 and countdowns[-1] == 120
    assert sent == []
    # After an hour of waiting it gives up, saying why.
    Run.objects.filter(pk=run.pk).update(created=now() - timedelta(hours=2))
    assert execute_run.run(run.pk) == runner.BUSY
    run.refresh_from_db()
    assert run.state == Run.State.ERROR and "busy" in run.error


@pytest.mark.django_db(transaction=True)
def test_a_run_cut_by_the_soft_time_limit_ends_in_error_and_frees_its_lease(monkeypatch):
    from dashboard.domain.runs import request_run
    from workers import runner
    from workers.lease import Lease

    def too_long(*args, **kwargs):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(runner, "run_battery", too_long)
    c = factories.cluster("slow-one", kubeconfig=KUBECONFIG)
    run = request_run(c, "basic", dispatch_on_commit=False)
    assert runner.execute(run.pk) == runner.DONE
    run.refresh_from_db()
    assert run.state == Run.State.ERROR and "time limit" in run.error
    assert Lease.holder_of(c.pk) is None
