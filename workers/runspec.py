"""What a run's worker makes of its cluster before any battery: the battery's run id (which
names its namespaces) and the ClusterSpec of the registered cluster. Both batteries use them
(workers.runner for ours, workers.upstream for upstream's survey), so they live below both."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from django.conf import settings

from dashboard.domain.models import Cluster
from kernel.battery import ClusterSpec


def deployment_tag() -> str:
    """A short tag of this deployment (its Redis prefix and database): two deployments that run
    the battery against one cluster (a staging and a production dashboard, the test suite's
    workers against one real cluster) each number their runs from 1, so the battery's run id,
    which names and labels its namespaces, carries the tag: no 409 AlreadyExists on
    `sctp-battery-1-probe`, and no sweep deletes another deployment's live namespaces."""
    db = settings.DATABASES["default"]
    ident = f"{settings.REDIS_PREFIX}|{db.get('HOST') or ''}|{db.get('NAME')}"
    return "d" + hashlib.sha1(ident.encode()).hexdigest()[:6]


def battery_run_id(run_id: int) -> str:
    """The battery's run id of run `run_id`: `<deployment tag>-<run id>`."""
    return f"{deployment_tag()}-{run_id}"


def cluster_spec(cluster: Cluster) -> Any:
    kwargs: dict[str, Any] = {
        "name": cluster.name,
        "plugin_slug": cluster.plugin.slug,
        "plugin_in_tree": cluster.plugin.in_tree,
        "implements_network_policy": cluster.plugin.implements_network_policy,
        "kubenet": cluster.kubenet or cluster.plugin.slug == "kubenet",
        "declared_proxier": cluster.proxier,
        "node_access": cluster.node_access,
        "load_balancer": cluster.load_balancer,
        "agnhost_image": cluster.agnhost_image or settings.AGNHOST_IMAGE,
    }
    spec = ClusterSpec(**kwargs)
    if cluster.timeouts:
        known = {f.name: f.type for f in dataclasses.fields(spec.timeouts)}
        overrides = {
            name: (int(value) if isinstance(getattr(spec.timeouts, name), int) else float(value))
            for name, value in cluster.timeouts.items()
            if name in known
        }
        spec.timeouts = dataclasses.replace(spec.timeouts, **overrides)
    return spec
