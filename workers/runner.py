"""Executing one run: claim it, hold the cluster lease, heartbeat, record results as they come.

Plain code, called by the Celery task (workers.tasks.execute_run) and by
`manage.py run_battery --sync`; no Celery in here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils.timezone import now

from dashboard.domain.catalog import Battery
from dashboard.domain.models import Run
from dashboard.domain.runs import (
    CredentialsUnreadable,
    after_run,
    end_state,
    finish,
    hand_off,
    kubeconfig_of,
    record_result,
)
from kernel.battery import run_battery
from kernel.kubeconfig import api_client_from_kubeconfig
from workers.lease import Lease
from workers.runspec import battery_run_id, cluster_spec
from workers.upstream import run_upstream

log = logging.getLogger(__name__)

GONE, BUSY, DONE = "gone", "busy", "done"


def lease_holder(run_id: int) -> str:
    return f"run-{run_id}"


def over_requested_share() -> bool:
    """More requested (manual or API) runs are running than RUNS_REQUESTED_MAX_RUNNING allows
    (0: no limit); counted after this run's claim, so the newest claim yields."""
    cap = int(getattr(settings, "RUNS_REQUESTED_MAX_RUNNING", 0) or 0)
    if cap <= 0:
        return False
    running = (
        Run.objects.filter(state=Run.State.RUNNING)
        .exclude(trigger__in=[Run.Trigger.PERIODIC, Run.Trigger.AGENT])
        .count()
    )
    return running > cap


def wall_clock_error() -> str:
    return (
        f"the run passed its wall-clock limit of {settings.RUN_TIME_LIMIT_SECONDS} s "
        "(RUN_TIME_LIMIT_SECONDS) and was stopped"
    )


class Heartbeat(threading.Thread):
    """Marks the run alive and renews the lease; notices a cancel or a lost lease."""

    def __init__(self, run_id: int, lease: Lease) -> None:
        super().__init__(name=f"heartbeat-run-{run_id}", daemon=True)
        self.run_id = run_id
        self.lease = lease
        self.stop = threading.Event()
        self.cancel = threading.Event()
        self.reason = ""
        self.timed_out = False
        self.abort: Callable[[], None] | None = None  # ends the run's connections to the cluster

    def time_up(self) -> None:
        """The run's wall-clock limit passed: the run stops now, whatever it waits for."""
        self.timed_out = True
        self.reason = wall_clock_error()
        self.cancel.set()
        if self.abort is not None:
            self.abort()

    def run(self) -> None:
        try:
            while not self.stop.wait(settings.RUN_HEARTBEAT_SECONDS):
                try:
                    alive = Run.objects.filter(pk=self.run_id, state=Run.State.RUNNING).update(
                        heartbeat=now()
                    )
                    if not alive:
                        self.reason = "the run was cancelled or ended elsewhere"
                        self.cancel.set()
                    if not self.lease.renew():
                        self.reason = "lost the cluster lease"
                        self.cancel.set()
                except Exception:  # a transient database or Redis error: try again next beat
                    log.exception("heartbeat of run %s failed", self.run_id)
        finally:
            connection.close()


def execute(run_id: int, *, worker: str = "", task_id: str = "") -> str:
    close_old_connections()
    run = Run.objects.select_related("cluster", "cluster__plugin").filter(pk=run_id).first()
    if run is None or run.state != Run.State.QUEUED:
        return GONE
    lease = Lease(run.cluster_id, holder=lease_holder(run_id))
    if not lease.acquire():
        return BUSY
    claimed = Run.objects.filter(pk=run_id, state=Run.State.QUEUED).update(
        state=Run.State.RUNNING,
        started=now(),
        heartbeat=now(),
        worker=worker[:200],
        task_id=task_id[:64],
    )
    if not claimed:
        lease.release()
        return GONE
    if run.trigger not in (Run.Trigger.PERIODIC, Run.Trigger.AGENT) and over_requested_share():
        # Requested runs may hold at most RUNS_REQUESTED_MAX_RUNNING workers: the rest stay free
        # for periodic jobs, however slowly a vendor's cluster answers. Back to the queue.
        Run.objects.filter(pk=run_id, state=Run.State.RUNNING).update(
            state=Run.State.QUEUED, started=None, heartbeat=None, worker=""
        )
        lease.release()
        return BUSY
    beat = Heartbeat(run_id, lease)
    beat.start()
    # The run's own wall-clock limit (the worker's soft time limit is only the backstop).
    wall_clock = threading.Timer(float(settings.RUN_TIME_LIMIT_SECONDS), beat.time_up)
    wall_clock.daemon = True
    wall_clock.start()
    state, error, report = Run.State.FINISHED, "", None
    try:
        report = _run_battery(run, beat)
        if beat.timed_out:
            state, error = Run.State.ERROR, beat.reason
        elif beat.cancel.is_set():
            state, error = Run.State.CANCELLED, beat.reason
        else:
            # Tests the battery never reached (cluster unreachable, setup failed): the run did
            # not finish its job, and says why.
            state, error = end_state(report)
    except CredentialsUnreadable as exc:
        log.error("run %s: cluster %s: %s", run_id, run.cluster.name, exc)
        state, error = Run.State.ERROR, str(exc)
    except Exception as exc:
        log.exception("run %s failed", run_id)
        state, error = Run.State.ERROR, f"{type(exc).__name__}: {exc}"
        if (
            type(exc).__name__ == "SoftTimeLimitExceeded"
        ):  # Celery's soft limit (no Celery import here)
            state, error = (
                Run.State.ERROR,
                "the run took longer than the worker's time limit (RUN_TIME_LIMIT_SECONDS)",
            )
    finally:
        wall_clock.cancel()
        beat.stop.set()
        beat.join(timeout=10)
    try:
        # Finished (state, time, results) while the lease is still held: the next run on this
        # cluster can only start after this one's recorded end.
        finish(run, state, error, report)
    finally:
        lease.release()
    hand_off(run.cluster_id)
    after_run(run_id)
    return DONE


def _run_battery(run: Run, beat: Heartbeat) -> Any:
    if run.battery == Battery.UPSTREAM:
        # Upstream's e2e.test in a process of its own, under this lease and heartbeat: a cancel
        # or the wall clock (beat.cancel) kills its process group.
        return run_upstream(run, beat.cancel.is_set)

    def on_result(key: str, result: Any) -> None:
        record_result(run.id, key, result)

    api_client = api_client_from_kubeconfig(kubeconfig_of(run.cluster))
    pin = getattr(api_client.rest_client.pool_manager, "pin", None)
    if pin is not None:
        beat.abort = pin.abort
        if beat.timed_out:
            pin.abort()
    try:
        return run_battery(
            api_client,
            cluster_spec(run.cluster),
            run.battery,
            battery_run_id(run.id),
            on_result=on_result,
            should_cancel=beat.cancel.is_set,
        )
    finally:
        api_client.close()
