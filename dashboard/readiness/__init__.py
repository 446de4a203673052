"""The readiness engine: the graduation criteria of KEP-614 evaluated from evidence."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.cache import cache

from django.utils.timezone import now as tz_now

from dashboard.catalog import TRANSITIONS, Stage

from .base import Context, EvidenceRef, Verdict
from .criteria import CRITERIA

__all__ = ["evaluate", "cached_evaluate", "invalidate", "Context", "Verdict", "EvidenceRef", "current_stage"]

log = logging.getLogger(__name__)
CACHE_KEY = "readiness:evaluation:v1"


def current_stage() -> str:
    from dashboard.models import SignOff

    latest = SignOff.objects.order_by("-created").values_list("to_stage", flat=True).first()
    return latest or Stage.ALPHA


def evaluate(ctx: Context | None = None) -> dict[str, Any]:
    ctx = ctx or Context(now=tz_now())
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
        "transitions": transitions,
    }


def cached_evaluate() -> dict[str, Any]:
    """The evaluation for the public page and API, shared for READINESS_CACHE_SECONDS.

    Any change to evidence drops it (signals in dashboard/apps.py; runs that end re-evaluate
    through history.record_evaluation), so the TTL only bounds how late a verdict that turns on
    time alone (freshness, a schedule's age) can show. A broken cache never breaks the page.
    """
    ttl = settings.READINESS_CACHE_SECONDS
    if ttl > 0:
        try:
            hit = cache.get(CACHE_KEY)
        except Exception:
            log.warning("readiness cache unavailable", exc_info=True)
            hit = None
        if hit is not None:
            return hit
    evaluation = evaluate()
    remember(evaluation)
    return evaluation


def remember(evaluation: dict[str, Any]) -> None:
    if settings.READINESS_CACHE_SECONDS > 0:
        try:
            cache.set(CACHE_KEY, evaluation, settings.READINESS_CACHE_SECONDS)
        except Exception:
            log.warning("readiness cache unavailable", exc_info=True)


def invalidate(*args: Any, **kwargs: Any) -> None:
    """Drops the shared evaluation (usable as a signal receiver)."""
    try:
        cache.delete(CACHE_KEY)
    except Exception:
        log.warning("readiness cache unavailable", exc_info=True)
