"""Review (/review/): pending submissions, sign-off of a transition, the audit log, the KEP report."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from dashboard.domain import readiness, trust
from dashboard.domain.catalog import TRANSITIONS
from dashboard.domain.history import statuses_of
from dashboard.domain.kep_report import markdown_report
from dashboard.domain.lookups import JSONKey
from dashboard.domain.models import AuditEvent, ReadinessSnapshot, SignOff, Submission
from dashboard.domain.signoffs import override_reason, unmet_criteria
from dashboard.domain.submission_state import never_counts
from dashboard.web.views import charts
from dashboard.web.views.access import AuthenticatedRequest, maintainer_required
from dashboard.web.views.md import to_html

AUDIT_SHOWN = 10  # the newest; /audit/ has the whole trail
RELEASE = re.compile(r"^1\.\d{1,3}$")
PENDING_SHOWN = 50


def next_transition(stage: str) -> dict[str, Any] | None:
    return next((t for t in TRANSITIONS if t["from"] == stage), None)


def _track(evaluation: dict[str, Any]) -> str:
    """Where this deployment's own sign-offs stand (readiness.signoff_track_stage, read from the
    evaluation): alpha until it signs anything off."""
    if evaluation.get("stage_source") == "kep":
        return "alpha"
    return str(evaluation["stage"])


@maintainer_required
def review_page(request: HttpRequest) -> HttpResponse:
    evaluation = readiness.evaluate()
    # This deployment's own sign-off track (alpha until it signs anything off), not the KEP's
    # history that the stage shown falls back to (issue 39).
    nxt = next_transition(_track(evaluation))
    transition = next(
        (t for t in evaluation["transitions"] if nxt and t["from"] == nxt["from"]), None
    )
    awaiting = trust.awaiting_approval().only(
        "name", "proxier", "mode", "created", "plugin__slug", "plugin__name", "owner__name"
    )
    waiting = list(awaiting[:PENDING_SHOWN])
    pending = list(
        Submission.objects.without_content()
        .filter(status=Submission.Status.PENDING)
        .select_related("plugin", "vendor")
        .defer("results", "report", "warnings")
        # issue 39: a proxier the file does not show is only declared; flagged before verifying
        .annotate(proxier_shown=JSONKey("report", "proxier_detected"))
        .order_by("created")[:PENDING_SHOWN]
    )
    moment = timezone.now()
    for sub in pending:  # issue 39: a file that can never count says so before it is verified
        sub.never_counts = never_counts(sub, moment)  # type: ignore[attr-defined]
    return render(
        request,
        "review/review.html",
        {
            "readiness": evaluation,
            "transition": transition,
            "pending": pending,
            "pending_total": Submission.objects.filter(status=Submission.Status.PENDING).count(),
            # Issue 39: clusters whose runs will count once a maintainer approves them.
            "awaiting": waiting,
            "awaiting_total": len(waiting) if len(waiting) < PENDING_SHOWN else awaiting.count(),
            "signoffs": list(SignOff.objects.select_related("maintainer").defer("snapshot")[:20]),
            "audit": list(AuditEvent.objects.order_by("-id")[:AUDIT_SHOWN]),
            "history_svg": _criterion_history(evaluation),
            "audit_total": AuditEvent.objects.count(),
        },
    )


def _criterion_history(evaluation: dict[str, Any]) -> Any:
    """Each criterion's status by day (the stored snapshots, today's evaluation last)."""
    first = timezone.now() - timedelta(days=charts.DAYS)
    before = (
        ReadinessSnapshot.objects.filter(created__lt=first)
        .order_by("-created")
        .values_list("created", "statuses")
        .first()
    )
    rows = list(
        ReadinessSnapshot.objects.filter(created__gte=first)
        .order_by("created")
        .values_list("created", "statuses")
    )
    snapshots = ([before] if before else []) + rows
    snapshots.append((timezone.now(), statuses_of(evaluation)))
    return charts.criterion_history_svg(charts.criterion_days(snapshots))


@require_POST
@maintainer_required
def sign_off(request: AuthenticatedRequest) -> HttpResponse:
    comment = request.POST.get("comment", "").strip()
    from_stage, to_stage = request.POST.get("from_stage", ""), request.POST.get("to_stage", "")
    evaluation = readiness.evaluate()
    track = _track(evaluation)
    nxt = next_transition(track)
    if nxt is None or (from_stage, to_stage) != (nxt["from"], nxt["to"]):
        messages.error(
            request,
            f"This dashboard's sign-offs stand at {track}: only "
            + (f"{nxt['from']} → {nxt['to']}" if nxt else "no further transition")
            + " can be signed off.",
        )
        return redirect("/review/")
    if not comment:
        messages.error(request, "A sign-off needs a comment: say why the evidence is enough.")
        return redirect("/review/")
    release = request.POST.get("kubernetes_release", "").strip().lstrip("v")
    if not RELEASE.match(release):
        messages.error(
            request,
            "A sign-off names the Kubernetes release the stage ships in, as 1.N (SCTP: "
            "alpha 1.12, beta 1.19, GA 1.20).",
        )
        return redirect("/review/")
    transition = next(t for t in evaluation["transitions"] if t["from"] == from_stage)
    ready = transition["ready"]
    unmet = [c for c in transition["criteria"] if c["status"] != "met"]
    override: dict[str, Any] | None = None
    if not ready:
        # An override gets its own step: each unmet criterion named, and a reason required.
        reason = request.POST.get("override_reason", "").strip()
        if request.POST.get("override") != "confirmed" or not reason:
            return render(
                request,
                "review/confirm_override.html",
                {
                    "from_stage": from_stage,
                    "to_stage": to_stage,
                    "unmet": unmet,
                    "comment": comment,
                    "kubernetes_release": release,
                    "error": "Say why the unmet criteria do not stop the graduation."
                    if request.POST.get("override") == "confirmed"
                    else "",
                },
                status=400 if request.POST.get("override") == "confirmed" else 200,
            )
        override = {"unmet": [c["key"] for c in unmet], "reason": reason}
    with transaction.atomic():
        signoff = SignOff.objects.create(
            from_stage=from_stage,
            to_stage=to_stage,
            maintainer=request.user,
            comment=comment,
            snapshot={**evaluation, **({"override": override} if override else {})},
            kubernetes_release=release,
        )
        entry = AuditEvent.record(
            request.user.get_username(),
            "signoff",
            f"{from_stage} → {to_stage}",
            signoff=str(signoff.uuid),
            comment=comment,
            criteria_met=ready,
            kubernetes_release=release,
            **(
                {"unmet_criteria": override["unmet"], "override_reason": override["reason"]}
                if override
                else {}
            ),
        )
        # The chain's head with this sign-off in it: quoted wherever the sign-off is shown.
        SignOff.objects.filter(pk=signoff.pk).update(audit_seq=entry.seq, audit_head=entry.hash)
    messages.success(
        request,
        f"Signed off {from_stage} → {to_stage} in Kubernetes {release}"
        + (f" over unmet criteria: {', '.join(override['unmet'])}" if override else "")
        + ". The verdicts and evidence are frozen in the sign-off; the readiness page shows it now.",
    )
    return redirect(f"/review/signoffs/{signoff.uuid}/")


@maintainer_required
def signoff_detail(request: HttpRequest, uuid: str) -> HttpResponse:
    signoff = get_object_or_404(SignOff.objects.select_related("maintainer"), uuid=uuid)
    return render(
        request,
        "review/signoff.html",
        {
            "signoff": signoff,
            "snapshot": signoff.snapshot,
            "unmet": unmet_criteria(signoff.snapshot, signoff.from_stage),
            "override_reason": override_reason(signoff.snapshot),
        },
    )


@maintainer_required
def report_page(request: HttpRequest) -> HttpResponse:
    """/review/report/: the KEP report as a page (the Markdown rendered), with a copy button for
    the Markdown itself and a download of the .md."""
    body = markdown_report(
        readiness.evaluate(), base_url=request.build_absolute_uri("/").rstrip("/")
    )
    return render(
        request, "review/report.html", {"markdown": body, "html": mark_safe(to_html(body))}
    )


@maintainer_required
def report_md(request: HttpRequest) -> HttpResponse:
    body = markdown_report(
        readiness.evaluate(), base_url=request.build_absolute_uri("/").rstrip("/")
    )
    response = HttpResponse(body, content_type="text/markdown; charset=utf-8")
    if request.GET.get("download") == "1":
        response["Content-Disposition"] = 'attachment; filename="kep-614-sctp-readiness.md"'
    return response
