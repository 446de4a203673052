"""Submissions: the list with filters, one submission's validation report, upload, verify/reject."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from dashboard.domain import readiness
from dashboard.domain.catalog import ALL_KEYS, CATALOG, Proxier
from dashboard.domain.ingest import provenance
from dashboard.domain.models import Plugin, Submission, Vendor
from dashboard.domain.policy import submission_qualifying
from dashboard.domain.roles import is_maintainer, vendor_ids
from dashboard.domain.submission_state import (
    never_counts,
    proxier_declared_only,
    short_reason,
    state_of,
)
from dashboard.domain.submissions import SubmissionError, create_submission, review
from dashboard.web.views.access import (
    forbidden,
    login_required,
    maintainer_required,
    vendor_required,
)
from dashboard.web.views.outcomes import cell

PAGE_SIZE = 50
TITLES = {t["key"]: t["title"] for t in CATALOG}


def submission_list(request: HttpRequest) -> HttpResponse:
    qs = (
        Submission.objects.without_content()
        .select_related("plugin", "vendor")
        .defer("results", "report", "warnings")
    )
    plugin, status = request.GET.get("plugin", ""), request.GET.get("status", "")
    if plugin:
        qs = qs.filter(plugin__slug=plugin)
    if status in Submission.Status.values:
        qs = qs.filter(status=status)
    mine = request.GET.get("mine") == "1" and request.user.is_authenticated
    if mine:
        qs = qs.filter(vendor_id__in=vendor_ids(request.user))
    page = Paginator(qs.order_by("-created"), PAGE_SIZE).get_page(request.GET.get("page"))
    own = vendor_ids(request.user)
    return render(
        request,
        "submissions/list.html",
        {
            "page": page,
            "rows": [(s, s.vendor_id in own) for s in page.object_list],
            "plugins": Plugin.objects.order_by("name").values_list("slug", "name"),
            "statuses": Submission.Status.choices,
            "plugin": plugin,
            "status": status,
            "mine": mine,
            "is_vendor": bool(own),
        },
    )


def _report_rows(sub: Submission) -> list[dict[str, Any]]:
    rows = []
    for key in ALL_KEYS:
        res = (sub.results or {}).get(key) or {}
        outcome = res.get("outcome", "not_run")
        rows.append(
            {
                "key": key,
                "title": TITLES[key],
                **cell(outcome),
                "reasons": res.get("reasons", []),
                "upstream_names": res.get("upstream_names", []),
                "missing": outcome == "not_run",
            }
        )
    return rows


def submission_detail(request: HttpRequest, sub_id: int) -> HttpResponse:
    sub = get_object_or_404(
        Submission.objects.without_content().select_related("plugin", "vendor", "reviewed_by"),
        pk=sub_id,
    )
    report = sub.report or {}
    # The evidence policy's one answer, as the API and the criteria give it (the stored flag
    # is only the criteria's prefilter, wider for plugins without NetworkPolicy).
    ok, reason = submission_qualifying(sub)
    qualifying = {"qualifying": ok, "reason": reason}
    return render(
        request,
        "submissions/detail.html",
        {
            "sub": sub,
            "state": state_of(sub),
            "rows": _report_rows(sub),
            "report": report,
            "qualifying": qualifying,
            "can_review": is_maintainer(request.user),
            "is_own": sub.vendor_id in vendor_ids(request.user),
            "can_download": is_maintainer(request.user)
            or sub.vendor_id in vendor_ids(request.user),
            "version_mismatch": bool(sub.detected_kubernetes_version)
            and sub.detected_kubernetes_version.lstrip("v") != sub.kubernetes_version.lstrip("v"),
            "facts": _provenance_rows(sub, report),
            "near_duplicates": _near_duplicates(sub),
            "needs_run_date": sub.run_at is None,
            "never_counts": never_counts(sub) if sub.status == "pending_review" else "",
            "proxier_declared_only": proxier_declared_only(sub),
        },
    )


_FACTS = (
    ("release", "Kubernetes release"),
    ("run_at", "e2e run time"),
    ("plugin", "network plugin"),
    ("proxier", "kube-proxy mode"),
    ("dry_run", "dry run?"),
)


def _provenance_rows(sub: Submission, report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each fact with where it came from ("from serverversion.json", "declared, not in the
    file"…), for the maintainer to see before verifying (issue 21)."""
    prov = report.get("provenance") or {}
    rows = []
    for key, label in _FACTS:
        fact = prov.get(key) or {}
        value, source = fact.get("value"), fact.get("source") or "not recorded (an older report)"
        if key == "run_at" and sub.run_at_source == "maintainer" and sub.run_at:
            value, source = sub.run_at.isoformat(), "entered by a maintainer when verifying"
        rows.append({"key": key, "label": label, "value": value, "source": source})
    if prov.get("focus") or prov.get("skip"):
        rows.append(
            {
                "key": "scope",
                "label": "the run's focus / skip",
                "value": f"{prov.get('focus') or '—'} / {prov.get('skip') or '—'}",
                "source": "from the file",
            }
        )
    return rows


def _near_duplicates(sub: Submission) -> list[Submission]:
    """Other submissions of the same run with other outcomes (same start, nodes, testcases)."""
    if not sub.near_id:
        return []
    return list(
        Submission.objects.without_content()
        .filter(near_id=sub.near_id)
        .exclude(pk=sub.pk)
        .select_related("plugin", "vendor")
        .order_by("pk")[:20]
    )


@login_required
def submission_download(request: HttpRequest, sub_id: int) -> HttpResponse:
    """Maintainers download any file; a vendor's members download their own uploads."""
    owner = get_object_or_404(Submission.objects.only("id", "vendor_id"), pk=sub_id).vendor_id
    if not (is_maintainer(request.user) or owner in vendor_ids(request.user)):
        return forbidden(
            request,
            "Only maintainers and the vendor that uploaded it may download a submission's file.",
        )
    sub = get_object_or_404(Submission.objects.only("id", "content", "filename", "kind"), pk=sub_id)
    response = HttpResponse(bytes(sub.content), content_type="application/octet-stream")
    name = (sub.filename or f"submission-{sub.id}").replace('"', "")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_POST
@maintainer_required
def submission_review(request: HttpRequest, sub_id: int) -> HttpResponse:
    sub = get_object_or_404(
        Submission.objects.without_content().select_related("plugin"), pk=sub_id
    )
    action = request.POST.get("action")
    if action not in ("verify", "reject"):
        messages.error(request, "Choose verify or reject.")
        return redirect(sub.get_absolute_url())
    before = readiness.evaluate()
    try:
        review(
            sub,
            user=request.user,
            verify=action == "verify",
            reason=request.POST.get("reason", ""),
            run_date=request.POST.get("run_date", "") if action == "verify" else "",
            before=before,
        )
    except SubmissionError as exc:
        messages.error(request, exc.message)
        return redirect(sub.get_absolute_url())
    # Tell the maintainer what the decision did to the readiness page.
    # Compared evaluation to evaluation, not status to status: "tests-written: 8 → 2 missing;
    # ipvs: now demonstrated" while every status stays (issue 39).
    changed = sub.review_effect or []
    effect = "; ".join(changed) if changed else f"no change: {short_reason(sub)}"
    declared_only = proxier_declared_only(sub) if action == "verify" else ""
    note = f" {declared_only}." if declared_only else ""
    messages.success(
        request, f"Submission {sub.id} {sub.get_status_display()}. Readiness: {effect}.{note}"
    )
    return redirect(
        "/review/" if request.POST.get("next") == "/review/" else sub.get_absolute_url()
    )


@vendor_required
def submission_new(request: HttpRequest) -> HttpResponse:
    own = vendor_ids(request.user)
    plugins = list(Plugin.objects.filter(vendors__in=own).distinct().order_by("name"))
    values = {
        k: request.POST.get(k, "")
        for k in ("plugin", "plugin_version", "kubernetes_version", "proxier", "cluster")
    }
    status, error, field = 200, "", ""
    refusal: dict[str, Any] | None = None
    if request.method == "POST":
        upload = request.FILES.get("file")
        vendor = Vendor.objects.filter(id__in=own, plugins__slug=values["plugin"]).first()
        try:
            if vendor is None:
                allowed = Plugin.objects.filter(slug=values["plugin"]).exists()
                raise SubmissionError(
                    403 if allowed else 400,
                    f"you may not submit results for plugin {values['plugin']!r}"
                    if allowed
                    else f"unknown plugin: {values['plugin']!r}",
                )
            sub = create_submission(
                vendor=vendor,
                allowed_plugin_ids={p.id for p in plugins},
                plugin=values["plugin"],
                plugin_version=values["plugin_version"],
                kubernetes_version=values["kubernetes_version"],
                proxier=values["proxier"],
                cluster=values["cluster"],
                fileobj=upload,
                filename=(upload.name or "") if upload else "",
                uploaded_by=request.user.get_username(),
            )
        except SubmissionError as exc:
            status, error, field = exc.status, exc.message, refused_field(exc)
            refusal = _no_sctp_refusal(exc)
            if refusal:
                error = refusal["summary"]
            existing = exc.extra.get("existing_id")
            if existing:
                url = reverse("submission", args=[existing])
                error = format_html(
                    '{} — <a href="{}">open submission {}</a>', exc.message, url, existing
                )
        else:
            never = never_counts(sub)
            if never:
                # Marked at upload, as in the review queue and the API (issue 39).
                messages.warning(
                    request,
                    f"Submission {sub.id} received, but it can never count: {never}. "
                    "A maintainer's verification would change nothing.",
                )
            else:
                messages.success(
                    request, f"Submission {sub.id} received; it waits for a maintainer's review."
                )
            return redirect(sub.get_absolute_url())
    elif not values["plugin"] and len(plugins) == 1:
        values["plugin"] = plugins[0].slug
    return render(
        request,
        "submissions/new.html",
        {
            "plugins": plugins,
            "values": values,
            "error": error,
            "field": field,
            "values_kept": bool(error),
            "refusal": refusal,
            # Before any upload: what to run so the file counts (issue 39's walk).
            "produce": command_blocks(provenance.commands(None)["steps"], "produce"),
            "proxiers": Proxier.values,
            "max_bytes": int(settings.SUBMISSION_MAX_BYTES),
        },
        status=status,
    )


def _no_sctp_refusal(exc: SubmissionError) -> dict[str, Any] | None:
    """A readable file with no SCTP verdict (issue 39): its one line, the SCTP tests found with
    their states, the run's focus and skip, and the commands that produce a file that counts."""
    extra = exc.extra
    if exc.status != 422 or "sctp_testcases" not in extra:
        return None
    steps = extra.get("steps") or {}
    return {
        "summary": extra.get("summary") or exc.message,
        "detail": exc.message,
        "tests": [
            {**t, "title": TITLES.get(t.get("catalog_test") or "", "")}
            for t in extra.get("sctp_testcases") or []
        ],
        "absent": extra.get("absent") or [],
        "focus": extra.get("focus"),
        "skip": extra.get("skip"),
        "conformance_only": bool(extra.get("conformance_only")),
        "commands": command_blocks(
            {
                "sonobuoy": steps.get("sonobuoy") or [extra["commands"]["sonobuoy"]],
                "hydrophone": steps.get("hydrophone") or [extra["commands"]["hydrophone"]],
            },
            "cmd",
        ),
    }


def command_blocks(steps: dict[str, list[str]], prefix: str) -> list[dict[str, str]]:
    """Sonobuoy's and Hydrophone's command lines as the copyable blocks the pages show."""
    return [
        {"tool": tool, "id": f"{prefix}-{tool}", "text": "\n".join(steps[tool])}
        for tool in ("sonobuoy", "hydrophone")
    ]


_FIELD_WORDS = (
    ("plugin_version", "plugin_version"),
    ("kubernetes", "kubernetes_version"),
    ("release", "kubernetes_version"),
    ("proxier", "proxier"),
    ("cluster", "cluster"),
    ("plugin", "plugin"),
)


def refused_field(exc: SubmissionError) -> str:
    """The form field a refusal is about (marked aria-invalid and focused): the one a "missing
    field" names, else the first the message speaks of, else the file (what most refusals of an
    upload are about: unreadable, too large, no SCTP test, a dry run)."""
    message = exc.message.lower()
    if message.startswith("missing field: "):
        return message.removeprefix("missing field: ").strip()
    if exc.status in (409, 413, 422) and "declared" not in message:
        return "file"
    for word, name in _FIELD_WORDS:
        if word in message:
            return name
    return "file"
