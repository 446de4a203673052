"""Registering a cluster: fields checked, the kubeconfig validated (parsed, context present, no
exec plugin or file path, server reachable) before anything is stored."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from .catalog import Proxier
from .models import AuditEvent, Cluster, Plugin, Vendor

NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
VERSION_RE = re.compile(r"^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.-]+)?$")
KUBECONFIG_MAX_BYTES = 256 * 1024


@dataclass
class ClusterError(Exception):
    status: int
    message: str
    field: str = ""


def _bool(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def register_cluster(
    *,
    data: Any,
    kubeconfig: str,
    owner: Vendor | None,
    allowed_plugin_ids: set[int] | None,
    actor: str,
    check_reachable: bool = True,
) -> Cluster:
    """Creates a cluster, or updates one the same owner registered before.

    `allowed_plugin_ids` None means any plugin (maintainers). Raises ClusterError; stores
    nothing then.
    """
    from workers.kubeconfig import KubeconfigError, validate_kubeconfig

    name = (data.get("name") or "").strip()
    if not NAME_RE.match(name):
        raise ClusterError(
            400, "name must be a DNS label: lowercase letters, digits and '-', at most 63", "name"
        )
    plugin = Plugin.objects.filter(slug=(data.get("plugin") or "").strip()).first()
    if plugin is None:
        raise ClusterError(400, f"unknown plugin {data.get('plugin')!r}", "plugin")
    if allowed_plugin_ids is not None and plugin.id not in allowed_plugin_ids:
        raise ClusterError(
            403, f"you may not register clusters for plugin {plugin.slug!r}", "plugin"
        )
    proxier = (data.get("proxier") or "").strip()
    if proxier not in Proxier.values:
        raise ClusterError(400, f"proxier must be one of {', '.join(Proxier.values)}", "proxier")
    kubernetes_version = (data.get("kubernetes_version") or "").strip()
    if kubernetes_version and not VERSION_RE.match(kubernetes_version):
        raise ClusterError(
            400,
            f"kubernetes_version {kubernetes_version!r} is not a version like 1.31.2",
            "kubernetes_version",
        )
    plugin_version = (data.get("plugin_version") or "").strip()[:40]
    image = (data.get("agnhost_image") or "").strip()
    if len(image) > 255 or any(c.isspace() for c in image):
        raise ClusterError(
            400, "agnhost_image must be an image reference without spaces", "agnhost_image"
        )
    existing = Cluster.objects.filter(name=name).first()
    if (
        existing is not None
        and (owner is None or existing.owner_id != owner.id)
        and allowed_plugin_ids is not None
    ):
        raise ClusterError(
            409, f"a cluster named {name} is already registered by someone else", "name"
        )
    if (
        existing is not None
        and existing.mode == Cluster.Mode.AGENT
        and allowed_plugin_ids is not None
    ):
        # The mode is fixed at registration: a vendor cannot turn its agent-reporting cluster
        # into one our workers test (or the reverse); a maintainer changes it (trust.set_mode).
        raise ClusterError(
            409,
            f"cluster {name} reports through its in-cluster agent; only a maintainer may change "
            "how it is tested",
            "name",
        )
    if not kubeconfig.strip():
        raise ClusterError(400, "a kubeconfig is required", "kubeconfig")
    if len(kubeconfig.encode()) > KUBECONFIG_MAX_BYTES:
        raise ClusterError(400, "the kubeconfig is larger than 256 KB", "kubeconfig")
    try:
        summary = validate_kubeconfig(kubeconfig, check_reachable=check_reachable)
    except KubeconfigError as exc:
        raise ClusterError(400, f"kubeconfig: {exc}", "kubeconfig") from exc
    detected = (summary.get("kubernetes_version") or "").lstrip("v")
    fields: dict[str, Any] = {
        "plugin": plugin,
        "plugin_version": plugin_version,
        "kubernetes_version": kubernetes_version.lstrip("v") or detected,
        "proxier": proxier,
        "node_access": _bool(data.get("node_access", "true")),
        "load_balancer": _bool(data.get("load_balancer", "false")),
        "kubenet": _bool(data.get("kubenet", "false")),
        "agnhost_image": image,
        "kubeconfig": kubeconfig,
        "credentials_error": "",
    }
    if summary.get("emulated"):
        fields["emulated"] = (
            True  # once an emulator, always flagged: re-registering never clears it
        )
    by_maintainer = allowed_plugin_ids is None
    with transaction.atomic():
        if existing is None:
            # Evidence policy: a vendor's cluster starts unapproved; a maintainer's is approved.
            cluster = Cluster.objects.create(
                name=name, owner=owner, approved=by_maintainer, **fields
            )
            action = "cluster.register"
        else:
            moved = existing.plugin_id != plugin.id or _server_of(existing) != summary.get("server")
            for key, value in fields.items():
                setattr(existing, key, value)
            # Re-registering never re-enables a cluster a maintainer disabled, nor re-approves one;
            # a vendor's change of server or plugin clears the approval.
            if by_maintainer:
                existing.approved = True
            elif moved:
                existing.approved, existing.approved_by, existing.approved_at = False, None, None
            existing.save()
            cluster, action = existing, "cluster.update"
        # The kubeconfig itself is never logged; only where it points.
        AuditEvent.record(
            actor,
            action,
            f"cluster {name}",
            server=summary.get("server"),
            plugin=plugin.slug,
            approved=cluster.approved,
        )
    return cluster


def _server_of(cluster: Cluster) -> str | None:
    """The server the stored kubeconfig points at (None when it cannot be read)."""
    from workers.kubeconfig import KubeconfigError, validate_kubeconfig

    try:
        return validate_kubeconfig(cluster.kubeconfig, check_reachable=False).get("server")
    except (KubeconfigError, Exception):
        return None
