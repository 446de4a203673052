"""Corrections to evidence: never an edit or a delete, always an audited action with a reason.

A run or a submission is withdrawn (it stays, shown as withdrawn, and stops counting:
dashboard/domain/policy.py) or reinstated; each is one audit entry naming who, what and why.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.timezone import now

from dashboard.domain.models import AuditEvent, Run, Submission


class CorrectionError(ValueError):
    pass


def _target(obj: Run | Submission) -> str:
    return f"{'run' if isinstance(obj, Run) else 'submission'} {obj.pk}"


def _actor(actor: Any) -> str:
    name = str(getattr(actor, "get_username", lambda: actor)()).strip()
    if not name:
        raise CorrectionError("a correction names who made it")
    return name


def withdraw(obj: Run | Submission, *, actor: Any, reason: str) -> bool:
    """Withdraws one run or submission; False when it already was. Needs a reason."""
    reason = (reason or "").strip()
    if not reason:
        raise CorrectionError("withdrawing evidence needs a reason")
    name = _actor(actor)
    if obj.withdrawn_at is not None:
        return False
    with transaction.atomic():
        obj.withdrawn_at, obj.withdrawn_by, obj.withdrawn_reason = now(), name, reason[:2000]
        # save(): the readiness evaluation is dropped by the post_save signal (dashboard/apps.py)
        obj.save(update_fields=["withdrawn_at", "withdrawn_by", "withdrawn_reason"])
        AuditEvent.record(name, "evidence.withdraw", _target(obj), reason=reason)
    return True


def reinstate(obj: Run | Submission, *, actor: Any, reason: str) -> bool:
    """Undoes a withdrawal; False when it was not withdrawn. Needs a reason."""
    reason = (reason or "").strip()
    if not reason:
        raise CorrectionError("reinstating evidence needs a reason")
    name = _actor(actor)
    if obj.withdrawn_at is None:
        return False
    with transaction.atomic():
        before = obj.withdrawn_text
        obj.withdrawn_at, obj.withdrawn_by, obj.withdrawn_reason = None, "", ""
        obj.save(update_fields=["withdrawn_at", "withdrawn_by", "withdrawn_reason"])
        AuditEvent.record(name, "evidence.reinstate", _target(obj), reason=reason, was=before)
    return True
