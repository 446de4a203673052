"""Celery tasks: thin wrappers that take primary keys and call plain code.

Each task's body is a plain function next to it (`execute_or_wait`, `reap_stale`,
`dispatch_lost`, `start_scheduled`, `sweep`), called in-process by the tests with time-machine
(tests/tasks/test_task_bodies.py); the task adds only what Celery owns (retries, names).
"""

from __future__ import annotations

import functools
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils.timezone import now

from dashboard.celery import app
from dashboard.domain import clusters, heads, notify, runs
from dashboard.domain.audit import checkpoint
from dashboard.domain.history import record_evaluation
from dashboard.domain.models import Cluster, Run, Schedule
from dashboard.domain.runs import dispatch, request_run
from kernel.battery import pods, sweep_namespaces
from kernel.kubeconfig import api_client_from_kubeconfig
from workers import runner, runspec
from workers.lease import Lease, LeaseUnavailable

log = logging.getLogger(__name__)

# A run whose cluster is busy with another waits: 5 s, 10 s, 20 s … at most 2 min between tries
# (not a re-send every 5 s for an hour), and gives up after an hour.
BUSY_RETRY_SECONDS = 5
BUSY_RETRY_MAX_SECONDS = 120
BUSY_MAX_WAIT = timedelta(hours=1)
GAVE_UP = "gave-up"
RUN_HARD_LIMIT_MARGIN = 300  # seconds between the soft limit (the run ends itself) and the kill


def busy_countdown(retries: int) -> float:
    """Exponential backoff with a cap: the wait before the try after `retries` busy ones."""
    return float(min(BUSY_RETRY_MAX_SECONDS, BUSY_RETRY_SECONDS * 2 ** min(retries, 16)))


def execute_or_wait(run_id: int, *, worker: str = "", task_id: str = "") -> str:
    """Runs the run; BUSY when its cluster's lease is held and it should be tried again later.

    A run still waiting an hour after it was requested ends in error ("gave-up") instead.
    """
    try:
        outcome = runner.execute(run_id, worker=worker, task_id=task_id)
    except LeaseUnavailable as exc:
        # Redis went away between delivering the task and the lease: the run was not claimed.
        # Forget the dispatch so dispatch_pending sends it again once Redis is back (no retry
        # here: the broker is that same Redis, and a task failing in a loop helps nobody).
        log.warning("run %s stays queued: %s", run_id, exc)
        Run.objects.filter(pk=run_id, state=Run.State.QUEUED).update(dispatched=None)
        return "lease-unavailable"
    if outcome == runner.BUSY:
        waiting = Run.objects.filter(pk=run_id, state=Run.State.QUEUED)
        created = waiting.values_list("created", flat=True).first()
        if created is not None and now() - created > BUSY_MAX_WAIT:
            with transaction.atomic():
                waiting.update(
                    state=Run.State.ERROR,
                    finished=now(),
                    error="the cluster stayed busy with another run for an hour",
                )
                heads.refresh_runs([run_id])
            return GAVE_UP
        # Still in flight: dispatch_pending must not take it for lost and send it a second time.
        waiting.update(dispatched=now())
    return outcome


@app.task(
    bind=True,
    acks_late=True,
    max_retries=None,
    # The run stops itself at RUN_TIME_LIMIT_SECONDS (workers.runner); these are backstops.
    soft_time_limit=settings.RUN_TIME_LIMIT_SECONDS + 60,
    time_limit=settings.RUN_TIME_LIMIT_SECONDS + RUN_HARD_LIMIT_MARGIN,
)
def execute_run(self, run_id: int) -> str:
    outcome = execute_or_wait(
        run_id, worker=self.request.hostname or "", task_id=self.request.id or ""
    )
    if outcome == runner.BUSY:
        raise self.retry(countdown=busy_countdown(self.request.retries or 0))
    return runner.BUSY if outcome == GAVE_UP else outcome  # the run's error says it gave up


@app.task
def reap_stale_runs() -> list[int]:
    return reap_stale()


def reap_stale() -> list[int]:
    """Ends runs whose worker died: no heartbeat within RUN_HEARTBEAT_TIMEOUT."""
    cutoff = now() - timedelta(seconds=settings.RUN_HEARTBEAT_TIMEOUT)
    stale = list(
        Run.objects.filter(state=Run.State.RUNNING, heartbeat__lt=cutoff).values_list(
            "id", "cluster_id", "heartbeat"
        )
    )
    reaped = []
    for run_id, cluster_id, heartbeat in stale:
        with transaction.atomic():
            done = Run.objects.filter(
                pk=run_id, state=Run.State.RUNNING, heartbeat__lt=cutoff
            ).update(
                state=Run.State.ERROR,
                finished=now(),
                error="worker lost: no heartbeat since "
                + (f"{heartbeat:%Y-%m-%d %H:%M:%S} UTC" if heartbeat else "it started"),
            )
            if done:
                heads.refresh_runs([run_id])
        if done:
            reaped.append(run_id)
            release_dead_lease(cluster_id, run_id)
            runs.finish_reaped(run_id)
            transaction.on_commit(functools.partial(sweep_cluster.delay, cluster_id))
    return reaped


def release_dead_lease(cluster_id: int, run_id: int) -> None:
    if Lease.holder_of(cluster_id) == runner.lease_holder(run_id):
        lease = Lease(cluster_id, holder=runner.lease_holder(run_id))
        lease.held = True
        lease.release()


@app.task
def dispatch_pending() -> int:
    return dispatch_lost()


def dispatch_lost() -> int:
    """Sends queued runs the broker never got (it was down) or lost (it restarted)."""
    fresh = now() - timedelta(seconds=5)
    lost = now() - timedelta(minutes=10)
    ids = list(
        Run.objects.filter(state=Run.State.QUEUED, created__lt=fresh)
        .filter(Q(dispatched__isnull=True) | Q(dispatched__lt=lost))
        .values_list("id", flat=True)[:500]
    )
    return sum(1 for run_id in ids if dispatch(run_id))


@app.task
def run_schedule(schedule_id: int) -> int | None:
    return start_scheduled(schedule_id)


def start_scheduled(schedule_id: int) -> int | None:
    """Beat's entry point for a periodic battery; safe when two beats fire at once."""
    with transaction.atomic():
        schedule = (
            Schedule.objects.select_for_update()
            .select_related("cluster")
            .filter(pk=schedule_id)
            .first()
        )
        if schedule is None or not schedule.enabled or not schedule.cluster.enabled:
            return None
        if Run.objects.filter(
            schedule=schedule, state__in=[Run.State.QUEUED, Run.State.RUNNING]
        ).exists():
            log.info(
                "schedule %s: the previous run has not ended; not starting another", schedule_id
            )
            return None
        last = (
            Run.objects.filter(schedule=schedule)
            .order_by("-created")
            .values_list("created", flat=True)
            .first()
        )
        if last is not None and now() - last < schedule.interval / 2:
            log.info(
                "schedule %s: a run started %s ago already (duplicate beat?)",
                schedule_id,
                now() - last,
            )
            return None
        run = request_run(
            schedule.cluster, schedule.battery, trigger=Run.Trigger.PERIODIC, schedule=schedule
        )
    return run.id


@app.task(bind=True, acks_late=True, max_retries=None)
def deliver_notification(self, log_id: int) -> str:
    """One notification delivery, retried with backoff (dashboard.domain.notify.deliver)."""
    return notify.deliver(log_id, self.retry)


@app.task
def check_schedules() -> int:
    """Beat, every minute: schedule states and their notifications (dashboard.domain.notify)."""
    return notify.check_schedules()


@app.task
def audit_checkpoint() -> str:
    """Beat, every AUDIT_CHECKPOINT_SECONDS: the audit chain's head to the log, the checkpoint
    file and the webhooks (dashboard/domain/audit.py), so a truncated or rewritten trail shows."""
    current = checkpoint(now())
    return str(current) if current else ""


@app.task
def refresh_readiness(reason: str = "every minute") -> bool:
    """Recomputes and stores the published readiness evaluation (and records a snapshot when a
    verdict changed): beat sends it every minute, commits that change evidence send it too."""
    return record_evaluation(reason=reason)


@app.task(soft_time_limit=600, time_limit=660)
def sweep_cluster(cluster_id: int) -> list[str]:
    return sweep(cluster_id)


def sweep(cluster_id: int) -> list[str]:
    """Deletes namespaces left behind by runs that are no longer alive."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    if cluster is None or not cluster.__dict__.get("kubeconfig"):
        return []
    # Every live run, whatever cluster row it belongs to: the same cluster may be registered
    # twice (by its kubeconfig and by `lab --register`, or by two vendors), and a run on one
    # registration must not lose its namespaces to the other's sweep (issue 23: "pods
    # client-sctp-52 not found"). Run ids are unique, so their namespace labels are too; and
    # they carry this deployment's tag, so another deployment's runs on the same cluster keep
    # theirs (runner.battery_run_id).
    live_states = [Run.State.QUEUED, Run.State.RUNNING]

    def live_ids() -> set[str]:
        return {
            runner.battery_run_id(i)
            for i in Run.objects.filter(state__in=live_states).values_list("id", flat=True)
        }

    live = live_ids()
    tag = runspec.deployment_tag() + "-"

    def still_live(label: str) -> bool:
        """Asked again just before a deletion: a run may have started since `live` was read."""
        return label in {pods.dns_label(i) for i in live_ids()}

    def own(label: str) -> bool:
        # this deployment's, or one from before run ids carried the tag (a bare number)
        return label.startswith(tag) or label.isdigit()

    try:
        text = runs.kubeconfig_of(cluster)
    except runs.CredentialsUnreadable:
        return []
    api_client = api_client_from_kubeconfig(text)
    try:
        return sweep_namespaces(api_client, live, still_live=still_live, own=own)
    finally:
        api_client.close()


@app.task
def sweep_all_clusters() -> int:
    ids = list(Cluster.objects.filter(enabled=True).values_list("id", flat=True))
    for cluster_id in ids:
        sweep_cluster.delay(cluster_id)
    return len(ids)


@app.task
def ping(value: str) -> str:
    """A round trip for health checks and tests: the worker logs the value and answers it.

    A health check is a machine action: it writes nothing to the audit trail (which records
    what people decided), so the trail does not fill with pings."""
    log.info("ping %s", value)
    return value


@app.task
def renew_cluster_tokens() -> dict[str, str]:
    """Re-issues registered clusters' ServiceAccount tokens a third before they expire."""
    return clusters.renew_registered()
