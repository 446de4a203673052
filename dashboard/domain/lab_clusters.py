"""Registering the lab's emulated clusters as clusters of the dashboard."""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml
from django.db import transaction

from dashboard.domain.models import Cluster, Plugin, Run, Schedule
from dashboard.domain.runs import request_run
from dashboard.domain.schedules import create_schedule
from dashboard.domain.trust import set_basic_only


def lab_timeouts() -> dict[str, Any]:
    from kernel.battery import Timeouts  # deferred: keeps the battery out of the web process

    return dataclasses.asdict(Timeouts.for_lab())


@transaction.atomic
def register(server: Any, public_url: str | None = None) -> list[Cluster]:
    """Creates or updates one cluster per lab profile, pointing at `server` (a LabServer)."""
    clusters = []
    for name, emulated in server.clusters.items():
        profile = emulated.profile
        plugin, _ = Plugin.objects.get_or_create(
            slug=profile["plugin"],
            defaults={
                "name": profile["plugin"],
                "in_tree": profile["plugin"] == "kubenet",
                "implements_network_policy": profile["dataplane"]["network_policy"] != "none",
            },
        )
        kubeconfig = server.kubeconfig(name)
        if public_url:  # the URL other processes (containers) reach the lab at
            kubeconfig["clusters"][0]["cluster"]["server"] = (
                f"{public_url.rstrip('/')}/clusters/{name}"
            )
        owner = plugin.vendors.order_by("id").first()
        cluster, _ = Cluster.objects.update_or_create(
            name=name,
            defaults={
                "plugin": plugin,
                "plugin_version": str(profile.get("plugin_version") or ""),
                "kubernetes_version": profile["kubernetes_version"],
                "proxier": profile["proxier"],
                "node_access": profile["node_access"],
                "load_balancer": profile["load_balancer"],
                "kubenet": profile["kubenet"],
                "kubeconfig": yaml.safe_dump(kubeconfig, sort_keys=False),
                "timeouts": lab_timeouts(),
                "lab": True,
                # Evidence policy: a lab cluster is emulated (never counted); registered by the
                # operator, it is approved, so the what-if "on emulated clusters only" is honest.
                # `enabled` is left alone: re-registering never re-enables a disabled cluster.
                "emulated": True,
                "approved": True,
                **({"owner": owner} if owner else {}),
            },
        )
        clusters.append(cluster)
    return clusters


def kickoff(clusters: list[Cluster], battery: str = "all") -> list[Run]:
    """A first run on every cluster that has none yet, and a periodic basic job if there is none."""

    target = None
    if not Schedule.objects.exists():
        # The periodic basic job gets a cluster of its own, marked basic-only: connectivity runs
        # load sctp.ko, after which its basic runs could only be inconclusive.
        usable = [c for c in clusters if c.enabled and c.node_access]
        target = next(
            (c for c in usable if c.name == "calico-iptables"), usable[0] if usable else None
        )
        if target is not None:
            # A machine action: attributed to the system, not to whoever started the demo.
            set_basic_only(target, True, "system (lab --kickoff)")
            create_schedule(
                target,
                battery="basic",
                interval_minutes=5,
                grace_minutes=5,
                user="system (lab --kickoff)",
            )
    have_runs = set(Run.objects.filter(cluster__in=clusters).values_list("cluster_id", flat=True))
    runs = []
    for c in clusters:
        if c.id in have_runs or not c.enabled:
            continue
        c.refresh_from_db()
        runs.append(request_run(c, "basic" if c.basic_only else battery))
    return runs
