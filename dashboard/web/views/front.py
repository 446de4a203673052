"""The readiness page (/): where SCTP stands, the next decision, and every criterion's evidence.

The first thing on the page is the current stage and the next decision (or, after GA, whether
the GA criteria still hold); finished transitions fold away below.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

from dashboard.domain import kep_history, publication
from dashboard.domain.catalog import Stage
from dashboard.domain.history import statuses_of
from dashboard.domain.models import ReadinessSnapshot, SignOff
from dashboard.domain.signoffs import override_text, stage_override
from dashboard.web.views.published import published_page
from dashboard.web.views.readiness_words import group_evidence, next_action, short_detail

SYMBOLS = {"met": "✔", "unmet": "✘", "at_risk": "⚠", "stale": "⌛"}
LABELS = {"met": "met", "unmet": "unmet", "at_risk": "at risk", "stale": "stale"}
STAGES = [Stage.ALPHA, Stage.BETA, Stage.STABLE]
STAGE_NAMES = {Stage.ALPHA: "alpha", Stage.BETA: "beta", Stage.STABLE: "stable (GA)"}


def _unmet_summary(transition: dict[str, Any]) -> str:
    bad = [c for c in transition["criteria"] if c["status"] != "met"]
    if not bad:
        return "every criterion is met: a maintainer may sign it off"
    return f"{len(bad)} of {len(transition['criteria'])} criteria not met"


def stage_track(
    evaluation: dict[str, Any],
    releases: dict[str, SignOff],
    overrides: dict[str, list[str]] | None = None,
) -> list[dict[str, Any]]:
    """Stages as reached / current / later, and between them what was decided or is next.

    Only the next transition says whether its criteria are met; later ones say "later", so the
    track never reads as if a stage beyond the next were in reach."""
    current = STAGES.index(evaluation["stage"])
    by_to = {t["to"]: t for t in evaluation["transitions"]}
    kep = {m["stage"]: m for m in evaluation.get("kep_history") or []}
    track: list[dict[str, Any]] = []
    for i, name in enumerate(STAGES):
        if i > 0:
            signoff = releases.get(name)
            if i <= current and signoff is None and name in kep:
                # Reached upstream, not signed off here: history from the KEP (issue 39).
                m = kep[name]
                track.append(
                    {
                        "kind": "edge",
                        "state": "kep",
                        "label": f"KEP-614: Kubernetes {m['release']} ({m['date']})",
                    }
                )
            elif i <= current:
                unmet = (overrides or {}).get(name) or []
                label = ("signed off over unmet criteria" if unmet else "signed off") + (
                    f" in Kubernetes {signoff.kubernetes_release}"
                    if signoff and signoff.kubernetes_release
                    else ""
                )
                track.append(
                    {"kind": "edge", "state": "override" if unmet else "done", "label": label}
                )
            elif i == current + 1:
                t = by_to.get(name)
                track.append(
                    {
                        "kind": "edge",
                        "state": "next",
                        "label": "next decision: "
                        + ("criteria met" if t and t["ready"] else "criteria not met"),
                    }
                )
            else:
                track.append({"kind": "edge", "state": "later", "label": "later"})
        state = "done" if i < current else ("current" if i == current else "later")
        symbol = {"done": "✔", "current": "●", "later": "○"}[state]
        overridden = bool((overrides or {}).get(name)) and i <= current
        stage_item: dict[str, Any] = {
            "kind": "stage",
            "name": name,
            "label": STAGE_NAMES[name],
            "state": state,
            "symbol": "⚠" if overridden else symbol,
            "override": overridden,
            "kep": kep.get(name),
        }
        track.append(stage_item)
    return track


def decorate(evaluation: dict[str, Any], baseline: dict[str, str] | None) -> None:
    periodic_runs = int((evaluation.get("policy") or {}).get("periodic_runs") or 3)
    for t in evaluation["transitions"]:
        for c in t["criteria"]:
            c["next_action"] = next_action(c, periodic_runs)
            c["grouped"] = group_evidence(c.get("evidence") or [])
            c["disagreements"] = disagreements(c.get("evidence") or [])
            c["short_detail"], c["detail_cut"] = short_detail(c.get("detail") or "")
            c["symbol"] = SYMBOLS.get(c["status"], "?")
            c["status_label"] = LABELS.get(c["status"], c["status"])
            was = (baseline or {}).get(c["key"])
            c["changed"] = LABELS.get(was) if was is not None and was != c["status"] else None


CONTRADICTED = "contradicted: "


def disagreements(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The criterion's evidence the other battery contradicts (issue 38: the policy's
    `Item.contradicted`, said in each entry's why), each with the part of its why that says so,
    for the flag on the criterion's card."""
    out = []
    for e in evidence:
        why = str(e.get("why") or "")
        if CONTRADICTED in why:
            out.append({**e, "against": why.split(CONTRADICTED, 1)[1]})
    return out


def glance(
    evaluation: dict[str, Any],
    releases: dict[str, SignOff],
    overrides: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    stage = evaluation["stage"]
    nxt = next((t for t in evaluation["transitions"] if t["from"] == stage), None)
    past = [t for t in evaluation["transitions"] if STAGES.index(t["to"]) <= STAGES.index(stage)]
    later = [t for t in evaluation["transitions"] if STAGES.index(t["from"]) > STAGES.index(stage)]
    source = evaluation.get("stage_source") or ("signoff" if releases else "kep")
    history = evaluation.get("kep_history") or []
    kep_reached = history[-1] if history else None
    out: dict[str, Any] = {
        "stage": stage,
        "stage_label": STAGE_NAMES.get(stage, stage),
        "source": source,
        "kep_history": history,
        # The stage from the KEP when nothing was signed off here; when this deployment's own
        # sign-offs say another stage, the KEP's is named beside it, never merged into it.
        "kep": next((m for m in history if m["stage"] == stage), None) if source == "kep" else None,
        "kep_differs": kep_reached
        if source == "signoff" and kep_reached and kep_reached["stage"] != stage
        else None,
        "next": nxt,
        "since": releases.get(stage),
        "override": override_text((overrides or {}).get(stage) or []),
        "past": past,
        "later": later,
    }
    kep = {m["stage"]: m for m in history}
    for t in past:  # the page's own copy (_own_copy): how each finished transition was reached
        signoff = releases.get(t["to"])
        if signoff is not None:
            t["reached"] = "signed off here" + (
                f" in Kubernetes {signoff.kubernetes_release}" if signoff.kubernetes_release else ""
            )
        elif t["to"] in kep:
            m = kep[t["to"]]
            t["reached"] = f"reached upstream in Kubernetes {m['release']} ({m['date']}, KEP-614)"
        else:
            t["reached"] = "signed off"
    if nxt is not None:
        out["next_summary"] = _unmet_summary(nxt)
    else:
        # GA reached: keep watching. The criteria that got it there must keep holding.
        ga = next((t for t in evaluation["transitions"] if t["to"] == Stage.STABLE), None)
        criteria = ga["criteria"] if ga else []
        grid = evaluation.get("watch") or {}
        alarms = [c for c in criteria if c["status"] != "met"]
        out["watch"] = {
            "criteria": criteria,
            "alarms": alarms,
            "at_risk": [c for c in criteria if c["status"] == "at_risk"],
            "stale": [c for c in criteria if c["status"] == "stale"],
            # Today's question (issue 39): per supported release, proxier and plugin.
            "grid": grid,
            "holds": not alarms and bool(grid.get("holds", True)),
            "releases_failing": [r for r in grid.get("releases") or [] if not r["holds"]],
            "regressions": grid.get("regressions") or [],
            # plugins with evidence get a row; the others one line, so the answer stays short
            "rows": [p for p in grid.get("plugins") or [] if p["status"] != "no evidence"],
            "quiet": [p for p in grid.get("plugins") or [] if p["status"] == "no evidence"],
            "last_held": last_held([c["key"] for c in criteria]) if alarms else None,
            "by_proxier": _by_proxier(grid),
        }
    return out


def _by_proxier(grid: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer per proxier in one line each (issue 39's walk): the supported releases on
    which pod-to-service was demonstrated through it, and those on which it was not."""
    out = []
    for p in grid.get("proxiers") or []:
        shown: list[str] = []
        missing: list[str] = []
        for r in grid.get("releases") or []:
            cell = next((c for c in r["proxiers"] if c["proxier"] == p["proxier"]), None)
            (shown if cell and cell["demonstrated"] else missing).append(r["release"])
        out.append({**p, "shown": shown, "missing": missing})
    return out


SNAPSHOTS_LOOKED_AT = 500


def last_held(keys: list[str]) -> dict[str, Any] | None:
    """When the GA criteria last all held on this dashboard (the newest stored snapshot in which
    each was met), or None. Read once per publication (the body is rendered once per publication)."""
    if not keys:
        return None
    rows = ReadinessSnapshot.objects.order_by("-created").values_list("created", "statuses")
    stopped = None  # the snapshot after the one that held: when it stopped holding
    for created, statuses in rows[:SNAPSHOTS_LOOKED_AT]:
        if all((statuses or {}).get(k) == "met" for k in keys):
            return {"since": created, "until": stopped}
        stopped = created
    return None


def _own_copy(evaluation: dict[str, Any]) -> dict[str, Any]:
    """The published evaluation is shared by this process's requests: copy what decorate() writes."""
    return {
        **evaluation,
        "transitions": [
            {**t, "criteria": [dict(c) for c in t["criteria"]]} for t in evaluation["transitions"]
        ],
    }


def readiness_body(evaluation: dict[str, Any], maintainer: bool) -> SafeString:
    """The readiness page's body for one publication: sign-offs bump the publication too, so
    this depends on nothing else. Rendered without the request (no context processors)."""
    evaluation = _own_copy(evaluation)
    signoffs = list(
        SignOff.objects.select_related("maintainer").defer("snapshot").order_by("-created")
    )
    last = signoffs[0] if signoffs else None
    releases: dict[str, SignOff] = {}
    for s in reversed(signoffs):  # the newest sign-off into each stage wins
        releases[s.to_stage] = s
    # A stage reached over unmet criteria says so wherever it is shown (dashboard/domain/signoffs.py).
    overrides = {stage: stage_override(releases, stage) for stage in releases}
    baseline = None
    if last is not None:
        baseline = statuses_of(SignOff.objects.only("snapshot").get(pk=last.pk).snapshot)
    decorate(evaluation, baseline)
    # The template's own autoescaped output (render_to_string already returns it marked safe).
    return mark_safe(
        render_to_string(
            "front/_readiness_body.html",
            {
                "readiness": evaluation,
                "stage": evaluation["stage"],
                "track": stage_track(evaluation, releases, overrides),
                "glance": glance(evaluation, releases, overrides),
                "last_signoff": last,
                "is_maintainer": maintainer,
                "kep_url": kep_history.KEP_URL,
                "kep_issue_url": kep_history.ISSUE_URL,
                # The newest evaluation failed: what is served is the last good one (issue 36);
                # maintainers see the part, the error and the evidence item that raised.
                "publication_notice": evaluation.get("publication"),
                "failure": (
                    publication.last_failure()
                    if maintainer and evaluation.get("publication")
                    else {}
                ),
            },
        )
    )


def index(request: HttpRequest) -> HttpResponse:
    return published_page(request, "readiness-page", "Readiness", readiness_body, by_role=True)


ROBOTS = "User-agent: *\nDisallow: /admin/\nDisallow: /api/\n"


@require_GET
@cache_control(public=True, max_age=86400)
def robots(request: HttpRequest) -> HttpResponse:
    """/robots.txt: a constant answer through every middleware (the load benchmark's baseline)."""
    return HttpResponse(ROBOTS, content_type="text/plain; charset=utf-8")


FAVICON = settings.BASE_DIR / "dashboard" / "web" / "static" / "favicon.svg"


@require_GET
@cache_control(public=True, max_age=86400)
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for whatever the page links: the SVG icon, not a 404."""
    return HttpResponse(FAVICON.read_bytes(), content_type="image/svg+xml")
