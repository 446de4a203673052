"""Sign-offs over unmet criteria: which criteria were unmet, and the reason the maintainer gave.

A sign-off freezes the evaluation it saw (its snapshot). When the transition it decided was not
ready, it is an *override*: the pages, the stage badge and the KEP report say "signed off over
unmet criteria: …" wherever they show the stage it reached, never a plain success.
"""

from __future__ import annotations

from typing import Any

from dashboard.domain.kep_history import kep_stage
from dashboard.domain.models import SignOff


def unmet_criteria(snapshot: dict[str, Any] | None, from_stage: str) -> list[str]:
    """The keys of the criteria the sign-off's transition did not meet when it was made."""
    for t in (snapshot or {}).get("transitions") or []:
        if t.get("from") == from_stage:
            return [c["key"] for c in t.get("criteria") or [] if c.get("status") != "met"]
    return []


def override_reason(snapshot: dict[str, Any] | None) -> str:
    return str(((snapshot or {}).get("override") or {}).get("reason") or "")


def override_text(unmet: list[str]) -> str:
    return "signed off over unmet criteria: " + ", ".join(unmet) if unmet else ""


def stage_override(signoffs_into_stage: Any, stage: str) -> list[str]:
    """The unmet criteria of the newest sign-off into `stage` (empty: a clean sign-off or none).

    `signoffs_into_stage` maps a stage to its newest SignOff (snapshot loaded or not)."""
    signoff = signoffs_into_stage.get(stage)
    if signoff is None:
        return []

    snapshot = SignOff.objects.filter(pk=signoff.pk).values_list("snapshot", flat=True).first()
    return unmet_criteria(snapshot, signoff.from_stage)


def current_override() -> tuple[str, list[str]]:
    """(current stage, unmet criteria of the sign-off that reached it). Without a sign-off made
    here, the stage is KEP-614's (dashboard/domain/kep_history.py), reached over nothing."""

    row = (
        SignOff.objects.order_by("-created")
        .values_list("to_stage", "from_stage", "snapshot")
        .first()
    )
    if row is None:
        return kep_stage(), []
    return row[0], unmet_criteria(row[2], row[1])
