"""The run lifecycle's task bodies, in this process, with the clock under time-machine.

The reaper, the dispatcher, the busy retry and the duplicate beat are plain functions in
workers/tasks.py; here they run against the test database, the database lease and the
embedded broker (kombu's filesystem transport, a real broker that needs no server), so what
they publish is read back from the broker's folder.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.utils.timezone import now

from dashboard.domain import heads
from dashboard.domain.catalog import BASIC_KEYS, Outcome
from dashboard.domain.models import AuditEvent, Run, Schedule, TestResult
from dashboard.domain.runs import request_run
from tests import factories as f
from tests.worker import use_broker
from workers import runner, tasks
from workers.lease import Lease

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def broker(settings, tmp_path: Path):
    """Database leases and an embedded broker in tmp_path; yields a reader of what was sent."""
    settings.EMBEDDED_BROKER = True
    folders = {name: tmp_path / name for name in ("out", "processed", "control")}
    for folder in folders.values():
        folder.mkdir()
    use_broker(
        "filesystem://",
        {
            "data_folder_in": str(folders["out"]),
            "data_folder_out": str(folders["out"]),
            "processed_folder": str(folders["processed"]),
            "control_folder": str(folders["control"]),
            "store_processed": False,
        },
    )

    def sent() -> list[tuple[str, list]]:
        messages = [json.loads(p.read_text()) for p in sorted(folders["out"].iterdir())]
        return sorted(
            (
                m["headers"]["task"],
                json.loads(
                    m["headers"]["argsrepr"].replace("(", "[").replace(",)", "]").replace(")", "]")
                ),
            )
            for m in messages
        )

    yield sent
    use_broker(django_settings.CELERY_BROKER_URL, django_settings.CELERY_BROKER_TRANSPORT_OPTIONS)


@pytest.fixture
def clock(time_machine):
    time_machine.move_to(T0, tick=False)
    return time_machine


def running_run(cluster, battery: str = "basic") -> Run:
    return Run.objects.create(
        cluster=cluster,
        plugin=cluster.plugin,
        proxier=cluster.proxier,
        battery=battery,
        state=Run.State.RUNNING,
        created=now(),
        started=now(),
        heartbeat=now(),
    )


# --- the reaper -----------------------------------------------------------------------------------


def test_the_reaper_ends_a_run_only_once_its_heartbeat_is_older_than_the_timeout(
    broker, clock, settings, django_capture_on_commit_callbacks
) -> None:
    settings.RUN_HEARTBEAT_TIMEOUT = 60
    cluster = f.cluster()
    run = running_run(cluster)
    TestResult.objects.create(run=run, test_key="declare-sctp-ports", outcome=Outcome.PASSED)
    lease = Lease(cluster.id, ttl=600, holder=runner.lease_holder(run.id))  # outlives the worker
    assert lease.acquire()
    clock.shift(59)
    assert tasks.reap_stale() == []
    clock.shift(2)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.reap_stale() == [run.id]
    run.refresh_from_db()
    assert run.state == Run.State.ERROR and run.finished == T0 + timedelta(seconds=61)
    assert run.error == "worker lost: no heartbeat since 2026-11-02 09:00:00 UTC"
    outcomes = dict(run.results.values_list("test_key", "outcome"))
    assert outcomes == {
        k: (Outcome.PASSED if k == "declare-sctp-ports" else Outcome.NOT_RUN) for k in BASIC_KEYS
    }
    assert set(run.results.filter(outcome=Outcome.NOT_RUN).values_list("reason", flat=True)) == {
        run.error
    }
    assert Lease.holder_of(cluster.id) is None  # the dead run's lease is free for the next run
    assert broker() == [("workers.tasks.sweep_cluster", [cluster.id])]  # its namespaces get swept
    assert tasks.reap_stale() == []  # once


def test_the_reaper_leaves_a_lease_that_another_run_holds_and_runs_that_beat(
    broker, clock, settings
) -> None:
    settings.RUN_HEARTBEAT_TIMEOUT = 60
    cluster, other = f.cluster(), f.cluster()
    dead, alive = running_run(cluster), running_run(other)
    successor = Lease(cluster.id, ttl=600, holder="run-successor")
    assert successor.acquire()
    clock.shift(61)
    Run.objects.filter(pk=alive.pk).update(heartbeat=now())  # its heartbeat thread is alive
    assert tasks.reap_stale_runs() == [dead.id]  # the task, called in-process
    assert Lease.holder_of(cluster.id) == "run-successor"
    alive.refresh_from_db()
    assert alive.state == Run.State.RUNNING


# --- the dispatcher ---------------------------------------------------------------------------------


def test_the_dispatcher_sends_queued_runs_the_broker_never_got_and_those_it_lost(
    broker, clock
) -> None:
    cluster = f.cluster()
    run = request_run(cluster, "basic", dispatch_on_commit=False)  # as if the broker had been down
    clock.shift(4)
    assert tasks.dispatch_lost() == 0  # younger than 5 s: the request's own dispatch may still come
    clock.shift(2)
    assert tasks.dispatch_pending() == 1
    run.refresh_from_db()
    assert run.dispatched == now() and run.task_id and run.state == Run.State.QUEUED
    assert broker() == [("workers.tasks.execute_run", [run.id])]
    clock.shift(60)
    assert tasks.dispatch_lost() == 0  # sent a minute ago: not lost yet
    clock.shift(timedelta(minutes=10))
    assert tasks.dispatch_lost() == 1  # ten minutes and still queued: the broker lost it
    assert broker() == [("workers.tasks.execute_run", [run.id])] * 2
    Run.objects.filter(pk=run.pk).update(state=Run.State.FINISHED)
    clock.shift(timedelta(minutes=11))
    assert tasks.dispatch_lost() == 0


def test_a_dispatch_while_the_broker_is_down_leaves_the_run_queued_for_the_next_beat(
    broker,
) -> None:
    # the real clock: kombu's connection timeout must elapse (a frozen one never would)
    from dashboard.celery import app

    run = request_run(f.cluster(), "basic", dispatch_on_commit=False)
    Run.objects.filter(pk=run.pk).update(created=now() - timedelta(seconds=6))
    use_broker("redis://127.0.0.1:1/0", {"socket_connect_timeout": 0.2})  # nothing listens there
    timeout, app.conf.broker_connection_timeout = app.conf.broker_connection_timeout, 0.3
    try:
        assert tasks.dispatch_lost() == 0
    finally:
        app.conf.broker_connection_timeout = timeout
    run.refresh_from_db()
    assert run.dispatched is None and run.state == Run.State.QUEUED


# --- the busy retry -----------------------------------------------------------------------------------


# runner.execute starts with close_old_connections(), as a worker must: these tests commit
@pytest.mark.django_db(transaction=True)
def test_a_run_whose_cluster_is_busy_waits_and_gives_up_after_an_hour(broker, clock) -> None:
    cluster = f.cluster()
    run = request_run(cluster, "basic", dispatch_on_commit=False)
    holder = Lease(cluster.id, ttl=7200, holder="run-elsewhere")
    assert holder.acquire()
    clock.shift(timedelta(minutes=59))
    assert tasks.execute_or_wait(run.id) == runner.BUSY
    run.refresh_from_db()
    assert run.state == Run.State.QUEUED and run.started is None
    assert run.dispatched == now()  # in flight: the dispatcher must not send it a second time
    clock.shift(timedelta(minutes=5))
    assert tasks.dispatch_lost() == 0
    clock.shift(timedelta(minutes=2))  # an hour and a minute after it was requested
    assert tasks.execute_or_wait(run.id) == tasks.GAVE_UP
    run.refresh_from_db()
    assert run.state == Run.State.ERROR and run.finished == now()
    assert run.error == "the cluster stayed busy with another run for an hour"
    assert Lease.holder_of(cluster.id) == "run-elsewhere"


def test_busy_retries_back_off_exponentially_to_two_minutes() -> None:
    assert [tasks.busy_countdown(n) for n in range(7)] == [5, 10, 20, 40, 80, 120, 120]
    assert tasks.busy_countdown(10_000) == 120


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_cluster_cannot_be_reached_ends_in_error_says_why_and_frees_the_lease(
    broker,
) -> None:
    cluster = f.cluster(kubeconfig="apiVersion: v1\nkind: Config\nclusters: []\n")
    run = request_run(cluster, "basic", dispatch_on_commit=False)
    result = tasks.execute_run.apply(args=[run.id])  # the task, eagerly in this process
    assert result.get() == runner.DONE
    run.refresh_from_db()
    assert run.state == Run.State.ERROR and run.error and run.finished and run.started
    assert set(run.results.values_list("outcome", flat=True)) == {Outcome.NOT_RUN}
    assert Lease.holder_of(cluster.id) is None
    assert tasks.execute_or_wait(run.id) == runner.GONE  # a redelivery runs nothing twice


@pytest.mark.django_db(transaction=True)
def test_a_run_that_ends_sends_the_next_run_waiting_for_its_cluster_at_once(broker) -> None:
    cluster = f.cluster(kubeconfig="apiVersion: v1\nkind: Config\nclusters: []\n")
    other = f.cluster(kubeconfig="apiVersion: v1\nkind: Config\nclusters: []\n")
    first = request_run(cluster, "basic", dispatch_on_commit=False)
    waiting = request_run(cluster, "all", dispatch_on_commit=False)
    request_run(other, "basic", dispatch_on_commit=False)  # another cluster's run waits its turn
    assert broker() == []
    assert tasks.execute_run.apply(args=[first.id]).get() == runner.DONE
    # Not after the waiting run's backoff (up to two minutes): the freed cluster takes it now.
    assert broker() == [("workers.tasks.execute_run", [waiting.id])]
    waiting.refresh_from_db()
    assert waiting.state == Run.State.QUEUED and waiting.dispatched is not None
    assert tasks.execute_run.apply(args=[waiting.id]).get() == runner.DONE
    assert len(broker()) == 1  # nothing left waiting on this cluster: nothing more is sent


@pytest.mark.django_db(transaction=True)
def test_a_run_that_is_gone_or_taken_is_not_executed_twice(broker, clock) -> None:
    run = running_run(f.cluster())
    assert tasks.execute_or_wait(run.id) == runner.GONE
    assert tasks.execute_or_wait(999_999) == runner.GONE


@pytest.mark.django_db(transaction=True)
def test_a_lost_lease_store_forgets_the_dispatch_so_the_dispatcher_sends_it_again(
    broker, clock, settings
) -> None:
    settings.EMBEDDED_BROKER = False  # Redis leases, and no Redis answers
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    from workers.lease import _redis

    _redis.cache_clear()
    try:
        run = request_run(f.cluster(), "basic", dispatch_on_commit=False)
        Run.objects.filter(pk=run.pk).update(dispatched=now())
        assert tasks.execute_or_wait(run.id) == "lease-unavailable"
        run.refresh_from_db()
        assert run.state == Run.State.QUEUED and run.dispatched is None
    finally:
        _redis.cache_clear()


# --- the duplicate beat -------------------------------------------------------------------------------


def test_a_schedule_starts_one_run_per_interval_whatever_beat_fires_twice(broker, clock) -> None:
    cluster = f.cluster()
    schedule = Schedule.objects.create(cluster=cluster, battery="basic", interval_minutes=60)
    first = tasks.start_scheduled(schedule.id)
    assert first is not None
    assert tasks.run_schedule(schedule.id) is None  # a second beat at the same moment
    Run.objects.filter(pk=first).update(state=Run.State.FINISHED, finished=now())
    heads.refresh_runs([first])  # a bulk UPDATE, as the application's own are followed
    clock.shift(timedelta(minutes=29))
    assert (
        tasks.start_scheduled(schedule.id) is None
    )  # the first run started less than half an interval ago
    clock.shift(timedelta(minutes=2))
    second = tasks.start_scheduled(schedule.id)
    assert second is not None and second != first
    run = Run.objects.get(pk=second)
    assert (run.schedule_id, run.trigger, run.battery) == (
        schedule.id,
        Run.Trigger.PERIODIC,
        "basic",
    )


@pytest.mark.parametrize("what", ["paused", "cluster disabled", "deleted"])
def test_a_paused_or_gone_schedule_starts_nothing(broker, clock, what: str) -> None:
    cluster = f.cluster()
    schedule = Schedule.objects.create(cluster=cluster, battery="basic", interval_minutes=60)
    if what == "paused":
        Schedule.objects.filter(pk=schedule.pk).update(enabled=False)
    elif what == "cluster disabled":
        cluster.enabled = False
        cluster.save()
    else:
        schedule.delete()
    assert tasks.start_scheduled(schedule.id) is None
    assert not Run.objects.exists()


# --- sweeps and the ping --------------------------------------------------------------------------------


def test_the_sweep_of_all_clusters_sends_one_sweep_per_enabled_cluster(broker) -> None:
    a, b = f.cluster(), f.cluster()
    f.cluster(enabled=False)
    assert tasks.sweep_all_clusters() == 2
    assert broker() == sorted(
        [("workers.tasks.sweep_cluster", [a.id]), ("workers.tasks.sweep_cluster", [b.id])]
    )


def test_a_sweep_of_a_cluster_without_credentials_or_gone_does_nothing(broker) -> None:
    assert tasks.sweep(f.cluster().id) == []
    assert tasks.sweep_cluster(999_999) == []


def test_a_sweep_counts_the_live_runs_of_every_registration_of_the_cluster(
    broker, monkeypatch
) -> None:
    """The same cluster registered twice: a run live on one registration keeps its
    namespaces when the other one is swept (issue 23: pods client-sctp-52 not found)."""
    mine, other = f.cluster(kubeconfig="apiVersion: v1\n"), f.cluster()
    live = f.run(other, state=Run.State.RUNNING)
    seen = {}

    def sweep_namespaces(api_client, live_run_ids, still_live=None, own=None, **kwargs):
        seen["live"] = set(live_run_ids)
        seen["still_live"] = still_live(tagged), still_live(runner.battery_run_id(999_999))
        seen["own"] = own(tagged), own("d000000-5"), own("17")
        return []

    monkeypatch.setattr(tasks, "sweep_namespaces", sweep_namespaces)
    # the one seam: no API server to build a client for
    monkeypatch.setattr(
        tasks,
        "api_client_from_kubeconfig",
        lambda text: type("Client", (), {"close": lambda self: None})(),
    )
    tagged = runner.battery_run_id(live.id)
    assert tasks.sweep(mine.id) == []
    assert tagged in seen["live"]
    assert seen["still_live"] == (True, False)
    # another deployment's namespaces on the cluster are not this one's to sweep; a bare
    # number is a run from before the tag
    assert seen["own"] == (True, False, True)


def test_battery_run_ids_carry_the_deployment_tag(settings) -> None:
    """Two deployments number their runs from 1: the battery's ids (its namespaces) differ."""
    first = runner.battery_run_id(1)
    settings.REDIS_PREFIX = "another-dashboard"
    assert runner.battery_run_id(1) != first
    assert first.endswith("-1") and first.startswith("d") and len(first) == len("d123456-1")


def test_the_ping_answers_its_value_and_writes_nothing(db) -> None:
    assert tasks.ping("hello") == "hello"
    assert not AuditEvent.objects.exists()  # health checks are no decisions: the trail stays clean
