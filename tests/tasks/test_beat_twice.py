"""Drill: two beats (started twice by mistake) fire one schedule at the same moment."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from dashboard.domain.models import Run
from dashboard.domain.schedules import create_schedule
from tests.e2e import wait_for
from tests.labtools import lab_clusters, profile
from tests.worker import celery_worker

pytestmark = [
    pytest.mark.drills,
    pytest.mark.e2e,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]

BEATS = 6


def fire_at_once(schedule_id: int, beats: int = BEATS) -> list[int | None]:
    """`beats` threads, each with its own database connection, call run_schedule together."""
    from workers.tasks import run_schedule

    barrier = threading.Barrier(beats)
    answers: list[int | None] = []
    errors: list[BaseException] = []

    def beat() -> None:
        try:
            barrier.wait(timeout=10)
            answers.append(run_schedule(schedule_id))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=beat) for _ in range(beats)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    return answers


def test_a_schedule_fired_by_several_beats_at_once_starts_one_run_and_runs_never_overlap():
    with lab_clusters(profile(name="drill-beat", faults={"pod_start_delay_s": 0.2})) as (
        _,
        clusters,
    ):
        schedule = create_schedule(
            clusters["drill-beat"], battery="basic", interval_minutes=60, grace_minutes=10
        )
        with celery_worker(concurrency=2) as worker:
            answers = fire_at_once(schedule.pk)
            started = [a for a in answers if a is not None]
            assert len(started) == 1, answers
            runs = Run.objects.filter(schedule=schedule)
            assert runs.count() == 1 and runs.get().trigger == "periodic"

            # While it runs, and again after it ended (within half the interval), beats start nothing.
            assert [a for a in fire_at_once(schedule.pk) if a is not None] == []
            wait_for(
                lambda: Run.objects.get(pk=started[0]).state == "finished",
                60,
                "the periodic run",
                worker["log"],
            )
            assert [a for a in fire_at_once(schedule.pk) if a is not None] == []
    assert Run.objects.filter(schedule=schedule).count() == 1
