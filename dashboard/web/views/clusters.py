"""Clusters: the list (/clusters/), one cluster's page (/clusters/<name>/) and "Run now"."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.db.models import OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.timezone import now
from django.views.decorators.http import require_POST

from dashboard.domain import trust
from dashboard.domain.agreement import side_by_side
from dashboard.domain.catalog import ALL_KEYS, BASIC_KEYS, Battery
from dashboard.domain.clusters import DESCRIPTION
from dashboard.domain.models import AuditEvent, Cluster, Run, TestResult
from dashboard.domain.roles import can_manage_cluster, vendor_ids
from dashboard.domain.runs import RunRequestError, request_run
from dashboard.web.views.access import forbidden, login_required, maintainer_required
from dashboard.web.views.fingerprint import facts
from dashboard.web.views.history import WINDOW, grid
from dashboard.web.views.outcomes import SHORT, cell

# Never load the secret, even into memory, on pages.
CLUSTER_FIELDS = (
    "id",
    "name",
    "owner",
    *DESCRIPTION,
    "lab",
    "enabled",
    "credentials_error",
    "created",
    "approved",
    "approved_at",
    "basic_only",
    "emulated",
    "mode",
    "agent_key_digest",
)


def freshness(last_finished: Any, schedules: list[Any]) -> dict[str, str]:
    """healthchecks.io's idea: up while on time, late after the interval and grace, stale after twice."""
    if last_finished is None:
        return {"state": "never", "label": "never ran"}
    age = now() - last_finished
    enabled = [s for s in schedules if s.enabled]
    if enabled:
        s = min(enabled, key=lambda s: s.interval_minutes)
        if age > 2 * s.interval:
            return {
                "state": "stale",
                "label": f"stale: no finished run for over twice the {s.interval_minutes}-minute interval",
            }
        if age > s.interval + timedelta(minutes=s.grace_minutes):
            return {"state": "late", "label": "late: the periodic run is overdue"}
        return {"state": "fresh", "label": "on schedule"}
    if age > timedelta(days=settings.READINESS_FRESH_DAYS):
        return {
            "state": "stale",
            "label": f"stale: older than {settings.READINESS_FRESH_DAYS} days",
        }
    # Not the "on schedule" pill: recent, but nothing promises the next run.
    return {"state": "manual", "label": "fresh (no periodic schedule)"}


def cluster_list(request: HttpRequest) -> HttpResponse:
    newest = Run.objects.filter(cluster=OuterRef("pk")).order_by("-created")
    clusters = list(
        Cluster.objects.select_related("plugin", "owner")
        .only(*CLUSTER_FIELDS, "plugin__slug", "plugin__name", "owner__name")
        .annotate(
            last_run_id=Subquery(newest.values("id")[:1]),
            last_finished_id=Subquery(newest.filter(state=Run.State.FINISHED).values("id")[:1]),
        )
        .prefetch_related("schedules")
    )
    run_ids = {i for c in clusters for i in (c.last_run_id, c.last_finished_id) if i}
    runs = Run.objects.defer("fingerprint", "error").in_bulk(run_ids) if run_ids else {}
    results: dict[int, list[Any]] = {}
    if run_ids:
        # Only the catalog's tests: the TCP/UDP conformance checks are not part of any criterion.
        for r in TestResult.objects.filter(
            run_id__in=[c.last_finished_id for c in clusters if c.last_finished_id],
            test_key__in=ALL_KEYS,
        ).only("run_id", "test_key", "outcome"):
            results.setdefault(r.run_id, []).append(r)
    mine = vendor_ids(request.user)
    rows = []
    for c in clusters:
        last, done = runs.get(c.last_run_id), runs.get(c.last_finished_id)
        rows.append(
            {
                "cluster": c,
                "last": last,
                "finished": done,
                "outcomes": _labelled(results.get(c.last_finished_id, [])),
                "freshness": freshness(done.finished if done else None, list(c.schedules.all())),
                "can_manage": can_manage_cluster(request.user, c),
                "mine": c.owner_id is not None and c.owner_id in mine,
            }
        )
    # A vendor's own clusters first (issue 39's walk: "is my cluster approved?" on one screen).
    rows.sort(key=lambda row: not row["mine"])
    return render(request, "clusters/list.html", {"rows": rows})


def _labelled(results: list[Any]) -> list[dict[str, Any]]:
    """The latest finished run's catalog outcomes in catalog order, grouped, each with its name."""
    by_key = {r.test_key: r for r in results}
    groups = []
    for name, keys in (
        ("basic", BASIC_KEYS),
        ("connectivity", tuple(k for k in ALL_KEYS if k not in BASIC_KEYS)),
    ):
        items = [cell(by_key[k].outcome, key=k, short=SHORT[k]) for k in keys if k in by_key]
        if items:
            groups.append({"name": name, "items": items})
    return groups


def cluster_detail(request: HttpRequest, name: str) -> HttpResponse:
    c = get_object_or_404(
        Cluster.objects.select_related("plugin", "owner", "approved_by").only(
            *CLUSTER_FIELDS,
            "plugin__slug",
            "plugin__name",
            "owner__name",
            "approved_by",
            "approved_by__username",
        ),
        name=name,
    )
    runs = list(
        Run.objects.filter(cluster=c)
        .select_related("requested_by")
        .defer("error")
        .order_by("-created")[:WINDOW]
    )
    results = {
        (r.run_id, r.test_key): r
        for r in TestResult.objects.filter(run_id__in=[r.id for r in runs]).only(
            "run_id", "test_key", "outcome", "reason"
        )
    }
    schedules = list(c.schedules.all())
    finished = [r for r in runs if r.state == Run.State.FINISHED]
    fingerprint_run = next((r for r in runs if r.fingerprint), None)
    return render(
        request,
        "clusters/detail.html",
        {
            "cluster": c,
            "runs": runs,
            "grid": grid(runs, results),
            "schedules": schedules,
            "fingerprint_run": fingerprint_run,
            "facts": facts(fingerprint_run.fingerprint) if fingerprint_run else None,
            "freshness": freshness(finished[0].finished if finished else None, schedules),
            "last_finished": finished[0] if finished else None,
            "can_manage": can_manage_cluster(request.user, c),
            "batteries": Battery.choices,
            "window": WINDOW,
            "conflict": trust.periodic_conflict(c) if schedules else None,
            # Our battery's and upstream's e2e.test's outcomes on this cluster (issue 38)
            "side_by_side": side_by_side(
                runs, results, now() - timedelta(days=settings.READINESS_FRESH_DAYS)
            ),
        },
    )


@require_POST
@login_required
def run_now(request: HttpRequest, name: str) -> HttpResponse:
    c = get_object_or_404(Cluster.objects.only(*CLUSTER_FIELDS), name=name)
    if not can_manage_cluster(request.user, c):
        return forbidden(
            request, f"Only the owner of cluster {c.name} or a maintainer may run its battery."
        )
    try:
        run = request_run(
            c,
            request.POST.get("battery") or Battery.ALL,
            trigger=Run.Trigger.MANUAL,
            user=request.user,
        )
    except RunRequestError as exc:
        messages.error(request, exc.message)
        return redirect(c.get_absolute_url())
    if getattr(run, "deduplicated", False):
        messages.info(request, f"Run {run.id} ({run.battery}) is already queued on {c.name}.")
        return redirect(run.get_absolute_url())

    AuditEvent.record(
        request.user.get_username(),
        "run.request",
        f"run {run.id}",
        cluster=c.name,
        battery=run.battery,
    )
    # Tagged so the run page drops it once the run starts (static/js/live.js).
    messages.success(
        request, f"Run {run.id} ({run.battery}) queued on {c.name}.", extra_tags="run-queued"
    )
    return redirect(run.get_absolute_url())


# --- Maintainers' trust decisions (dashboard/domain/trust.py): approval and basic-only -------------------


@require_POST
@maintainer_required
def approve(request: HttpRequest, name: str) -> HttpResponse:
    c = get_object_or_404(
        Cluster.objects.select_related("plugin").only(*CLUSTER_FIELDS, "plugin__slug"), name=name
    )
    try:
        if request.POST.get("action") == "revoke":
            trust.revoke_approval(c, request.user, request.POST.get("reason", ""))
            messages.success(request, f"Approval of {c.name} withdrawn: its runs no longer count.")
        else:
            trust.approve_cluster(c, request.user)
            messages.success(
                request,
                f"Cluster {c.name} approved: its runs count as evidence (unless it is emulated).",
            )
    except trust.TrustError as exc:
        messages.error(request, exc.message)
    return redirect(c.get_absolute_url())


@require_POST
@maintainer_required
def basic_only(request: HttpRequest, name: str) -> HttpResponse:
    c = get_object_or_404(Cluster.objects.only(*CLUSTER_FIELDS), name=name)
    value = request.POST.get("basic_only") == "true"
    trust.set_basic_only(c, value, request.user)
    messages.success(
        request,
        f"Cluster {c.name} is basic-only: connectivity runs are refused."
        if value
        else f"Cluster {c.name} accepts connectivity runs again.",
    )
    return redirect(c.get_absolute_url())


@require_POST
@maintainer_required
def mode(request: HttpRequest, name: str) -> HttpResponse:
    """A maintainer changes how the cluster is tested (trust.set_mode: audited, with a reason)."""
    c = get_object_or_404(Cluster.objects.only(*CLUSTER_FIELDS), name=name)
    try:
        trust.set_mode(
            c, request.POST.get("mode", ""), request.user, request.POST.get("reason", "")
        )
        messages.success(request, f"Cluster {c.name}: {c.get_mode_display()}; approve it again.")
    except trust.TrustError as exc:
        messages.error(request, exc.message)
    return redirect(c.get_absolute_url())


@require_POST
@maintainer_required
def agent_key_reset(request: HttpRequest, name: str) -> HttpResponse:
    c = get_object_or_404(Cluster.objects.only(*CLUSTER_FIELDS), name=name)
    trust.reset_agent_key(c, request.user, request.POST.get("reason", ""))
    messages.success(
        request,
        f"The agent key of {c.name} is forgotten: the next agent to post registers its own.",
    )
    return redirect(c.get_absolute_url())
