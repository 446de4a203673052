"""Requesting runs. The row is created first; its primary key is enqueued after the commit.

If the broker is down the run stays `queued` with no `dispatched` time, and the dispatcher on
beat (workers.tasks.dispatch_pending) sends it when the broker is back: nothing is lost.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils.timezone import now

from workers import app

from .catalog import Battery, kubernetes_minor
from .models import Cluster, Run, Schedule
from .trust import refuse_run

EXECUTE_RUN = "workers.tasks.execute_run"

log = logging.getLogger(__name__)


class RunRequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def request_run(
    cluster: Cluster,
    battery: str,
    *,
    trigger: str = Run.Trigger.MANUAL,
    user: Any = None,
    schedule: Schedule | None = None,
    dispatch_on_commit: bool = True,
) -> Run:
    if battery not in Battery.values:
        raise RunRequestError(400, f"unknown battery {battery!r}: expected one of {', '.join(Battery.values)}")
    if not cluster.enabled:
        raise RunRequestError(409, f"cluster {cluster.name} is disabled")
    refusal = refuse_run(cluster, battery)
    if refusal:
        raise RunRequestError(409, refusal)
    run = Run.objects.create(
        cluster=cluster,
        plugin_id=cluster.plugin_id,
        plugin_version=cluster.plugin_version,
        kubernetes_version=cluster.kubernetes_version,
        kubernetes_minor=kubernetes_minor(cluster.kubernetes_version),
        emulated=cluster.emulated or cluster.lab,
        proxier=cluster.proxier,
        battery=battery,
        trigger=trigger,
        schedule=schedule,
        requested_by=user if getattr(user, "is_authenticated", False) else None,
    )
    if dispatch_on_commit:
        transaction.on_commit(lambda: dispatch(run.pk))
    return run


def dispatch(run_id: int) -> bool:
    """Sends the run to the workers; False (and the run stays queued) when the broker is down."""
    try:
        # By name: the web process never imports the tasks (nor, through them, the battery).
        result = app.send_task(EXECUTE_RUN, args=[run_id], retry=False)
    except Exception as exc:  # the broker is unreachable: the dispatcher retries later
        log.warning("run %s stays queued: broker unavailable (%s)", run_id, exc)
        return False
    Run.objects.filter(pk=run_id, state=Run.State.QUEUED).update(dispatched=now(), task_id=result.id or "")
    return True
