"""Periodic schedules: their django-celery-beat twin, and their health like healthchecks.io.

Every Schedule owns one PeriodicTask (task `workers.tasks.run_schedule`, args `[schedule.id]`,
an IntervalSchedule of `interval_minutes`). It is written on every save of the Schedule (a
post_save receiver, so that the admin and scripts keep it in step too) through the model's
save(), whose signal bumps django-celery-beat's change marker: a running beat with the
DatabaseScheduler picks the change up without a restart.

States (`schedule_state`), counted from the newest *terminal* periodic run's creation time
(the moment beat fired it, so a slow run does not shift the next deadline):

- `paused`: the schedule or its cluster is disabled.
- `new`: no terminal periodic run since the baseline (creation, resume or edit) and the first
  deadline (baseline + interval + grace) has not passed yet.
- `down`: the newest terminal periodic run did not pass (ended `error` or `cancelled`, or
  finished with a test `failed` or `error`, or a basic battery not fully passed), or
  interval + grace passed since it (or since the baseline, when it never ran).
- `late`: the newest run passed, the interval passed since it, the grace has not.
- `up`: the newest run passed, within the interval.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.utils.timezone import now as tz_now
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from dashboard.domain.catalog import Battery, Outcome
from dashboard.domain.heads import TERMINAL
from dashboard.domain.models import AuditEvent, Cluster, Run, Schedule, ScheduleHealth, TestResult

log = logging.getLogger(__name__)

TASK = "workers.tasks.run_schedule"
STATES = ("up", "late", "down", "paused", "new")


class ScheduleError(Exception):
    pass


# --- Keeping beat in step -------------------------------------------------------------------


def task_name(schedule: Schedule) -> str:
    return f"schedule {schedule.pk}: {schedule.battery} battery on {schedule.cluster.name}"


def sync_periodic_task(schedule: Schedule) -> Any:
    """Creates or updates the schedule's PeriodicTask; returns it."""

    interval, _ = IntervalSchedule.objects.get_or_create(
        every=schedule.interval_minutes, period=IntervalSchedule.MINUTES
    )
    task = None
    if schedule.periodic_task_id:
        task = PeriodicTask.objects.filter(pk=schedule.periodic_task_id).first()
    if task is None:
        task = PeriodicTask.objects.filter(name=task_name(schedule)).first() or PeriodicTask(
            name=task_name(schedule)
        )
    task.name = task_name(schedule)
    task.task = TASK
    task.interval = interval
    task.crontab = task.solar = task.clocked = None
    task.args = json.dumps([schedule.pk])
    task.kwargs = "{}"
    task.enabled = schedule.enabled
    task.description = f"Managed by the dashboard's schedule {schedule.pk}; edit it at /schedules/."
    task.save()  # save(), not update(): its signal tells a running beat to reload
    if schedule.periodic_task_id != task.pk:
        # update(), not save(): no second post_save round for the Schedule.
        Schedule.objects.filter(pk=schedule.pk).update(periodic_task=task)
        schedule.periodic_task_id = task.pk
    return task


def delete_periodic_task(schedule: Schedule) -> None:

    if schedule.periodic_task_id:
        # Model delete(), so that beat's change marker moves.
        for task in PeriodicTask.objects.filter(pk=schedule.periodic_task_id):
            task.delete()


def on_schedule_saved(sender: type, instance: Schedule, raw: bool = False, **kwargs: Any) -> None:
    if not raw:
        sync_periodic_task(instance)


def on_schedule_deleted(sender: type, instance: Schedule, **kwargs: Any) -> None:
    delete_periodic_task(instance)


# --- The maintainers' operations ------------------------------------------------------------


def _validate(battery: str, interval_minutes: int, grace_minutes: int) -> None:
    if battery not in Battery.values:
        raise ScheduleError(
            f"unknown battery {battery!r}: expected one of {', '.join(Battery.values)}"
        )
    if not 5 <= interval_minutes <= 31 * 24 * 60:
        raise ScheduleError("the interval must be between 5 minutes and 31 days")
    if not 0 <= grace_minutes <= 7 * 24 * 60:
        raise ScheduleError("the grace period must be between 0 minutes and 7 days")


def _rebase(schedule: Schedule, when: datetime | None = None) -> None:
    """Staleness starts over from now (a new, resumed or re-timed schedule gets a fresh chance)."""
    when = when or tz_now()
    ScheduleHealth.objects.update_or_create(schedule=schedule, defaults={"baseline": when})


@transaction.atomic
def create_schedule(
    cluster: Cluster,
    *,
    battery: str,
    interval_minutes: int,
    grace_minutes: int,
    user: Any = None,
    enabled: bool = True,
) -> Schedule:
    _validate(battery, interval_minutes, grace_minutes)
    schedule = Schedule.objects.create(
        cluster=cluster,
        battery=battery,
        interval_minutes=interval_minutes,
        grace_minutes=grace_minutes,
        enabled=enabled,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    ScheduleHealth.objects.create(
        schedule=schedule, state="new" if enabled else "paused", baseline=schedule.created
    )
    AuditEvent.record(
        user or "system",
        "schedule.create",
        schedule,
        schedule=schedule.pk,
        cluster=cluster.name,
        battery=battery,
        interval_minutes=interval_minutes,
        grace_minutes=grace_minutes,
    )
    return schedule


@transaction.atomic
def update_schedule(
    schedule: Schedule, *, battery: str, interval_minutes: int, grace_minutes: int, user: Any = None
) -> Schedule:
    _validate(battery, interval_minutes, grace_minutes)
    before = {
        "battery": schedule.battery,
        "interval_minutes": schedule.interval_minutes,
        "grace_minutes": schedule.grace_minutes,
    }
    schedule.battery, schedule.interval_minutes, schedule.grace_minutes = (
        battery,
        interval_minutes,
        grace_minutes,
    )
    schedule.save()
    after = {
        "battery": battery,
        "interval_minutes": interval_minutes,
        "grace_minutes": grace_minutes,
    }
    if before["battery"] != battery or before["interval_minutes"] != interval_minutes:
        _rebase(schedule)  # a different job: judge it by its own runs from now on
    AuditEvent.record(
        user or "system",
        "schedule.update",
        schedule,
        schedule=schedule.pk,
        before=before,
        after=after,
    )
    return schedule


@transaction.atomic
def set_enabled(schedule: Schedule, enabled: bool, *, user: Any = None) -> Schedule:
    if schedule.enabled == enabled:
        return schedule
    schedule.enabled = enabled
    schedule.save()
    if enabled:
        _rebase(schedule)
    AuditEvent.record(
        user or "system",
        "schedule.resume" if enabled else "schedule.pause",
        schedule,
        schedule=schedule.pk,
    )
    return schedule


def pause_schedule(schedule: Schedule, *, user: Any = None) -> Schedule:
    return set_enabled(schedule, False, user=user)


def resume_schedule(schedule: Schedule, *, user: Any = None) -> Schedule:
    return set_enabled(schedule, True, user=user)


@transaction.atomic
def delete_schedule(schedule: Schedule, *, user: Any = None) -> None:
    label, pk = str(schedule), schedule.pk
    schedule.delete()  # its PeriodicTask goes with it (post_delete receiver)
    AuditEvent.record(user or "system", "schedule.delete", label, schedule=pk)


# --- Health ---------------------------------------------------------------------------------


def run_passed(run: Run, has_bad_result: bool) -> bool:
    """A periodic run counts as passing: finished, no test failed or errored, basic tests all passed."""
    if run.state != Run.State.FINISHED or has_bad_result:
        return False
    if run.battery in (Battery.BASIC, Battery.ALL):
        return run.basic_ok
    return True


def schedule_state(
    schedule: Schedule,
    last_run: Run | None,
    *,
    now: datetime | None = None,
    baseline: datetime | None = None,
    last_run_bad: bool | None = None,
) -> str:
    """The state of one schedule given its newest terminal periodic run (see the module's rules).

    `last_run_bad` says whether a test of that run failed or errored; when None it is read
    from the run's `has_bad_result` annotation, or queried.
    """
    return explain(schedule, last_run, now=now, baseline=baseline, last_run_bad=last_run_bad)[0]


def explain(
    schedule: Schedule,
    last_run: Run | None,
    *,
    now: datetime | None = None,
    baseline: datetime | None = None,
    last_run_bad: bool | None = None,
) -> tuple[str, str]:
    """(state, one line saying why)."""
    now = now or tz_now()
    if not schedule.enabled:
        return "paused", "paused by a maintainer"
    if not schedule.cluster.enabled:
        return "paused", f"cluster {schedule.cluster.name} is disabled"
    interval, grace = schedule.interval, timedelta(minutes=schedule.grace_minutes)
    if baseline is not None and last_run is not None and last_run.created < baseline:
        last_run = None  # from before a resume or an edit: not this job's verdict
    baseline = baseline or schedule.created
    if last_run is None:
        if now <= baseline + interval + grace:
            return "new", "waiting for the first periodic run"
        return "down", f"no periodic run finished since {baseline:%Y-%m-%d %H:%M} UTC"
    if last_run_bad is None:
        last_run_bad = getattr(last_run, "has_bad_result", None)
    if last_run_bad is None:
        last_run_bad = _bad_results(last_run).exists()
    if not run_passed(last_run, last_run_bad):
        what = (
            "did not pass its tests"
            if last_run.state == Run.State.FINISHED
            else f"ended {last_run.state}"
        )
        return "down", f"periodic run {last_run.pk} {what}"
    age = now - last_run.created
    if age <= interval:
        return "up", f"periodic run {last_run.pk} passed"
    if age <= interval + grace:
        return "late", f"periodic run {last_run.pk} passed, but the next one is overdue"
    return (
        "down",
        f"no periodic run since run {last_run.pk} on {last_run.created:%Y-%m-%d %H:%M} UTC",
    )


def _bad_results(run: Run | Any) -> QuerySet[TestResult]:
    return TestResult.objects.filter(run=run, outcome__in=[Outcome.FAILED, Outcome.ERROR])


@dataclass
class Status:
    schedule: Schedule
    state: str
    why: str
    last_run: Run | None
    health: ScheduleHealth | None

    @property
    def previous(self) -> str | None:
        return self.health.state if self.health else None


def statuses(
    schedules: QuerySet[Schedule] | None = None, *, now: datetime | None = None
) -> list[Status]:
    """The state of many schedules in two queries, whatever their number and history."""
    now = now or tz_now()
    newest = (
        Run.objects.filter(
            schedule=OuterRef("pk"), trigger=Run.Trigger.PERIODIC, state__in=TERMINAL
        )
        .order_by("-created")
        .values("id")[:1]
    )
    rows = list(
        (schedules if schedules is not None else Schedule.objects.all())
        .select_related("cluster", "cluster__plugin", "health")
        .annotate(last_run_id=Subquery(newest))
        .order_by("cluster__name", "battery", "pk")
    )
    runs = {
        r.pk: r
        for r in Run.objects.filter(pk__in=[s.last_run_id for s in rows if s.last_run_id])
        .annotate(has_bad_result=Exists(_bad_results(OuterRef("pk"))))
        .only("id", "state", "battery", "basic_ok", "created", "finished", "error")
    }
    out = []
    for s in rows:
        health = getattr(s, "health", None) if _has_health(s) else None
        last = runs.get(s.last_run_id)
        state, why = explain(s, last, now=now, baseline=health.baseline if health else None)
        out.append(Status(s, state, why, last, health))
    return out


def _has_health(schedule: Schedule) -> bool:
    try:
        schedule.health  # noqa: B018 (select_related filled it, or raises)
    except ScheduleHealth.DoesNotExist:
        return False
    return True


# Which changes are announced: a schedule that stops being healthy, and one that recovers.
ANNOUNCED = {
    ("up", "late"),
    ("up", "down"),
    ("late", "down"),
    ("new", "down"),
    (None, "down"),
    ("down", "up"),
}


@dataclass
class Change:
    schedule: Schedule
    previous: str | None
    state: str
    why: str
    version: int


def record_states(items: Iterable[Status], *, now: datetime | None = None) -> list[Change]:
    """Stores each schedule's state; returns the announced changes, each claimed exactly once.

    The claim is a conditional update on (schedule, previous state, version): when two checkers
    race, one update touches the row and the other touches nothing and announces nothing.
    """
    now = now or tz_now()
    changes = []
    for st in items:
        if st.health is None:
            health, created = ScheduleHealth.objects.get_or_create(
                schedule=st.schedule,
                # a schedule made elsewhere (admin, scripts): its existing runs keep counting
                defaults={
                    "state": st.state,
                    "changed": now,
                    "baseline": min(
                        st.schedule.created, st.last_run.created if st.last_run else now
                    ),
                },
            )
            if created:
                if (None, st.state) in ANNOUNCED:
                    changes.append(Change(st.schedule, None, st.state, st.why, health.version))
                continue
            st.health = health
        health = st.health
        if health.state == st.state:
            continue
        version = health.version + (1 if (health.state, st.state) in ANNOUNCED else 0)
        claimed = ScheduleHealth.objects.filter(
            pk=health.pk, state=health.state, version=health.version
        ).update(state=st.state, changed=now, version=version)
        if claimed and (health.state, st.state) in ANNOUNCED:
            changes.append(Change(st.schedule, health.state, st.state, st.why, version))
    return changes
