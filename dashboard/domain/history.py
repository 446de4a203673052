"""Criterion history: a snapshot whenever a verdict changes, and the hook for notifications."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

from dashboard.domain import heads
from dashboard.domain.models import ReadinessSnapshot
from dashboard.domain.publication import remember
from dashboard.domain.readiness import evaluate

log = logging.getLogger(__name__)

# Called with (previous statuses or None, new statuses, evaluation) after a change is stored.
LISTENERS: list[Callable[[dict[str, str] | None, dict[str, str], dict[str, Any]], None]] = []


# Called with every evaluation recorded, changed or not (the post-GA watch's regressions:
# a cell may regress while every criterion keeps its status). Listeners are idempotent.
EVALUATED: list[Callable[[dict[str, Any]], object]] = []


def statuses_of(evaluation: dict[str, Any]) -> dict[str, str]:
    return {c["key"]: c["status"] for t in evaluation["transitions"] for c in t["criteria"]}


def record_evaluation(reason: str = "") -> bool:
    """Evaluates readiness; stores a snapshot and tells the listeners when a status changed.
    The evidence heads are rebuilt first: a change that bypassed them lasts until here."""
    heads.rebuild()
    evaluation = evaluate()
    remember(evaluation)
    statuses = statuses_of(evaluation)
    for hook in EVALUATED:
        try:
            hook(evaluation)
        except Exception:
            log.exception("evaluation listener %r failed", hook)
    with transaction.atomic():
        previous = ReadinessSnapshot.objects.select_for_update().order_by("-created").first()
        if previous is not None and previous.statuses == statuses:
            return False
        ReadinessSnapshot.objects.create(statuses=statuses, data=evaluation, reason=reason[:200])
    for listener in LISTENERS:
        try:
            listener(previous.statuses if previous else None, statuses, evaluation)
        except Exception:
            log.exception("readiness listener %r failed", listener)
    return True
