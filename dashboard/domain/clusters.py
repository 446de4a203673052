"""Registering a cluster: fields checked, the kubeconfig validated (parsed, context present, no
exec plugin or file path, server reachable) before anything is stored.

A name that is taken is refused (409): changing a cluster is an explicit edit
(`update_cluster`), which starts from the current values and records the old and new ones."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from dashboard.domain.catalog import Proxier
from dashboard.domain.models import AuditEvent, Cluster, Plugin, Vendor

log = logging.getLogger(__name__)

NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
VERSION_RE = re.compile(r"^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.-]+)?$")
KUBECONFIG_MAX_BYTES = 256 * 1024

# What describes a cluster (its plugin, release, proxier and what the battery may use), in the
# order forms, the API and the admin list them.
DESCRIPTION = (
    "plugin",
    "plugin_version",
    "kubernetes_version",
    "proxier",
    "node_access",
    "load_balancer",
    "kubenet",
)
# What an edit may change, in the order the form and the audit entry show them.
EDITABLE = (*DESCRIPTION, "agnhost_image")
FIELD_LABELS = {
    "plugin": "network plugin",
    "plugin_version": "plugin version",
    "kubernetes_version": "Kubernetes version",
    "proxier": "kube-proxy mode",
    "node_access": "privileged (hostexec) pods allowed",
    "load_balancer": "LoadBalancer services get an address",
    "kubenet": "uses kubenet",
    "agnhost_image": "agnhost image",
    "server": "API server (from the kubeconfig)",
}


@dataclass
class ClusterError(Exception):
    status: int
    message: str
    field: str = ""
    url: str | None = None  # where the conflicting cluster is (409 on a taken name)


def _bool(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _checked(data: Any, allowed_plugin_ids: set[int] | None) -> dict[str, Any]:
    """The form's fields but the name and kubeconfig, checked (ClusterError otherwise)."""
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
    image = (data.get("agnhost_image") or "").strip()
    if len(image) > 255 or any(c.isspace() for c in image):
        raise ClusterError(
            400, "agnhost_image must be an image reference without spaces", "agnhost_image"
        )
    return {
        "plugin": plugin,
        "plugin_version": (data.get("plugin_version") or "").strip()[:40],
        "kubernetes_version": kubernetes_version.lstrip("v"),
        "proxier": proxier,
        "node_access": _bool(data.get("node_access", "true")),
        "load_balancer": _bool(data.get("load_balancer", "false")),
        "kubenet": _bool(data.get("kubenet", "false")),
        "agnhost_image": image,
    }


def validated_kubeconfig(kubeconfig: str, check_reachable: bool) -> dict[str, Any]:
    # deferred: keeps the kubernetes client out of the web process until a kubeconfig is read
    from kernel.kubeconfig import KubeconfigError, validate_kubeconfig

    if not kubeconfig.strip():
        raise ClusterError(400, "a kubeconfig is required", "kubeconfig")
    if len(kubeconfig.encode()) > KUBECONFIG_MAX_BYTES:
        raise ClusterError(400, "the kubeconfig is larger than 256 KB", "kubeconfig")
    try:
        summary: dict[str, Any] = validate_kubeconfig(kubeconfig, check_reachable=check_reachable)
    except KubeconfigError as exc:
        raise ClusterError(400, f"kubeconfig: {exc}", "kubeconfig") from exc
    return summary


def taken(name: str) -> ClusterError:
    return ClusterError(
        409,
        f"a cluster named {name} is already registered: choose another name, or change that "
        f"cluster with its edit form (/clusters/{name}/edit/)",
        "name",
        url=f"/clusters/{name}/",
    )


def register_cluster(
    *,
    data: Any,
    kubeconfig: str,
    owner: Vendor | None,
    allowed_plugin_ids: set[int] | None,
    actor: str,
    check_reachable: bool = True,
) -> Cluster:
    """Creates a cluster. A name that is taken is refused (409, whoever registered it): a
    registration never changes an existing cluster.

    `allowed_plugin_ids` None means any plugin (maintainers). Raises ClusterError; stores
    nothing then.
    """
    name = (data.get("name") or "").strip()
    if not NAME_RE.match(name):
        raise ClusterError(
            400, "name must be a DNS label: lowercase letters, digits and '-', at most 63", "name"
        )
    fields = _checked(data, allowed_plugin_ids)
    if Cluster.objects.filter(name=name).exists():
        raise taken(name)
    summary = validated_kubeconfig(kubeconfig, check_reachable)
    fields["kubernetes_version"] = fields["kubernetes_version"] or (
        summary.get("kubernetes_version") or ""
    ).lstrip("v")
    fields.update(kubeconfig=kubeconfig, credentials_error="")
    if summary.get("emulated"):
        fields["emulated"] = True
    with transaction.atomic():
        if Cluster.objects.select_for_update().filter(name=name).exists():
            raise taken(name)  # registered meanwhile
        # Evidence policy: a vendor's cluster starts unapproved; a maintainer's is approved.
        cluster = Cluster.objects.create(
            name=name, owner=owner, approved=allowed_plugin_ids is None, **fields
        )
        # The kubeconfig itself is never logged; only where it points.
        AuditEvent.record(
            actor,
            "cluster.register",
            f"cluster {name}",
            server=summary.get("server"),
            plugin=fields["plugin"].slug,
            approved=cluster.approved,
        )
    return cluster


def shown(cluster: Cluster, server: str | None = None) -> dict[str, Any]:
    """A cluster's editable values as the form and the audit entry show them."""
    out: dict[str, Any] = {key: getattr(cluster, key) for key in EDITABLE}
    out["plugin"] = cluster.plugin.slug
    out["server"] = server if server is not None else _server_of(cluster)
    return out


def changes_of(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """{field: [old, new]} for what differs."""
    return {k: [before.get(k), after.get(k)] for k in after if before.get(k) != after.get(k)}


@dataclass
class Edit:
    """An edit, checked but not stored: what would change, and whether the approval goes."""

    cluster: Cluster
    fields: dict[str, Any]
    changes: dict[str, list[Any]]
    kubeconfig: str | None
    clears_approval: bool
    approves: bool


def check_edit(
    cluster: Cluster,
    *,
    data: Any,
    kubeconfig: str,
    allowed_plugin_ids: set[int] | None,
    check_reachable: bool = True,
) -> Edit:
    """Checks an edit of `cluster` from the form's values; an empty kubeconfig keeps the stored
    one. Stores nothing (ClusterError when a value is refused)."""
    fields = _checked(data, allowed_plugin_ids)
    before = shown(cluster)
    new_kubeconfig = kubeconfig if kubeconfig.strip() else None
    if (
        new_kubeconfig is not None
        and cluster.mode == Cluster.Mode.AGENT
        and allowed_plugin_ids is not None
    ):
        # The mode is fixed at registration: an agent-reporting cluster takes no kubeconfig from
        # its vendor; a maintainer changes how it is tested (trust.set_mode, audited).
        raise ClusterError(
            409,
            f"cluster {cluster.name} reports through its in-cluster agent; only a maintainer may "
            "change how it is tested",
            "kubeconfig",
        )
    server = before["server"]
    if new_kubeconfig is not None:
        summary = validated_kubeconfig(new_kubeconfig, check_reachable)
        server = summary.get("server")
        if not fields["kubernetes_version"]:
            fields["kubernetes_version"] = (summary.get("kubernetes_version") or "").lstrip("v")
        if summary.get("emulated"):
            fields["emulated"] = True  # once an emulator, always flagged
    elif not fields["kubernetes_version"]:
        fields["kubernetes_version"] = cluster.kubernetes_version  # empty: keep what is known
    after = {**{k: v for k, v in fields.items() if k in EDITABLE}, "server": server}
    after["plugin"] = fields["plugin"].slug
    changes = changes_of(before, after)
    if new_kubeconfig is not None and "server" not in changes:
        changes["kubeconfig"] = ["stored", "replaced (same server)"]
    by_maintainer = allowed_plugin_ids is None
    moved = "plugin" in changes or "server" in changes
    return Edit(
        cluster=cluster,
        fields=fields,
        changes=changes,
        kubeconfig=new_kubeconfig,
        # Evidence policy: a vendor's change of server or plugin clears the approval; a
        # maintainer's change approves. Nothing re-enables a disabled cluster.
        clears_approval=bool(not by_maintainer and moved and cluster.approved),
        approves=by_maintainer and not cluster.approved and bool(changes),
    )


def apply_edit(edit: Edit, actor: str) -> Cluster:
    """Stores a checked edit, audited with each changed field's old and new value."""
    cluster = edit.cluster
    if not edit.changes:
        return cluster
    with transaction.atomic():
        for key, value in edit.fields.items():
            setattr(cluster, key, value)
        if edit.kubeconfig is not None:
            cluster.kubeconfig = edit.kubeconfig
            cluster.credentials_error = ""
        if edit.approves:
            cluster.approved = True
        elif edit.clears_approval:
            cluster.approved, cluster.approved_by, cluster.approved_at = False, None, None
        cluster.save()
        AuditEvent.record(
            actor,
            "cluster.update",
            f"cluster {cluster.name}",
            changes=edit.changes,
            approved=cluster.approved,
        )
    return cluster


def update_cluster(
    cluster: Cluster,
    *,
    data: Any,
    kubeconfig: str,
    allowed_plugin_ids: set[int] | None,
    actor: str,
    check_reachable: bool = True,
) -> Edit:
    """check_edit then apply_edit: the API's one-step edit."""
    edit = check_edit(
        cluster,
        data=data,
        kubeconfig=kubeconfig,
        allowed_plugin_ids=allowed_plugin_ids,
        check_reachable=check_reachable,
    )
    apply_edit(edit, actor)
    return edit


def _server_of(cluster: Cluster) -> str | None:
    """The server the stored kubeconfig points at (None when it cannot be read)."""
    # deferred: keeps the kubernetes client out of the web process until a kubeconfig is read
    from kernel.kubeconfig import KubeconfigError, validate_kubeconfig

    try:
        return validate_kubeconfig(cluster.kubeconfig, check_reachable=False).get("server")
    except (KubeconfigError, Exception):
        return None


def renew_registered(now: float | None = None) -> dict[str, str]:
    """Renew every enabled, non-lab cluster's token that is due; {cluster: what happened}.

    One cluster failing never stops the others; its old kubeconfig stays until a renewal
    succeeds (the next beat tries again).
    """
    from kernel import serviceaccount  # deferred: keeps the kubernetes client out of the web

    results: dict[str, str] = {}
    for cluster in Cluster.objects.filter(enabled=True, lab=False).only("id", "name", "kubeconfig"):
        try:
            current = cluster.kubeconfig or ""  # decrypted here, on access
        except Exception:  # stored under another key: the runner marks it
            log.warning(
                "the kubeconfig of cluster %s cannot be decrypted: not renewed", cluster.name
            )
            continue
        info = serviceaccount.token_info(current)
        if info is None or not info.renew_due(now):
            continue
        try:
            text, expires = serviceaccount.renewed_kubeconfig(current)
        except Exception as exc:  # one cluster's failure must not stop the rest
            left = max(0, int(info.expires - (time.time() if now is None else now)))
            log.warning(
                "renewing the token of cluster %s failed (%d s left): %s", cluster.name, left, exc
            )
            results[cluster.name] = f"failed: {exc}"
            continue
        # Same server, same plugin: the approval stands (only a credential changed).
        cluster.kubeconfig = text
        cluster.save(update_fields=["kubeconfig"])
        AuditEvent.record(
            "system",
            "cluster.token_renewed",
            f"cluster {cluster.name}",
            expires=f"{expires:%Y-%m-%dT%H:%M:%SZ}",
        )
        results[cluster.name] = f"renewed until {expires:%Y-%m-%dT%H:%M:%SZ}"
    return results
