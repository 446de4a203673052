"""API tokens follow their holder: deactivating a user, or taking a maintainer out of the
maintainers group, revokes their tokens, and the audit trail says who did it and why.

`authenticate` also checks the holder on every request (the user active, the role still
held), so a change that bypasses these signals (a raw UPDATE) still locks the token out.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils.timezone import now

from dashboard.domain.crypto import token_digest
from dashboard.domain.models import ApiToken, AuditEvent
from dashboard.domain.roles import MAINTAINERS_GROUP, is_maintainer

# Who is changing users right now (the admin sets it around its saves); signals that have no
# request name the change "system" with what happened.
_actor: contextvars.ContextVar[str] = contextvars.ContextVar("token_actor", default="")


@contextlib.contextmanager
def acting_as(actor: Any) -> Iterator[None]:
    reset = _actor.set(str(getattr(actor, "get_username", lambda: actor)()))
    try:
        yield
    finally:
        _actor.reset(reset)


def current_actor(fallback: str) -> str:
    return _actor.get() or fallback


def revoke(tokens: Any, *, actor: str, reason: str) -> int:
    """Revokes the given tokens (a queryset) that are not revoked yet; one audit entry each."""
    done = 0
    with transaction.atomic():
        for token in tokens.filter(revoked=False).select_related("user", "vendor"):
            ApiToken.objects.filter(pk=token.pk).update(revoked=True)
            AuditEvent.record(
                actor,
                "token.revoke",
                f"{token.role} token {token.hint}",
                holder=str(token.user or token.vendor or ""),
                reason=reason,
            )
            done += 1
    return done


def on_user_saved(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    if created or instance.is_active:
        return
    revoke(
        ApiToken.objects.filter(user=instance),
        actor=current_actor("system"),
        reason=f"user {instance.get_username()} deactivated",
    )


def on_groups_changed(
    sender: Any, instance: Any, action: str, reverse: bool, pk_set: Any, **kwargs: Any
) -> None:
    """user.groups.remove/clear(…) or group.user_set.remove/clear(…) touching the maintainers."""
    if action not in ("post_remove", "post_clear"):
        return

    if reverse:  # instance is a Group; pk_set the users (None after clear: unknown, check all)
        if instance.name != MAINTAINERS_GROUP:
            return
        users = (
            get_user_model()
            .objects.filter(apitoken__role=ApiToken.Role.MAINTAINER, apitoken__revoked=False)
            .distinct()
        )
        if pk_set:
            users = users.filter(pk__in=pk_set)
    else:  # instance is a user; pk_set the groups
        if pk_set and not Group.objects.filter(pk__in=pk_set, name=MAINTAINERS_GROUP).exists():
            return
        users = get_user_model().objects.filter(pk=instance.pk)
    for user in users:
        user.__dict__.pop("_is_maintainer", None)
        if is_maintainer(user):
            continue
        revoke(
            ApiToken.objects.filter(user=user, role=ApiToken.Role.MAINTAINER),
            actor=current_actor("system"),
            reason=f"user {user.get_username()} removed from the maintainers",
        )


def holder_still_entitled(token: ApiToken) -> bool:
    """Asked on every request: a maintainer token needs its user active and still a
    maintainer; a vendor token its vendor, and its user (when it names one) active and still a
    member of that vendor. Revoking on deactivation (dashboard/domain/tokens.py) is the record of
    it; this check is what holds even when a change bypassed that (a script, the shell)."""
    user = token.user
    if user is not None and not user.is_active:
        return False
    if token.role == ApiToken.Role.MAINTAINER:
        return user is not None and is_maintainer(user)
    if token.role == ApiToken.Role.VENDOR:
        if token.vendor_id is None:
            return False
        vendor = token.vendor
        return user is None or (vendor is not None and vendor.members.filter(pk=user.pk).exists())
    return False


def authenticate(token: str) -> ApiToken | None:
    """The live token this secret is, or None: unknown, revoked, or its holder no longer
    entitled (checked on every request)."""
    if not token:
        return None
    obj = (
        ApiToken.objects.select_related("vendor", "user")
        .filter(digest=token_digest(token), revoked=False)
        .first()
    )
    if obj is None or not holder_still_entitled(obj):
        return None
    if obj.last_used is None or now() - obj.last_used > timedelta(minutes=5):
        ApiToken.objects.filter(pk=obj.pk).update(last_used=now())
    return obj
