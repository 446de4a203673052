"""The readiness engine: the graduation criteria of KEP-614 evaluated from evidence.

What is served from it (the stored evaluation, its badges, its invalidation) is the
publication's: dashboard/domain/publication.py."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.utils.timezone import now as tz_now

from dashboard.domain.catalog import TRANSITIONS, Stage
from dashboard.domain.models import SignOff
from dashboard.domain.policy import min_minor
from dashboard.domain.readiness.base import Context, EvidenceRef, Verdict
from dashboard.domain.readiness.criteria import CRITERIA
from dashboard.domain.readiness.prefetch import prefetch

__all__ = [
    "Context",
    "EvidenceRef",
    "Verdict",
    "current_stage",
    "evaluate",
    "policy_settings",
]

log = logging.getLogger(__name__)


def current_stage() -> str:

    latest = SignOff.objects.order_by("-created").values_list("to_stage", flat=True).first()
    return latest or Stage.ALPHA


def evaluate(ctx: Context | None = None) -> dict[str, Any]:
    ctx = ctx or Context(now=tz_now())
    prefetch(ctx)
    transitions = []
    for t in TRANSITIONS:
        verdicts = [CRITERIA[key].evaluate(ctx) for key, _title in t["criteria"]]
        transitions.append(
            {
                "from": t["from"],
                "to": t["to"],
                "ready": all(v.status == "met" for v in verdicts),
                "criteria": [v.to_dict() for v in verdicts],
            }
        )
    return {
        "feature": "sctp",
        "kep": "KEP-614",
        "stage": current_stage(),
        "evaluated_at": ctx.now.isoformat(),
        "fresh_days": ctx.fresh_days,
        "min_kubernetes": f"1.{ctx.policy.minimum}",
        "policy": policy_settings(),
        "transitions": transitions,
    }


def policy_settings() -> dict[str, Any]:
    """The settings an evaluation depends on: a stored one made under others is out of date."""

    return {
        "fresh_days": settings.READINESS_FRESH_DAYS,
        "periodic_runs": settings.READINESS_PERIODIC_RUNS,
        "min_kubernetes": f"1.{min_minor()}",
    }
