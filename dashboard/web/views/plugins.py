"""A plugin's page (/plugins/<slug>/) and its embeddable badge (/badge/<slug>.svg)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.db.models import Count, OuterRef, Subquery
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.timezone import now
from django.views.decorators.http import require_GET, require_POST

from dashboard.domain import badges, publication, trust
from dashboard.domain.agreement import side_by_side
from dashboard.domain.catalog import CONNECTIVITY_KEYS, Battery
from dashboard.domain.models import Cluster, Plugin, Run, Submission, TestResult
from dashboard.domain.policy import BADGE, Policy, evidence_entry
from dashboard.domain.readiness.criteria.two_out_of_tree_plugins import conclusive
from dashboard.domain.readiness.evidence_lookup import connectivity_candidates, plugins_by_id
from dashboard.domain.signoffs import current_override, override_text
from dashboard.web.views import charts
from dashboard.web.views.access import maintainer_required
from dashboard.web.views.clusters import CLUSTER_FIELDS
from kernel.vocabulary import PROXIERS

SUBMISSIONS_SHOWN = 25
BADGE_MAX_AGE = 300  # seconds: README renderers (camo) re-fetch often enough to stay current


def plugin_detail(request: HttpRequest, slug: str) -> HttpResponse:
    plugin = get_object_or_404(Plugin.objects.select_related("netpol_exempted_by"), slug=slug)
    newest = Run.objects.filter(cluster=OuterRef("pk")).order_by("-created")
    finished = newest.filter(state=Run.State.FINISHED)
    clusters = list(
        Cluster.objects.filter(plugin=plugin)
        .select_related("owner")
        .only(*CLUSTER_FIELDS, "owner__name")
        .annotate(
            last_run_id=Subquery(newest.values("id")[:1]),
            # Each battery's newest finished run, for the side by side (issue 38).
            ours_run_id=Subquery(finished.exclude(battery=Battery.UPSTREAM).values("id")[:1]),
            upstream_run_id=Subquery(finished.filter(battery=Battery.UPSTREAM).values("id")[:1]),
        )
    )
    runs = Run.objects.defer("fingerprint", "error").in_bulk(
        [i for c in clusters for i in (c.last_run_id, c.ours_run_id, c.upstream_run_id) if i]
    )
    submissions = list(
        Submission.objects.without_content()
        .filter(plugin=plugin)
        .select_related("plugin", "vendor")
        .defer("results", "report", "warnings")
        .order_by("-created")[:SUBMISSIONS_SHOWN]
    )
    items = connectivity_candidates(plugins_by_id(), plugin_id=plugin.pk)  # newest first
    status = badges.plugin_status(plugin, candidates=items)
    # The most telling evidence first (a verdict on a qualifying test), the newest attempt beside
    # it: an all-skipped legacy run must not hide a real result.
    pol = Policy(now=now())
    telling = next((i for i in items if conclusive(i)), None)
    newest_conclusive = evidence_entry(telling, pol.assess(telling, BADGE)) if telling else None
    attempt = evidence_entry(items[0], pol.assess(items[0], BADGE)) if items else None
    rates = pass_rates(plugin)
    badge_url = request.build_absolute_uri(f"/badge/{plugin.slug}.svg")
    page_url = request.build_absolute_uri(f"/plugins/{plugin.slug}/")
    return render(
        request,
        "plugins/detail.html",
        {
            "plugin": plugin,
            "clusters": [(c, runs.get(c.last_run_id)) for c in clusters],
            "batteries": batteries_side_by_side(clusters, runs),
            "submissions": [(s, False) for s in submissions],
            "status": status,
            "conclusive": newest_conclusive,
            "pass_rate_svg": charts.pass_rate_svg(rates) if rates else None,
            "pass_rates": rates,
            "attempt": attempt if attempt and attempt != newest_conclusive else None,
            "badge_url": badge_url,
            "badge_markdown": f"[![SCTP]({badge_url})]({page_url})",
            "vendors": list(plugin.vendors.values_list("name", flat=True)),
        },
    )


def batteries_side_by_side(clusters: Sequence[Any], runs: dict[int, Run]) -> list[dict[str, Any]]:
    """Per cluster of the plugin with both batteries' newest runs on one release in the
    evidence window, both outcomes per catalog test (agreement.side_by_side, as on the
    cluster page), disagreements first. One query for all of them, none when no cluster has
    both."""
    since = now() - timedelta(days=int(settings.READINESS_FRESH_DAYS))
    pairs = []
    for c in clusters:
        ours, theirs = runs.get(c.ours_run_id), runs.get(c.upstream_run_id)
        if ours is None or theirs is None or ours.kubernetes_version != theirs.kubernetes_version:
            continue
        if not (ours.finished and theirs.finished and min(ours.finished, theirs.finished) >= since):
            continue
        pairs.append((c, ours, theirs))
    if not pairs:
        return []
    results = {
        (r.run_id, r.test_key): r
        for r in TestResult.objects.filter(
            run_id__in=[r.id for _, ours, theirs in pairs for r in (ours, theirs)]
        ).only("run_id", "test_key", "outcome", "reason")
    }
    out = []
    for c, ours, theirs in pairs:
        sbs = side_by_side([ours, theirs], results, since)
        if sbs is not None:
            out.append({"cluster": c, **sbs})
    return sorted(out, key=lambda s: (not s["disagree"], s["cluster"].name))


def pass_rates(plugin: Plugin) -> list[dict[str, Any]]:
    """The plugin's connectivity verdicts (our battery's runs and verified submissions,
    emulated ones too) per Kubernetes minor: [{"minor": "1.34", "passed", "verdicts", "rate"}],
    oldest first. Only passed and failed are verdicts: skips and harness errors say nothing
    about SCTP. Upstream's e2e.test runs are not ours: they are beside ours in the
    side-by-side table, never in this rate."""
    counts: dict[int, list[int]] = {}
    for minor, outcome, n in (
        TestResult.objects.filter(
            run__plugin=plugin,
            run__kubernetes_minor__isnull=False,
            test_key__in=CONNECTIVITY_KEYS,
            outcome__in=("passed", "failed"),
        )
        .exclude(run__battery=Battery.UPSTREAM)
        .values_list("run__kubernetes_minor", "outcome")
        .annotate(n=Count("id"))
    ):
        c = counts.setdefault(minor, [0, 0])
        c[0] += n if outcome == "passed" else 0
        c[1] += n
    for minor, results in Submission.objects.filter(
        plugin=plugin, status=Submission.Status.VERIFIED, kubernetes_minor__isnull=False
    ).values_list("kubernetes_minor", "results")[:200]:
        for key in CONNECTIVITY_KEYS:
            outcome = ((results or {}).get(key) or {}).get("outcome")
            if minor is not None and outcome in ("passed", "failed"):
                c = counts.setdefault(minor, [0, 0])
                c[0] += outcome == "passed"
                c[1] += 1
    return [
        {"minor": f"1.{m}", "passed": p, "verdicts": v, "rate": p / v}
        for m, (p, v) in sorted(counts.items())
        if v
    ]


@require_POST
@maintainer_required
def netpol_exemption(request: HttpRequest, slug: str) -> HttpResponse:
    """Records (reason required) or clears a NetworkPolicy exemption; audited by dashboard.domain.trust."""
    plugin = get_object_or_404(Plugin, slug=slug)
    back = f"/plugins/{plugin.slug}/"
    if request.POST.get("action") == "clear":
        trust.set_netpol_exemption(plugin, "", request.user)
        messages.success(request, f"The NetworkPolicy exemption of {plugin.name} is cleared.")
        return redirect(back)
    reason = request.POST.get("reason", "").strip()
    if not reason:
        messages.error(
            request,
            "An exemption needs a reason: say why this plugin may qualify without NetworkPolicy.",
        )
        return redirect(back)
    try:
        trust.set_netpol_exemption(plugin, reason, request.user)
    except trust.TrustError as exc:
        messages.error(request, exc.message)
        return redirect(back)
    messages.success(request, f"{plugin.name} is exempt from netpol-allow-deny: “{reason}”.")
    return redirect(back)


def _stage_svg(data: dict[str, Any]) -> str:

    stage, unmet = current_override()
    if unmet and stage == data["stage"]:
        # Reached over unmet criteria: the colour of a warning, never of success.
        return badges.render_svg("SCTP " + stage, override_text(unmet), "#9a6700")
    if data.get("stage_source") == "kep":
        # Nothing signed off here: the KEP's history, and the badge says it is the KEP's.
        m = next((m for m in data.get("kep_history") or [] if m["stage"] == data["stage"]), None)
        if m is not None:
            return badges.render_svg(
                "SCTP", f"{m['label']} since {m['release']} (KEP-614)", "#0969da"
            )
    return badges.render_svg("SCTP", data["stage"], "#0969da")


@require_GET
def stage_badge(request: HttpRequest) -> HttpResponse:
    """/badge/stage.svg: the feature's stage; a sign-off bumps the publication, so it is made
    once per publication."""
    body = publication.derived("stage-badge", _stage_svg)
    response = HttpResponse(body, content_type="image/svg+xml; charset=utf-8")
    response["ETag"] = badges.etag_of(body)
    response["Cache-Control"] = f"public, max-age={BADGE_MAX_AGE}"
    return response


@require_GET
def badge(request: HttpRequest, slug: str) -> HttpResponse:
    # Served from the published evaluation (one query); READMEs embed it, so it must be cheap.
    published = publication.published_badge(slug)
    proxier = request.GET.get("proxier", "")
    label = f"SCTP {proxier}" if proxier in PROXIERS else "SCTP"
    if published is not None and proxier:
        # One proxier mode's status, with the same rules (the post-GA watch: iptables, ipvs,
        # nftables); a mode the dashboard does not know is not a badge.
        published = (published.get("proxiers") or {}).get(proxier)
    if published is None:
        what = "unknown proxier" if proxier else "unknown plugin"
        body, status = badges.render_svg(label, what, "#8c959f"), 404
    else:
        body, status = (
            badges.render_svg(label, published["message"], badges.COLOURS[published["status"]]),
            200,
        )
    etag = badges.etag_of(body)
    if status == 200 and etag in [
        t.strip() for t in request.headers.get("If-None-Match", "").split(",")
    ]:
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = HttpResponse(body, content_type="image/svg+xml; charset=utf-8", status=status)
    response["ETag"] = etag
    response["Cache-Control"] = f"public, max-age={BADGE_MAX_AGE}"
    return response
