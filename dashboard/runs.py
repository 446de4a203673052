"""Requesting runs. The row is created first; its primary key is enqueued after the commit.

If the broker is down the run stays `queued` with no `dispatched` time, and the dispatcher on
beat (workers.tasks.dispatch_pending) sends it when the broker is back: nothing is lost.

Runs on one cluster wait for each other (one lease per cluster), so requests are bounded: a
request for a battery already queued on the cluster answers with that run, and an owner may
have at most RUNS_QUEUED_PER_OWNER requested runs waiting. Periodic runs are neither merged nor
counted: a vendor's requests can never push the periodic job out.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils.timezone import now

from dashboard.catalog import Battery, kubernetes_minor
from dashboard.models import Cluster, Run, Schedule
from dashboard.tasks_port import send
from dashboard.trust import refuse_remote_run

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
        raise RunRequestError(
            400, f"unknown battery {battery!r}: expected one of {', '.join(Battery.values)}"
        )
    if not cluster.enabled:
        raise RunRequestError(409, f"cluster {cluster.name} is disabled")
    refusal = refuse_remote_run(cluster, battery)
    if refusal:
        raise RunRequestError(409, refusal)
    with transaction.atomic():
        if trigger != Run.Trigger.PERIODIC:
            # Serializes requests on this cluster, so two at once cannot both queue the battery.
            Cluster.objects.select_for_update().filter(pk=cluster.pk).first()
            queued = already_queued(cluster, battery)
            if queued is not None:
                queued.deduplicated = True  # type: ignore[attr-defined]
                return queued
            refusal = over_queue_cap(cluster, user)
            if refusal:
                raise RunRequestError(429, refusal)
        run = _create(cluster, battery, trigger=trigger, user=user, schedule=schedule)
    if dispatch_on_commit:
        transaction.on_commit(lambda: dispatch(run.pk))
    return run


def already_queued(cluster: Cluster, battery: str) -> Run | None:
    """The requested (not periodic) run of this battery still waiting on this cluster, if any."""
    return (
        Run.objects.filter(cluster=cluster, battery=battery, state=Run.State.QUEUED)
        .exclude(trigger=Run.Trigger.PERIODIC)
        .order_by("created")
        .first()
    )


def over_queue_cap(cluster: Cluster, user: Any = None) -> str | None:
    """Why the owner may not queue another run (RUNS_QUEUED_PER_OWNER waiting or running
    already), or None.

    The owner is the cluster's vendor; for a cluster without one (a maintainer's), the user.
    """
    cap = int(settings.RUNS_QUEUED_PER_OWNER)
    # Running runs count too: a run that holds a worker (a cluster answering slowly) is as much
    # of the owner's share as one that waits for it.
    waiting = Run.objects.filter(state__in=[Run.State.QUEUED, Run.State.RUNNING]).exclude(
        trigger__in=[Run.Trigger.PERIODIC, Run.Trigger.AGENT]
    )
    if cluster.owner_id:
        waiting, who = waiting.filter(cluster__owner_id=cluster.owner_id), "this cluster's owner"
    elif getattr(user, "is_authenticated", False):
        waiting, who = waiting.filter(Q(requested_by=user)), "you"
    else:
        return None
    count = waiting.count()
    if count >= cap:
        return (
            f"{who} already {'have' if who == 'you' else 'has'} {count} runs waiting or running "
            f"(at most {cap}, RUNS_QUEUED_PER_OWNER); request more once they have finished"
        )
    return None


def _create(
    cluster: Cluster, battery: str, *, trigger: str, user: Any, schedule: Schedule | None
) -> Run:
    return Run.objects.create(
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


def dispatch(run_id: int) -> bool:
    """Sends the run to the workers; False (and the run stays queued) when the broker is down."""
    try:
        # By name: the web process never imports the tasks (nor, through them, the battery).
        result = send(EXECUTE_RUN, args=[run_id], retry=False)
    except Exception as exc:  # the broker is unreachable: the dispatcher retries later
        log.warning("run %s stays queued: broker unavailable (%s)", run_id, exc)
        return False
    Run.objects.filter(pk=run_id, state=Run.State.QUEUED).update(
        dispatched=now(), task_id=result.id or ""
    )
    return True
