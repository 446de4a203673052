"""The readiness engine: the graduation criteria of KEP-614 evaluated from evidence."""

from __future__ import annotations

from typing import Any

from django.utils.timezone import now as tz_now

from dashboard.catalog import TRANSITIONS, Stage

from .base import Context, EvidenceRef, Verdict
from .criteria import CRITERIA

__all__ = ["evaluate", "Context", "Verdict", "EvidenceRef", "current_stage"]


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
