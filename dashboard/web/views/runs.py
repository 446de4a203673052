"""One run (/runs/<id>/): live progress while it runs, then outcomes, reasons, evidence, timings.

The progress block is a partial (/runs/<id>/progress/) that a few lines of JavaScript fetch
every second while the run is queued or running; without JavaScript the page refreshes itself.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.timezone import now
from django.views.decorators.http import require_POST

from dashboard.domain import trust
from dashboard.domain.catalog import CATALOG, Battery, keys_of
from dashboard.domain.ingest.export import run_to_junit
from dashboard.domain.models import Run
from dashboard.domain.submission_state import run_result, run_state
from dashboard.web.api import serializers
from dashboard.web.views.access import maintainer_required
from dashboard.web.views.fingerprint import facts
from dashboard.web.views.outcomes import cell

ACTIVE = (Run.State.QUEUED, Run.State.RUNNING)
LOG_TAIL_LINES = 40
# Catalog tests with no upstream spec say so beside their outcome (never shown as upstream's).
UPSTREAM_NOTES = {e["key"]: e["upstream_note"] for e in CATALOG if e.get("upstream_note")}


def _context(run_id: int) -> dict[str, Any]:
    run = get_object_or_404(
        Run.objects.select_related("cluster", "plugin", "requested_by"), pk=run_id
    )
    data = serializers.run(run, list(run.results.all()))
    tests = []
    for key, res in data["results"].items():
        outcome = res["outcome"]
        if outcome == "not_run" and run.state in ACTIVE:
            # Not run *yet*: the page says "waiting" rather than a verdict it does not have.
            outcome = "queued"
        tests.append(
            {"key": key, **res, **cell(outcome), "upstream_note": UPSTREAM_NOTES.get(key, "")}
        )
    done = sum(1 for t in tests if t["outcome"] not in ("queued", "running"))
    outcomes = {t["key"]: t["outcome"] for t in tests if t["outcome"] != "queued"}
    result, result_why = run_result(run.state, outcomes, run.error)
    active_test = None
    upstream = _upstream(run) if run.battery == Battery.UPSTREAM else None
    if run.state == Run.State.RUNNING and upstream is None:
        # Tests run one after the other in this order: the first without an outcome is running,
        # since the previous one finished (or the run started).
        waiting = next((t for t in tests if t["outcome"] == "queued"), None)
        if waiting is not None:
            since = max(
                [r.finished for r in run.results.all() if r.finished] + [run.started or now()]
            )
            waiting["outcome"] = "running"
            waiting.update(cell("running"))
            active_test = {
                "key": waiting["key"],
                "since": since,
                "seconds": (now() - since).total_seconds(),
            }
    conformance = [
        {"key": key, **res, **cell(res["outcome"])} for key, res in data["conformance"].items()
    ]
    return {
        "run": run,
        "data": data,
        "tests": tests,
        "no_upstream_spec": [k for k in keys_of(run.battery) if k not in data["results"]]
        if run.battery == Battery.UPSTREAM
        else [],
        "conformance": conformance,
        "active": run.state in ACTIVE,
        "done": done,
        "total": len(tests),
        "facts": facts(run.fingerprint) if run.fingerprint else None,
        "result": result,
        "result_why": result_why,
        "active_test": active_test,
        "upstream": upstream,
        "state": run_state(run, outcomes, {t["key"]: t.get("reason") or "" for t in tests})
        if run.state not in ACTIVE
        else None,
    }


def _upstream(run: Run) -> dict[str, Any]:
    """The upstream battery's section: each spec with its outcome and message, the progress read
    from e2e.test's output as it streams, and the end of that output."""
    state = run.upstream or {}
    progress = state.get("progress") or {}
    done, total, running = progress.get("done") or 0, progress.get("total"), progress.get("running")
    if run.state in ACTIVE:
        counted = f"{done} of {total} done" if total is not None else f"{done} done"
        text = f"running: {running}; {counted}" if running else counted
        if not state.get("binary"):
            text = "starting e2e.test" if run.state == Run.State.RUNNING else "waiting for a worker"
        lines = list(state.get("log_tail") or [])
    else:
        text = f"{done} of {total} specs ran" if total is not None else ""
        lines = [line for line in run.upstream_log.splitlines() if line.strip()][-LOG_TAIL_LINES:]
    specs = [
        {**spec, **cell(spec.get("outcome") or "not_run")} for spec in state.get("specs") or []
    ]
    return {
        "binary": state.get("binary") or "",
        "focus": state.get("focus") or "",
        "progress": text,
        "running": running or "",
        "specs": specs,
        "log_tail": "\n".join(lines[-LOG_TAIL_LINES:]),
        "warnings": state.get("warnings") or [],
        "left_out": [
            item
            for item in state.get("left_out") or []
            if isinstance(item, dict) and item.get("feature")
        ],
        "skip": state.get("skip") or "",
        "surveyed": "left_out" in state,
        "left_out_errors": state.get("left_out_errors") or [],
        "has_junit": Run.objects.filter(pk=run.pk, upstream_junit__isnull=False).exists(),
    }


def run_junit(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run as an e2e-style JUnit file (anyone), as vendors submit theirs; for an upstream
    run, upstream's own file as e2e.test wrote it (404 while it has none)."""

    run = get_object_or_404(Run.objects.select_related("cluster", "plugin"), pk=run_id)
    if run.battery == Battery.UPSTREAM:
        raw = Run.objects.filter(pk=run.pk).values_list("upstream_junit", flat=True).first()
        if raw is None:
            raise Http404(f"run {run.pk} has no JUnit file from upstream's e2e.test")
        response = HttpResponse(bytes(raw), content_type="application/xml")
        response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-e2e-junit_01.xml"'
        response["X-Content-Type-Options"] = "nosniff"
        return response
    if run.state != Run.State.FINISHED:
        return HttpResponse(
            f"run {run.pk} is {run.state}: only a finished run has results to export\n",
            status=409,
            content_type="text/plain; charset=utf-8",
        )
    response = HttpResponse(run_to_junit(run), content_type="application/xml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-junit_01.xml"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    return render(request, "runs/detail.html", _context(run_id))


def run_progress(request: HttpRequest, run_id: int) -> HttpResponse:
    response = render(request, "runs/_progress.html", _context(run_id))
    response["Cache-Control"] = "no-store"
    return response


@require_POST
@maintainer_required
def run_verify(request: HttpRequest, run_id: int) -> HttpResponse:
    """A maintainer verifies a self-reported run, or withdraws that (audited; dashboard.domain.trust)."""
    run = get_object_or_404(Run.objects.select_related("cluster"), pk=run_id)
    try:
        if request.POST.get("action") == "withdraw":
            trust.unverify_agent_run(run, request.user, request.POST.get("reason", ""))
            messages.success(request, f"Run {run.pk} is no longer verified: it does not count.")
        else:
            trust.verify_agent_run(run, request.user, request.POST.get("reason", ""))
            messages.success(request, f"Run {run.pk} verified: it may count as evidence.")
    except trust.TrustError as exc:
        messages.error(request, exc.message)
    return redirect(run.get_absolute_url())
