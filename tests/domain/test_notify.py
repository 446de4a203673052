"""Notifications: a real webhook receiver, e-mail, retries with backoff, never twice."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
from datetime import timedelta

import pytest
from django.core import mail
from django.utils.timezone import now

from dashboard.domain import notify
from dashboard.domain import schedules as ops
from dashboard.domain.history import LISTENERS
from dashboard.domain.models import (
    NotificationChannel,
    NotificationLog,
    Run,
    Schedule,
    ScheduleHealth,
)
from tests import factories
from tests.webhook_server import WebhookServer
from workers.tasks import deliver_notification

pytestmark = pytest.mark.django_db


def deliver_all(ids: list[int]) -> None:
    for pk in ids:
        deliver_notification.apply(args=[pk])  # eager: retries run at once, their countdown skipped


def test_a_failing_then_answering_webhook_gets_the_event_once_after_retries() -> None:
    with WebhookServer([500, 503]) as hook:
        NotificationChannel.objects.create(kind="webhook", target=hook.url, secret="s3cret")
        ids = notify.emit("test:1", "schedule.down", {"cluster": "calico-a", "state": "down"})
        deliver_all(ids)
        assert len(hook.received) == 3
        assert (
            hook.received[-1]["event"] == "schedule.down" and hook.received[-1]["key"] == "test:1"
        )
        body = json.dumps(hook.received[-1], sort_keys=True).encode()
        assert (
            hook.headers[-1]["X-Signature"]
            == "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
        )
    entry = NotificationLog.objects.get(pk=ids[0])
    assert (entry.status, entry.attempts, entry.last_error) == ("sent", 3, "")


def test_the_same_event_emitted_twice_is_sent_once() -> None:
    with WebhookServer() as hook:
        NotificationChannel.objects.create(kind="webhook", target=hook.url)
        first = notify.emit("test:dup", "schedule.down", {"cluster": "c"})
        second = notify.emit("test:dup", "schedule.down", {"cluster": "c"})
        assert len(first) == 1 and second == []
        deliver_all(first + first)  # the task delivered twice (a redelivery) sends once
        assert len(hook.received) == 1
    assert NotificationLog.objects.count() == 1


def test_a_webhook_that_never_answers_ends_failed_after_the_bounded_attempts(settings) -> None:
    settings.NOTIFY_MAX_ATTEMPTS = 3
    with WebhookServer([500] * 10) as hook:
        NotificationChannel.objects.create(kind="webhook", target=hook.url)
        deliver_all(notify.emit("test:fail", "schedule.down", {}))
        assert len(hook.received) == 3
    entry = NotificationLog.objects.get()
    assert (entry.status, entry.attempts) == ("failed", 3)
    assert "500" in entry.last_error


def test_an_unreachable_webhook_is_an_error_worth_retrying() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once closed
    channel = NotificationChannel.objects.create(kind="webhook", target=f"http://127.0.0.1:{port}/")
    [pk] = notify.emit("test:unreachable", "schedule.down", {})
    assert notify.attempt(pk) == "retry"
    entry = NotificationLog.objects.get(pk=pk)
    assert entry.status == "retrying" and "could not be reached" in entry.last_error
    assert channel.log.count() == 1


def test_backoff_doubles_and_is_capped(settings) -> None:
    settings.NOTIFY_BACKOFF_SECONDS, settings.NOTIFY_BACKOFF_MAX_SECONDS = 30, 200
    assert [notify.backoff(n) for n in (1, 2, 3, 4, 5)] == [30, 60, 120, 200, 200]


def test_e_mail_channels_get_a_readable_message() -> None:
    NotificationChannel.objects.create(kind="email", target="oncall@example.org")
    NotificationChannel.objects.create(kind="email", target="off@example.org", enabled=False)
    deliver_all(
        notify.emit(
            "test:mail",
            "criterion.regressed",
            {
                "criterion": "periodic-basic-passing",
                "status": "stale",
                "previous": "met",
                "detail": "the newest run is too old",
            },
        )
    )
    [message] = mail.outbox
    assert message.to == ["oncall@example.org"]
    assert message.subject == "[SCTP dashboard] criterion periodic-basic-passing is now stale"
    assert "the newest run is too old" in message.body


def test_a_criterion_that_stops_being_met_is_announced_and_one_that_improves_is_not() -> None:
    assert notify.on_readiness_change in LISTENERS  # registered by the app's ready()
    NotificationChannel.objects.create(kind="email", target="oncall@example.org")
    evaluation = {
        "evaluated_at": "2026-11-29T10:00:00+00:00",
        "transitions": [
            {
                "criteria": [
                    {
                        "key": "periodic-basic-passing",
                        "title": "A periodic job",
                        "status": "unmet",
                        "detail": "run 7 failed",
                        "evidence": [],
                    },
                    {
                        "key": "tests-written",
                        "title": "Tests written",
                        "status": "met",
                        "detail": "",
                        "evidence": [],
                    },
                ]
            }
        ],
    }
    notify.on_readiness_change(
        {"periodic-basic-passing": "met", "tests-written": "unmet"},
        {"periodic-basic-passing": "unmet", "tests-written": "met"},
        evaluation,
    )
    [entry] = NotificationLog.objects.all()
    assert entry.event == "criterion.regressed"
    assert (
        entry.payload["criterion"] == "periodic-basic-passing"
        and entry.payload["detail"] == "run 7 failed"
    )


def test_the_beat_check_announces_a_schedule_going_down_once(
    django_capture_on_commit_callbacks, settings
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    from dashboard.celery import app

    app.conf.task_always_eager = True
    try:
        with WebhookServer() as hook:
            NotificationChannel.objects.create(kind="webhook", target=hook.url)
            cluster = factories.cluster("calico-down")
            s = ops.create_schedule(cluster, battery="basic", interval_minutes=60, grace_minutes=10)
            Schedule.objects.filter(pk=s.pk).update(created=now() - timedelta(days=1))
            ScheduleHealth.objects.filter(pk=s.pk).update(
                baseline=now() - timedelta(days=1), state="up"
            )
            factories.run(
                cluster,
                battery="basic",
                trigger=Run.Trigger.PERIODIC,
                schedule=s,
                finished=now() - timedelta(hours=2),
            )
            with django_capture_on_commit_callbacks(execute=True):
                assert notify.check_schedules() == 1
            with django_capture_on_commit_callbacks(execute=True):
                assert notify.check_schedules() == 0
            assert len(hook.received) == 1
            event = hook.received[0]
            assert (event["event"], event["cluster"], event["previous"], event["state"]) == (
                "schedule.down",
                "calico-down",
                "up",
                "down",
            )
    finally:
        app.conf.task_always_eager = False


def test_deliveries_the_broker_never_got_are_sent_by_the_check_and_a_lost_send_is_not_repeated() -> (
    None
):
    channel = NotificationChannel.objects.create(kind="email", target="oncall@example.org")
    pending = NotificationLog.objects.create(
        channel=channel,
        event_key="k1",
        event="schedule.down",
        payload={"event": "schedule.down", "cluster": "c", "battery": "basic", "state": "down"},
        created=now() - timedelta(minutes=5),
    )
    stuck = NotificationLog.objects.create(
        channel=channel,
        event_key="k2",
        event="schedule.down",
        status="sending",
        attempts=1,
        queued=now() - timedelta(hours=1),
    )
    from dashboard.celery import app

    app.conf.task_always_eager = True
    try:
        assert notify.redispatch() == 1
    finally:
        app.conf.task_always_eager = False
    pending.refresh_from_db()
    stuck.refresh_from_db()
    assert pending.status == "sent" and len(mail.outbox) == 1
    assert stuck.status == "failed" and "may have been delivered" in stuck.last_error
