"""A task round trip through a real Celery worker process on the real Redis."""

from __future__ import annotations

import time

import pytest

from dashboard.domain.models import AuditEvent
from tests.worker import celery_worker

pytestmark = [pytest.mark.e2e, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def test_a_task_runs_in_a_real_worker_and_a_health_ping_writes_no_audit_entry():
    from workers.tasks import ping

    with celery_worker() as worker:
        ping.delay("hello-from-the-test")
        deadline = time.monotonic() + 20
        while "ping hello-from-the-test" not in worker["log"].read_text():
            assert time.monotonic() < deadline, worker["log"].read_text()[-2000:]
            time.sleep(0.2)
        assert "workers.tasks.ping" in worker["log"].read_text()
    assert not AuditEvent.objects.filter(action="ping").exists()


def test_the_celery_app_is_configured_for_late_acks_and_no_result_backend():
    from dashboard.celery import app

    assert app.conf.task_acks_late is True
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.task_ignore_result is True
    assert app.conf.beat_scheduler == "django_celery_beat.schedulers:DatabaseScheduler"
