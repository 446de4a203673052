"""Schedules and their beat twin; the up / late / down / paused / new rules; the state check."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.timezone import now
from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks

from dashboard.domain import schedules as ops
from dashboard.domain.catalog import Outcome
from dashboard.domain.models import AuditEvent, Run, Schedule, ScheduleHealth
from tests import factories

pytestmark = pytest.mark.django_db


def periodic(
    schedule: Schedule,
    *,
    minutes_ago: float,
    outcomes: dict[str, str] | None = None,
    state: str = Run.State.FINISHED,
) -> Run:
    run = factories.run(
        schedule.cluster,
        outcomes,
        battery=schedule.battery,
        trigger=Run.Trigger.PERIODIC,
        schedule=schedule,
        state=state,
        finished=now() - timedelta(minutes=minutes_ago) + timedelta(minutes=5),
    )
    return run  # factories.run creates it 5 minutes before it finished: created = minutes_ago


def new_schedule(interval: int = 60, grace: int = 10, **kw):
    cluster = factories.cluster()
    s = ops.create_schedule(
        cluster, battery="basic", interval_minutes=interval, grace_minutes=grace, **kw
    )
    # As if created a day ago, so that back-dated runs count.
    Schedule.objects.filter(pk=s.pk).update(created=now() - timedelta(days=1))
    ScheduleHealth.objects.filter(pk=s.pk).update(baseline=now() - timedelta(days=1))
    s.refresh_from_db()
    return s


def test_creating_a_schedule_creates_its_beat_task(maintainer) -> None:
    cluster = factories.cluster("calico-a")
    before = PeriodicTasks.last_change()
    s = ops.create_schedule(
        cluster, battery="basic", interval_minutes=30, grace_minutes=5, user=maintainer
    )
    task = PeriodicTask.objects.get(pk=Schedule.objects.get(pk=s.pk).periodic_task_id)
    assert task.task == "workers.tasks.run_schedule"
    assert json.loads(task.args) == [s.pk]
    assert (task.interval.every, task.interval.period) == (30, IntervalSchedule.MINUTES)
    assert task.enabled
    # beat's DatabaseScheduler reloads when this marker moves
    assert PeriodicTasks.last_change() is not None and PeriodicTasks.last_change() != before
    assert AuditEvent.objects.filter(action="schedule.create", actor="maria").exists()


def test_editing_pausing_resuming_and_deleting_keep_the_beat_task_in_step(maintainer) -> None:
    s = new_schedule()
    ops.update_schedule(s, battery="all", interval_minutes=120, grace_minutes=15, user=maintainer)
    task = PeriodicTask.objects.get(pk=s.periodic_task_id)
    assert task.interval.every == 120 and task.enabled
    ops.pause_schedule(s, user=maintainer)
    task.refresh_from_db()
    assert not task.enabled
    ops.resume_schedule(s, user=maintainer)
    task.refresh_from_db()
    assert task.enabled
    assert PeriodicTask.objects.filter(task="workers.tasks.run_schedule").count() == 1
    ops.delete_schedule(s, user=maintainer)
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    actions = list(
        AuditEvent.objects.filter(action__startswith="schedule.").values_list("action", flat=True)
    )
    assert {"schedule.update", "schedule.pause", "schedule.resume", "schedule.delete"} <= set(
        actions
    )


def test_a_schedule_saved_elsewhere_gets_its_beat_task_too() -> None:
    s = factories.schedule(factories.cluster(), interval_minutes=15)
    s.refresh_from_db()
    assert PeriodicTask.objects.get(pk=s.periodic_task_id).interval.every == 15


def test_bad_values_are_refused() -> None:
    cluster = factories.cluster()
    with pytest.raises(ops.ScheduleError):
        ops.create_schedule(cluster, battery="everything", interval_minutes=60, grace_minutes=5)
    with pytest.raises(ops.ScheduleError):
        ops.create_schedule(cluster, battery="basic", interval_minutes=1, grace_minutes=5)
    assert not Schedule.objects.exists()


def test_a_schedule_whose_newest_run_passed_within_the_interval_is_up() -> None:
    s = new_schedule(interval=60, grace=10)
    assert ops.schedule_state(s, periodic(s, minutes_ago=30)) == "up"


def test_it_is_late_after_the_interval_and_down_after_the_grace_too() -> None:
    s = new_schedule(interval=60, grace=10)
    run = periodic(s, minutes_ago=5)
    t0 = run.created
    assert ops.schedule_state(s, run, now=t0 + timedelta(minutes=59)) == "up"
    assert ops.schedule_state(s, run, now=t0 + timedelta(minutes=65)) == "late"
    assert ops.schedule_state(s, run, now=t0 + timedelta(minutes=71)) == "down"


def test_a_newest_run_that_failed_a_basic_test_or_errored_makes_it_down() -> None:
    s = new_schedule()
    failed = periodic(
        s, minutes_ago=3, outcomes=factories.with_outcome("declare-sctp-ports", Outcome.FAILED)
    )
    assert ops.explain(s, failed) == ("down", f"periodic run {failed.pk} did not pass its tests")
    errored = periodic(s, minutes_ago=2, state=Run.State.ERROR)
    assert ops.explain(s, errored)[0] == "down"
    assert "ended error" in ops.explain(s, errored)[1]


def test_paused_and_new_schedules() -> None:
    s = new_schedule()
    ops.pause_schedule(s)
    assert ops.schedule_state(s, None) == "paused"
    fresh = ops.create_schedule(
        factories.cluster(), battery="basic", interval_minutes=60, grace_minutes=10
    )
    assert ops.schedule_state(fresh, None) == "new"
    assert ops.schedule_state(fresh, None, now=now() + timedelta(minutes=71)) == "down"


def test_a_resumed_schedule_is_judged_by_its_runs_since_the_resume() -> None:
    s = new_schedule(interval=60, grace=10)
    periodic(
        s, minutes_ago=600, outcomes=factories.with_outcome("declare-sctp-ports", Outcome.FAILED)
    )
    ops.pause_schedule(s)
    ops.resume_schedule(s)
    [status] = ops.statuses(Schedule.objects.filter(pk=s.pk))
    assert status.state == "new"


def test_states_of_many_schedules_take_two_queries_whatever_their_number() -> None:
    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            ops.statuses()
        return len(ctx.captured_queries)

    s = new_schedule()
    periodic(s, minutes_ago=10)
    one = count()
    for _ in range(8):
        t = new_schedule()
        periodic(t, minutes_ago=10)
        periodic(t, minutes_ago=100, state=Run.State.ERROR)
    assert count() == one == 2


def test_the_check_stores_states_and_announces_each_change_once() -> None:
    s = new_schedule(interval=60, grace=10)
    periodic(s, minutes_ago=30)
    assert ops.record_states(ops.statuses()) == []  # first sight of an up schedule: nothing to say
    assert ScheduleHealth.objects.get(pk=s.pk).state == "up"

    later = now() + timedelta(minutes=35)
    [change] = ops.record_states(ops.statuses(now=later), now=later)
    assert (change.previous, change.state) == ("up", "late")
    assert ops.record_states(ops.statuses(now=later), now=later) == []  # no change, nothing again

    much_later = now() + timedelta(minutes=45)
    [change] = ops.record_states(ops.statuses(now=much_later), now=much_later)
    assert (change.previous, change.state) == ("late", "down")
    periodic(s, minutes_ago=0)
    [change] = ops.record_states(ops.statuses())
    assert (change.previous, change.state) == ("down", "up")
    assert ScheduleHealth.objects.get(pk=s.pk).version == 3


def test_two_checkers_seeing_the_same_change_announce_it_once() -> None:
    s = new_schedule(interval=60, grace=10)
    periodic(s, minutes_ago=30)
    ops.record_states(ops.statuses())
    later = now() + timedelta(minutes=50)
    first, second = (
        ops.statuses(now=later),
        ops.statuses(now=later),
    )  # both read before either writes
    assert len(ops.record_states(first, now=later)) == 1
    assert ops.record_states(second, now=later) == []
