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

from dashboard.catalog import Battery
from dashboard.models import Cluster, Run, TestResult
from dashboard.roles import can_manage_cluster
from dashboard.runs import RunRequestError, request_run

from .access import forbidden, login_required
from .history import WINDOW, grid
from .outcomes import cell

# Never load the secret, even into memory, on pages.
CLUSTER_FIELDS = ("id", "name", "owner", "plugin", "plugin_version", "kubernetes_version", "proxier",
                  "node_access", "load_balancer", "kubenet", "lab", "enabled", "credentials_error", "created")


def freshness(last_finished: Any, schedules: list[Any]) -> dict[str, str]:
    """healthchecks.io's idea: up while on time, late after the interval and grace, stale after twice."""
    if last_finished is None:
        return {"state": "never", "label": "never ran"}
    age = now() - last_finished
    enabled = [s for s in schedules if s.enabled]
    if enabled:
        s = min(enabled, key=lambda s: s.interval_minutes)
        if age > 2 * s.interval:
            return {"state": "stale", "label": f"stale: no finished run for over twice the {s.interval_minutes}-minute interval"}
        if age > s.interval + timedelta(minutes=s.grace_minutes):
            return {"state": "late", "label": "late: the periodic run is overdue"}
        return {"state": "fresh", "label": "on schedule"}
    if age > timedelta(days=settings.READINESS_FRESH_DAYS):
        return {"state": "stale", "label": f"stale: older than {settings.READINESS_FRESH_DAYS} days"}
    return {"state": "fresh", "label": "fresh (no periodic schedule)"}


def cluster_list(request: HttpRequest) -> HttpResponse:
    newest = Run.objects.filter(cluster=OuterRef("pk")).order_by("-created")
    clusters = list(
        Cluster.objects.select_related("plugin", "owner").only(*CLUSTER_FIELDS, "plugin__slug", "plugin__name",
                                                               "owner__name")
        .annotate(last_run_id=Subquery(newest.values("id")[:1]),
                  last_finished_id=Subquery(newest.filter(state=Run.State.FINISHED).values("id")[:1]))
        .prefetch_related("schedules")
    )
    run_ids = {i for c in clusters for i in (c.last_run_id, c.last_finished_id) if i}
    runs = Run.objects.defer("fingerprint", "error").in_bulk(run_ids) if run_ids else {}
    results: dict[int, list[Any]] = {}
    if run_ids:
        for r in TestResult.objects.filter(run_id__in=[c.last_finished_id for c in clusters if c.last_finished_id]
                                           ).only("run_id", "test_key", "outcome").order_by("id"):
            results.setdefault(r.run_id, []).append(r)
    rows = []
    for c in clusters:
        last, done = runs.get(c.last_run_id), runs.get(c.last_finished_id)
        rows.append({
            "cluster": c, "last": last, "finished": done,
            "outcomes": [cell(r.outcome, key=r.test_key) for r in results.get(c.last_finished_id, [])],
            "freshness": freshness(done.finished if done else None, list(c.schedules.all())),
            "can_manage": can_manage_cluster(request.user, c),
        })
    return render(request, "clusters/list.html", {"rows": rows})


def cluster_detail(request: HttpRequest, name: str) -> HttpResponse:
    c = get_object_or_404(Cluster.objects.select_related("plugin", "owner")
                          .only(*CLUSTER_FIELDS, "plugin__slug", "plugin__name", "owner__name"), name=name)
    runs = list(Run.objects.filter(cluster=c).select_related("requested_by").defer("error")
                .order_by("-created")[:WINDOW])
    results = {
        (r.run_id, r.test_key): r
        for r in TestResult.objects.filter(run_id__in=[r.id for r in runs]).only(
            "run_id", "test_key", "outcome", "reason")
    }
    schedules = list(c.schedules.all())
    finished = [r for r in runs if r.state == Run.State.FINISHED]
    fingerprint_run = next((r for r in runs if r.fingerprint), None)
    return render(request, "clusters/detail.html", {
        "cluster": c, "runs": runs, "grid": grid(runs, results), "schedules": schedules,
        "fingerprint_run": fingerprint_run,
        "fingerprint": sorted((fingerprint_run.fingerprint or {}).items()) if fingerprint_run else [],
        "freshness": freshness(finished[0].finished if finished else None, schedules),
        "last_finished": finished[0] if finished else None,
        "can_manage": can_manage_cluster(request.user, c), "batteries": Battery.choices,
        "window": WINDOW,
    })


@require_POST
@login_required
def run_now(request: HttpRequest, name: str) -> HttpResponse:
    c = get_object_or_404(Cluster.objects.only(*CLUSTER_FIELDS), name=name)
    if not can_manage_cluster(request.user, c):
        return forbidden(request, f"Only the owner of cluster {c.name} or a maintainer may run its battery.")
    try:
        run = request_run(c, request.POST.get("battery") or Battery.ALL, trigger=Run.Trigger.MANUAL,
                          user=request.user)
    except RunRequestError as exc:
        messages.error(request, exc.message)
        return redirect(c.get_absolute_url())
    if getattr(run, "deduplicated", False):
        messages.info(request, f"Run {run.id} ({run.battery}) is already queued on {c.name}.")
        return redirect(run.get_absolute_url())
    from dashboard.models import AuditEvent

    AuditEvent.record(request.user.get_username(), "run.request", f"run {run.id}", cluster=c.name,
                      battery=run.battery)
    messages.success(request, f"Run {run.id} ({run.battery}) queued on {c.name}.")
    return redirect(run.get_absolute_url())
