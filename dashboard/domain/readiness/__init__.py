"""The readiness engine: the graduation criteria of KEP-614 evaluated from evidence.

What is served from it (the stored evaluation, its badges, its invalidation) is the
publication's: dashboard/domain/publication.py."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils.timezone import now as tz_now

from dashboard.domain import kep_history
from dashboard.domain.catalog import TRANSITIONS, Stage
from dashboard.domain.models import SignOff
from dashboard.domain.policy import min_minor
from dashboard.domain.readiness.base import Context, EvidenceRef, Verdict
from dashboard.domain.readiness.criteria import CRITERIA
from dashboard.domain.readiness.failures import Failure, failure_of, unevaluated
from dashboard.domain.readiness.prefetch import prefetch
from dashboard.domain.readiness.watch import watch as ga_watch

__all__ = [
    "Context",
    "EvidenceRef",
    "Verdict",
    "current_stage",
    "evaluate",
    "policy_settings",
    "signed_stage",
    "signoff_track_stage",
    "stage_and_source",
    "unevaluable",
]

log = logging.getLogger(__name__)


def signed_stage() -> str | None:
    """The stage this deployment's own newest sign-off reached; None when it signed off nothing."""
    latest: str | None = (
        SignOff.objects.order_by("-created").values_list("to_stage", flat=True).first()
    )
    return latest


def stage_and_source() -> tuple[str, str]:
    """(stage shown, where it comes from): this deployment's own sign-offs ("signoff") when it
    recorded any, else KEP-614's history ("kep": GA since 1.20). Issue 39: a fresh install
    knows the feature's real history instead of calling it alpha."""
    signed = signed_stage()
    if signed:
        return signed, "signoff"
    return kep_history.kep_stage(), "kep"


def current_stage() -> str:
    return stage_and_source()[0]


def signoff_track_stage() -> str:
    """Where this deployment's own sign-off track stands (alpha before its first sign-off): the
    transition a maintainer may sign off next starts there, whatever the KEP's history says."""
    return signed_stage() or Stage.ALPHA


def _stage_fields() -> dict[str, Any]:
    stage, source = stage_and_source()
    return {"stage": stage, "stage_source": source, "kep_history": kep_history.as_dicts()}


def evaluate(ctx: Context | None = None) -> dict[str, Any]:
    """The criteria of every transition. A criterion that raises does not take the evaluation
    down: it is `unmet` ("could not be evaluated") and its Failure is listed under `failures`
    (the publication then keeps serving the last good evaluation: publication.publish)."""
    ctx = ctx or Context(now=tz_now())
    prefetch(ctx)
    transitions = []
    failures: list[Failure] = []
    for t in TRANSITIONS:
        verdicts = []
        for key, title in t["criteria"]:
            try:
                verdicts.append(CRITERIA[key].evaluate(ctx).to_dict())
            except Exception as exc:  # one criterion, not the page (issue 36)
                failure = failure_of(key, exc)
                log.error("readiness criterion %s raised: %s", key, failure.summary, exc_info=exc)
                failures.append(failure)
                verdicts.append(unevaluated(key, title, failure))
        transitions.append(
            {
                "from": t["from"],
                "to": t["to"],
                "ready": all(v["status"] == "met" for v in verdicts),
                "criteria": verdicts,
            }
        )
    try:
        post_ga: dict[str, Any] | None = ga_watch(ctx)
    except Exception as exc:  # the watch is a view of the evidence, not a criterion: never the page
        failure = failure_of("watch", exc)
        log.error("the post-GA watch raised: %s", failure.summary, exc_info=exc)
        failures.append(failure)
        post_ga = None
    return {
        "feature": "sctp",
        "kep": "KEP-614",
        **_stage_fields(),
        **({"watch": post_ga} if post_ga is not None else {}),
        "evaluated_at": ctx.now.isoformat(),
        "fresh_days": ctx.fresh_days,
        "min_kubernetes": f"1.{ctx.policy.minimum}",
        "policy": policy_settings(),
        "transitions": transitions,
        **({"failures": [f.to_dict() for f in failures]} if failures else {}),
    }


def unevaluable(when: datetime, failure: Failure) -> dict[str, Any]:
    """An evaluation whose every criterion could not be evaluated (the evaluation itself raised
    before any criterion): every criterion unmet, said why, nothing counted."""
    return {
        "feature": "sctp",
        "kep": "KEP-614",
        **_stage_fields(),
        "evaluated_at": when.isoformat(),
        "fresh_days": settings.READINESS_FRESH_DAYS,
        "min_kubernetes": f"1.{min_minor()}",
        "policy": policy_settings(),
        "transitions": [
            {
                "from": t["from"],
                "to": t["to"],
                "ready": False,
                "criteria": [unevaluated(key, title, failure) for key, title in t["criteria"]],
            }
            for t in TRANSITIONS
        ],
        "failures": [failure.to_dict()],
    }


def policy_settings() -> dict[str, Any]:
    """The settings an evaluation depends on: a stored one made under others is out of date."""

    return {
        "fresh_days": settings.READINESS_FRESH_DAYS,
        "periodic_runs": settings.READINESS_PERIODIC_RUNS,
        "min_kubernetes": f"1.{min_minor()}",
        # An evaluation stored when a fresh install defaulted to alpha is out of date (issue 39).
        "stage_without_signoffs": kep_history.kep_stage(),
    }
