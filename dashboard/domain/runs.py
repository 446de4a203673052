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
from collections.abc import Mapping
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Q
from django.utils.timezone import now

from dashboard.domain import heads
from dashboard.domain.catalog import ALL_KEYS, Battery, Outcome, Proxier, keys_of, kubernetes_minor
from dashboard.domain.evidence import summarize
from dashboard.domain.history import record_evaluation
from dashboard.domain.ingest.upstream_names import fed_keys
from dashboard.domain.models import Cluster, Run, Schedule, TestResult
from dashboard.domain.tasks_port import send
from dashboard.domain.trust import refuse_remote_run

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


# --- A run's bookkeeping: its results, its end, what follows (for workers and the agent alike)


CREDENTIALS_UNREADABLE = (
    "the stored kubeconfig cannot be decrypted: FIELD_ENCRYPTION_KEY does not hold its "
    "key; register the cluster again"
)


class CredentialsUnreadable(Exception):
    """The cluster's kubeconfig is stored under a key this process does not have."""


def kubeconfig_of(cluster: Cluster) -> str:
    """The cluster's kubeconfig; an undecryptable one is marked on the cluster (its page shows it)."""
    try:
        text = cluster.kubeconfig
    except ImproperlyConfigured:
        Cluster.objects.filter(pk=cluster.pk).update(credentials_error=CREDENTIALS_UNREADABLE[:200])
        raise CredentialsUnreadable(CREDENTIALS_UNREADABLE) from None
    if cluster.credentials_error:
        Cluster.objects.filter(pk=cluster.pk).update(credentials_error="")
    return str(text)


class Result(Protocol):
    """One test's result as a report carries it: the battery's (kernel.battery) or an agent's
    (dashboard.domain.agent_runs.AgentResult)."""

    @property
    def outcome(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def evidence(self) -> str: ...

    @property
    def duration(self) -> float | None: ...


class Report(Protocol):
    """A run's report: its results by catalog key and the cluster's fingerprint."""

    @property
    def results(self) -> Mapping[str, Result]: ...

    @property
    def fingerprint(self) -> Mapping[str, Any]: ...


def end_state(report: Report) -> tuple[Run.State, str]:
    """A run whose battery left a test unreached (cluster unreachable, setup failed), or whose
    report says it is no evidence (`error`), did not finish its job: it ends in error, and says
    why; otherwise it finished."""
    refused = getattr(report, "error", "")  # the upstream battery's: why it is no evidence
    if refused:
        return Run.State.ERROR, refused
    unreached = [r for r in report.results.values() if not getattr(r, "reached", True)]
    if unreached:
        return Run.State.ERROR, unreached[0].reason.removeprefix("not run: ")
    return Run.State.FINISHED, ""


def record_result(run_id: int, key: str, result: Result) -> None:
    TestResult.objects.update_or_create(
        run_id=run_id,
        test_key=key,
        defaults={
            # A test the run never reached (cancelled, cluster gone) has no evidence: not_run.
            "outcome": result.outcome if getattr(result, "reached", True) else Outcome.NOT_RUN,
            "reason": result.reason or "",
            "evidence": (result.evidence or "")[:100_000],
            "duration": result.duration,
            "started": getattr(result, "started", None),
            "finished": getattr(result, "finished", None) or now(),
        },
    )


def finish(run: Run, state: str, error: str, report: Report | None) -> None:
    if report is not None:
        for key, result in report.results.items():
            record_result(run.id, key, result)
    outcomes = dict(TestResult.objects.filter(run_id=run.id).values_list("test_key", "outcome"))
    missing = [k for k in keys_of(run.battery) if k not in outcomes]
    for key in missing:
        why = error or "the run ended before this test"
        TestResult.objects.create(run_id=run.id, test_key=key, outcome=Outcome.NOT_RUN, reason=why)
        outcomes[key] = Outcome.NOT_RUN
    run.apply_flags(summarize(outcomes, run.cluster.plugin.implements_network_policy))
    fingerprint = dict(getattr(report, "fingerprint", None) or {})
    detected = fingerprint.get("proxier_detected")
    fields = {
        "state": state,
        "error": error[:5000],
        "finished": now(),
        "fingerprint": fingerprint,
        "has_connectivity": run.has_connectivity,
        "qualifying": run.qualifying,
        "qualifying_reason": run.qualifying_reason,
        "pod_to_service_passed": run.pod_to_service_passed,
        "basic_ok": run.basic_ok,
    }
    # Evidence policy: the demonstrated proxier is the detected one, never the registered mode
    # (run.proxier keeps what the cluster was registered with); the lab's /version mark and the
    # release the server reported travel with the run.
    fields["proxier_detected"] = detected if detected in Proxier.values else ""
    fields["emulated"] = bool(
        run.emulated or run.cluster.emulated or run.cluster.lab or fingerprint.get("emulated")
    )
    seen_minor = kubernetes_minor(fingerprint.get("kubernetes_version"))
    if seen_minor is not None:
        fields["kubernetes_minor"] = seen_minor
    # Only a run still ours is finished here: the reaper may have given up on it already. The
    # run's end and its cluster's evidence heads commit together: nobody (a page, a test, the
    # next evaluation) sees the run ended while the heads still say otherwise, and a worker
    # killed between the two leaves neither.
    with transaction.atomic():
        Run.objects.filter(pk=run.id, state=Run.State.RUNNING).update(**fields)
        heads.refresh(clusters=[run.cluster_id], schedules=[run.schedule_id])
    if fingerprint.get("emulated") and not run.cluster.emulated:
        # A cluster registered through the API that turns out to be an emulator is one from now on.
        Cluster.objects.filter(pk=run.cluster_id).update(emulated=True)


def finish_reaped(run_id: int) -> None:
    """Marks the tests a dead worker never reported, so the run's page says why they are missing."""
    run = Run.objects.select_related("cluster__plugin").get(pk=run_id)
    outcomes = dict(TestResult.objects.filter(run_id=run_id).values_list("test_key", "outcome"))
    for key in keys_of(run.battery):
        if key not in outcomes:
            TestResult.objects.create(
                run_id=run_id, test_key=key, outcome=Outcome.NOT_RUN, reason=run.error
            )
    after_run(run_id)


def after_run(run_id: int) -> None:
    """Re-evaluates readiness and records what changed (notifications hang off that)."""
    try:
        record_evaluation(reason=f"run {run_id} ended")
    except Exception:
        log.exception("re-evaluating readiness after run %s failed", run_id)


def hand_off(cluster_id: int) -> None:
    """Sends the cluster's oldest waiting run now that the lease is free.

    A run that found the cluster busy retries with a growing wait (up to two minutes); without
    this the next run would sit idle that long after the cluster became free. Its earlier task
    still fires later, finds the run no longer queued, and ends.
    """
    waiting = (
        Run.objects.filter(cluster_id=cluster_id, state=Run.State.QUEUED)
        .order_by("created", "id")
        .values_list("id", flat=True)
        .first()
    )
    if waiting is not None:
        dispatch(waiting)


def results_of(
    run: Run, by_key: Mapping[str, TestResult]
) -> tuple[dict[str, TestResult | None], dict[str, TestResult]]:
    """The run's results as its pages, the API and `run_battery` show them: every test of its
    battery in catalog order (None: no result), then the conformance checks beside them."""
    keys = keys_of(run.battery)
    if run.battery == Battery.UPSTREAM:
        # upstream's e2e.test has no outcome for a test it has no spec for (issue 39)
        fed = fed_keys(run.kubernetes_version)
        keys = tuple(k for k in keys if k in fed)
    catalog = {key: by_key.get(key) for key in keys}
    extras = {key: res for key, res in sorted(by_key.items()) if key not in ALL_KEYS}
    return catalog, extras


def missing_reason(run: Run) -> str:
    """Why a test of the run has no result."""
    return (
        "no result yet"
        if run.state in (Run.State.QUEUED, Run.State.RUNNING)
        else "no result recorded"
    )
