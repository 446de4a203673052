"""Finding candidate evidence in a bounded number of queries, as policy Items.

The lookups are "LIMIT 1" subqueries on indexes (the newest run of each kind per cluster, the
newest verified submission of each kind per plugin and proxier) plus the newest submissions,
so an evaluation costs the same number of queries however long the history is. They only find
candidates: whether one counts is dashboard.policy's answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import OuterRef, Subquery

from dashboard import policy
from dashboard.models import Cluster, Plugin, Run, Submission, TestResult
from dashboard.policy import Item

RECENT_SUBMISSIONS = 200  # the newest connectivity submissions shown beside the indexed lookups

_RUN_FIELDS = (
    "id",
    "state",
    "finished",
    "created",
    "plugin_id",
    "plugin_version",
    "kubernetes_version",
    "kubernetes_minor",
    "proxier",
    "proxier_detected",
    "battery",
    "trigger",
    "agent_verified_at",
    "emulated",
    "fingerprint",
    "cluster__name",
    "cluster__enabled",
    "cluster__approved",
    "cluster__emulated",
    "cluster__lab",
)
_SUB_FIELDS = (
    "id",
    "status",
    "plugin_id",
    "plugin_version",
    "kubernetes_version",
    "kubernetes_minor",
    "proxier",
    "results",
    "run_at",
    "run_at_source",
    "created",
    "emulated",
)


def plugins_by_id() -> dict[int, Any]:
    return {p.id: p for p in Plugin.objects.all()}


def load(
    run_ids: Iterable[int | None],
    submission_ids: Iterable[int | None],
    plugins: dict[int, Any] | None = None,
) -> dict[tuple[str, int], Item]:
    """Items for these runs and submissions: three queries (runs, their results, submissions)."""
    plugins = plugins if plugins is not None else plugins_by_id()
    facts = {pid: policy.plugin_facts(p) for pid, p in plugins.items()}
    out: dict[tuple[str, int], Item] = {}
    rids = {i for i in run_ids if i}
    sids = {i for i in submission_ids if i}
    if rids:
        outcomes: dict[int, dict[str, str]] = {}
        reasons: dict[int, dict[str, str]] = {}
        for run_id, key, outcome, reason in TestResult.objects.filter(run_id__in=rids).values_list(
            "run_id", "test_key", "outcome", "reason"
        ):
            outcomes.setdefault(run_id, {})[key] = outcome
            reasons.setdefault(run_id, {})[key] = reason[:300]
        for r in Run.objects.filter(id__in=rids).select_related("cluster").only(*_RUN_FIELDS):
            out[("run", r.id)] = policy.run_item(
                r, outcomes.get(r.id, {}), reasons.get(r.id, {}), facts[r.plugin_id]
            )
    if sids:
        for s in Submission.objects.filter(id__in=sids).only(*_SUB_FIELDS):
            out[("submission", s.id)] = policy.submission_item(s, facts[s.plugin_id])
    return out


def _newest(qs: Any, outer: str, order: str, **match: Any) -> Subquery:
    return Subquery(qs.filter(**{outer: OuterRef("pk")}, **match).order_by(order).values("id")[:1])


def connectivity_candidates(plugins: dict[int, Any], plugin_id: int | None = None) -> list[Item]:
    """Connectivity evidence worth assessing: per cluster, its newest connectivity run, newest
    qualifying run and newest run with pod-to-service passed; per plugin and per proxier, the
    newest verified submissions of those kinds; and the newest connectivity submissions
    (pending ones included: they are shown, never counted)."""
    runs = Run.objects.filter(state=Run.State.FINISHED)
    # The newest qualifying (or pod-to-service) run among those that may count: an unverified
    # self-reported run must not hide an older verified one. The newest connectivity run of
    # each cluster is found whatever its trust, to be shown.
    trusted = runs.exclude(trigger=Run.Trigger.AGENT, agent_verified_at__isnull=True)
    clusters = Cluster.objects.all()
    if plugin_id is not None:
        clusters = clusters.filter(plugin_id=plugin_id)
    ids = list(
        clusters.annotate(
            c_run=_newest(runs.filter(has_connectivity__in=[True]), "cluster", "-finished"),
            q_run=_newest(trusted.filter(qualifying__in=[True]), "cluster", "-finished"),
            p_run=_newest(trusted.filter(pod_to_service_passed__in=[True]), "cluster", "-finished"),
        ).values_list("c_run", "q_run", "p_run")
    )
    run_ids = {i for row in ids for i in row if i}

    subs = Submission.objects.filter(status=Submission.Status.VERIFIED)
    plugin_rows = Plugin.objects.all() if plugin_id is None else Plugin.objects.filter(pk=plugin_id)
    sub_ids: set[int] = set()
    for row in plugin_rows.annotate(
        q_sub=_newest(subs.filter(qualifying__in=[True]), "plugin", "-created"),
        c_sub=_newest(subs.filter(has_connectivity__in=[True]), "plugin", "-created"),
    ).values_list("q_sub", "c_sub"):
        sub_ids.update(i for i in row if i)
    recent = Submission.objects.filter(
        has_connectivity__in=[True],
        status__in=[Submission.Status.VERIFIED, Submission.Status.PENDING],
    )
    if plugin_id is not None:
        recent = recent.filter(plugin_id=plugin_id)
    else:
        for proxier in ("iptables", "ipvs", "nftables"):
            newest = (
                subs.filter(proxier=proxier, pod_to_service_passed__in=[True])
                .order_by("-created")
                .values_list("id", flat=True)
                .first()
            )
            if newest:
                sub_ids.add(newest)
    sub_ids.update(recent.order_by("-created").values_list("id", flat=True)[:RECENT_SUBMISSIONS])
    found = load(run_ids, sub_ids, plugins)
    return sorted(found.values(), key=lambda i: (i.when is not None, i.when), reverse=True)
