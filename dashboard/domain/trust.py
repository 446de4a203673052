"""Maintainers' trust decisions (contract: Evidence policy, "Trusted cluster" and NetworkPolicy).

Runs count only on clusters a maintainer approved; a maintainer may mark a cluster basic-only
(connectivity runs load sctp.ko, which the periodic basic job must not find loaded); a plugin
without NetworkPolicy support qualifies only with a maintainer's recorded exemption. Every
decision is audited. The evidence policy (dashboard/domain/policy.py) reads these fields; nothing
else decides eligibility.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils.timezone import now

from dashboard.domain import heads
from dashboard.domain.catalog import Battery
from dashboard.domain.models import AuditEvent, Cluster, Plugin, Run, Schedule
from dashboard.domain.publication import invalidate
from kernel.vocabulary import LOADS_SCTP_MODULE

BASIC_ONLY_REFUSAL = (
    "cluster {name} is basic-only: connectivity runs load sctp.ko, which its periodic basic job "
    "must not find loaded"
)
BASIC_ONLY_UPSTREAM_REFUSAL = (
    "cluster {name} is basic-only: the upstream battery runs upstream's connectivity specs "
    "([Feature:SCTPConnectivity]), which load sctp.ko, which its periodic basic job must not "
    "find loaded"
)
EXEMPTION_REASON_MAX = 500


class TrustError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _user(actor: Any) -> Any:
    return actor if getattr(actor, "is_authenticated", False) else None


def awaiting_approval() -> QuerySet[Cluster]:
    """Clusters waiting for a maintainer's approval, oldest first (the queue on /review/): enabled,
    real (an emulated one never counts, approved or not) and not approved."""
    return (
        Cluster.objects.filter(approved=False, enabled=True, lab=False, emulated=False)
        .select_related("plugin", "owner")
        .order_by("created")
    )


def approve_cluster(cluster: Cluster, actor: Any) -> Cluster:
    """Approves a cluster: its runs count from now on (the past ones too, being of this cluster)."""
    if not cluster.enabled:
        raise TrustError(
            409, f"cluster {cluster.name} is disabled: enable it in the admin before approving"
        )
    with transaction.atomic():
        Cluster.objects.filter(pk=cluster.pk).update(
            approved=True, approved_by=_user(actor), approved_at=now()
        )
        AuditEvent.record(
            actor, "cluster.approve", f"cluster {cluster.name}", plugin=cluster.plugin.slug
        )
        invalidate()
    cluster.refresh_from_db()
    return cluster


def revoke_approval(cluster: Cluster, actor: Any, reason: str = "") -> Cluster:
    with transaction.atomic():
        Cluster.objects.filter(pk=cluster.pk).update(
            approved=False, approved_by=None, approved_at=None
        )
        AuditEvent.record(
            actor, "cluster.unapprove", f"cluster {cluster.name}", reason=reason[:300]
        )
        invalidate()
    cluster.refresh_from_db()
    return cluster


def set_basic_only(cluster: Cluster, value: bool, actor: Any) -> Cluster:
    with transaction.atomic():
        Cluster.objects.filter(pk=cluster.pk).update(basic_only=bool(value))
        AuditEvent.record(
            actor,
            "cluster.basic_only" if value else "cluster.basic_only_cleared",
            f"cluster {cluster.name}",
        )
        invalidate()
    cluster.refresh_from_db()
    return cluster


def set_netpol_exemption(plugin: Plugin, reason: str, actor: Any) -> Plugin:
    """Records (or, with an empty reason, clears) a NetworkPolicy exemption for `plugin`."""
    reason = (reason or "").strip()
    if len(reason) > EXEMPTION_REASON_MAX:
        raise TrustError(400, f"the reason is longer than {EXEMPTION_REASON_MAX} characters")
    with transaction.atomic():
        if reason:
            Plugin.objects.filter(pk=plugin.pk).update(
                netpol_exemption_reason=reason,
                netpol_exempted_by=_user(actor),
                netpol_exempted_at=now(),
            )
            AuditEvent.record(
                actor, "plugin.netpol_exemption", f"plugin {plugin.slug}", reason=reason
            )
        else:
            Plugin.objects.filter(pk=plugin.pk).update(
                netpol_exemption_reason="", netpol_exempted_by=None, netpol_exempted_at=None
            )
            AuditEvent.record(actor, "plugin.netpol_exemption_cleared", f"plugin {plugin.slug}")
        invalidate()
    plugin.refresh_from_db()
    return plugin


def refuse_run(cluster: Cluster, battery: str) -> str | None:
    """Why a run of `battery` may not be requested on `cluster` (None: it may)."""
    if cluster.basic_only and battery == Battery.UPSTREAM:
        return BASIC_ONLY_UPSTREAM_REFUSAL.format(name=cluster.name)
    if cluster.basic_only and battery in LOADS_SCTP_MODULE:
        return BASIC_ONLY_REFUSAL.format(name=cluster.name)
    return None


def refuse_remote_run(cluster: Cluster, battery: str) -> str | None:
    """Why the dashboard's workers may not run `battery` on `cluster` (refuse_run, and: a
    cluster that reports through its in-cluster agent is never tested from here)."""
    refusal = refuse_run(cluster, battery)
    if refusal:
        return refusal
    if cluster.mode == Cluster.Mode.AGENT:
        return (
            f"cluster {cluster.name} reports through its in-cluster agent (python -m "
            "kernel.agent): the dashboard's workers do not test it; a maintainer may change "
            "its mode"
        )
    return None


def set_mode(cluster: Cluster, mode: str, actor: Any, reason: str = "") -> Cluster:
    """A maintainer changes how a cluster is tested (audited). Its approval is cleared: what
    a maintainer approved was the cluster as tested the other way. Switching to the workers
    needs a stored kubeconfig; switching to the agent forgets the agent key, so the next
    agent to post registers its key, for a maintainer to approve."""
    if mode not in Cluster.Mode.values:
        raise TrustError(400, f"mode must be one of {', '.join(Cluster.Mode.values)}")
    reason = (reason or "").strip()
    if not reason:
        raise TrustError(400, "changing a cluster's mode needs a reason")
    if mode == cluster.mode:
        return cluster
    if (
        mode == Cluster.Mode.WORKER
        and not Cluster.objects.filter(pk=cluster.pk).exclude(kubeconfig="").exists()
    ):
        raise TrustError(
            409, f"cluster {cluster.name} has no kubeconfig: store one before the workers test it"
        )
    with transaction.atomic():
        Cluster.objects.filter(pk=cluster.pk).update(
            mode=mode, agent_key_digest="", approved=False, approved_by=None, approved_at=None
        )
        AuditEvent.record(
            actor,
            "cluster.mode",
            f"cluster {cluster.name}",
            previous=cluster.mode,
            mode=mode,
            reason=reason[:300],
        )
        invalidate()
    cluster.refresh_from_db()
    return cluster


def reset_agent_key(cluster: Cluster, actor: Any, reason: str = "") -> Cluster:
    """Forgets the agent's key (a lost or leaked key): the next agent to post registers its
    own, and the cluster waits for a maintainer's approval again (audited)."""
    with transaction.atomic():
        Cluster.objects.filter(pk=cluster.pk).update(
            agent_key_digest="", approved=False, approved_by=None, approved_at=None
        )
        AuditEvent.record(
            actor, "cluster.agent_key_reset", f"cluster {cluster.name}", reason=reason[:300]
        )
        invalidate()
    cluster.refresh_from_db()
    return cluster


def verify_agent_run(run: Run, actor: Any, reason: str = "") -> Run:
    """A maintainer vouches for one self-reported run (audited): only then may it count, as a
    verified submission does. Worker runs need no such word."""
    if run.trigger != Run.Trigger.AGENT:
        raise TrustError(
            409, f"run {run.pk} was made by the dashboard's workers: nothing to verify"
        )
    if run.state != Run.State.FINISHED:
        raise TrustError(409, f"run {run.pk} ended {run.state}: only finished runs are verified")
    if run.agent_verified_at is not None:
        return run
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(
            agent_verified_by=_user(actor), agent_verified_at=now()
        )
        heads.refresh(clusters=[run.cluster_id])
        AuditEvent.record(
            actor,
            "run.verify",
            f"run {run.pk}",
            cluster=run.cluster.name,
            reason=(reason or "").strip()[:300],
        )
        invalidate()
    run.refresh_from_db()
    return run


def unverify_agent_run(run: Run, actor: Any, reason: str) -> Run:
    """Withdraws a verification (audited, with a reason): the run stops counting."""
    reason = (reason or "").strip()
    if not reason:
        raise TrustError(400, "withdrawing a verification needs a reason")
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(agent_verified_by=None, agent_verified_at=None)
        heads.refresh(clusters=[run.cluster_id])
        AuditEvent.record(
            actor, "run.unverify", f"run {run.pk}", cluster=run.cluster.name, reason=reason[:300]
        )
        invalidate()
    run.refresh_from_db()
    return run


def periodic_conflict(cluster: Cluster) -> str | None:
    """A warning when a cluster hosting a periodic basic job also receives connectivity runs.

    Connectivity tests load sctp.ko (the KEP marks them Disruptive), after which the basic
    tests' module invariant can only be inconclusive: the periodic job stops proving anything.
    """
    hosts_basic = Schedule.objects.filter(
        cluster=cluster, enabled=True, battery__in=[Battery.BASIC, Battery.ALL]
    ).exists()
    if not hosts_basic:
        return None
    if cluster.basic_only:
        return None
    connectivity = (
        Run.objects.filter(cluster=cluster, battery__in=LOADS_SCTP_MODULE)
        .order_by("-created")
        .values_list("id", flat=True)
        .first()
    )
    scheduled_all = Schedule.objects.filter(
        cluster=cluster, enabled=True, battery=Battery.ALL
    ).exists()
    if connectivity is None and not scheduled_all:
        return None
    what = (
        f"connectivity runs (latest: run {connectivity})"
        if connectivity
        else "a scheduled 'all' battery"
    )
    return (
        f"cluster {cluster.name} hosts a periodic basic job and also receives {what}: they load "
        "sctp.ko, so its basic runs become inconclusive. Mark the cluster basic-only, or run "
        "connectivity tests on another cluster."
    )
