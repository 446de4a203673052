"""Who may do what. Every view asks these helpers; nothing trusts the client."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group

from dashboard.domain.models import Plugin

MAINTAINERS_GROUP = "maintainers"


def is_maintainer(user: Any) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    if user.is_superuser:
        return True
    cached = getattr(user, "_is_maintainer", None)
    if cached is None:
        cached = user.groups.filter(name=MAINTAINERS_GROUP).exists()
        user._is_maintainer = cached
    return bool(cached)


def vendor_ids(user: Any) -> set[int]:
    if not getattr(user, "is_authenticated", False):
        return set()
    cached = getattr(user, "_vendor_ids", None)
    if cached is None:
        cached = set(user.vendors.values_list("id", flat=True))
        user._vendor_ids = cached
    return cached


def role_of(user: Any) -> str:
    if not getattr(user, "is_authenticated", False):
        return "viewer"
    if user.is_superuser:
        return "admin"
    if is_maintainer(user):
        return "maintainer"
    if vendor_ids(user):
        return "vendor"
    return "viewer"


def maintainers_group() -> Group:
    group, _ = Group.objects.get_or_create(name=MAINTAINERS_GROUP)
    return group


def can_manage_cluster(user: Any, cluster: Any) -> bool:
    """Trigger runs, edit, see non-secret settings: maintainers, and the owning vendor's members
    while that vendor still has the cluster's plugin (a vendor who loses a plugin loses its clusters)."""
    if is_maintainer(user):
        return True
    return (
        cluster.owner_id is not None
        and cluster.owner_id in vendor_ids(user)
        and vendor_has_plugin(cluster.owner_id, cluster.plugin_id)
    )


def vendor_has_plugin(vendor_id: int | None, plugin_id: int) -> bool:
    return (
        vendor_id is not None
        and Plugin.vendors.through.objects.filter(vendor_id=vendor_id, plugin_id=plugin_id).exists()
    )
