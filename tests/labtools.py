"""Lab clusters registered as dashboard clusters, for tests that run real batteries."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dashboard.domain.lab_clusters import register
from dashboard.domain.models import Cluster

BASE_PROFILE: dict[str, Any] = {
    "name": "lab-calico",
    "plugin": "calico",
    "plugin_version": "3.28.0",
    "kubernetes_version": "1.31.2",
    "proxier": "iptables",
    "nodes": 3,
    "sctp_feature_gate": True,
    "node_access": True,
    "kubenet": False,
    "load_balancer": False,
    "sctp_module_loaded_at_start": False,
    "dataplane": {
        "pod_to_pod": True,
        "via_service": True,
        "via_load_balancer": True,
        "network_policy": "full",
        "via_node_port": True,
        "endpoints_reachable": "all",
        "namespace_selector": True,
    },
    # `cni` and `kube_proxy` are left out on purpose: they default to `plugin` and `proxier`.
    "admission": {"privileged_pods": "allow"},
    "faults": {},
}


def profile(**overrides: Any) -> dict[str, Any]:
    p = {
        **BASE_PROFILE,
        "dataplane": dict(BASE_PROFILE["dataplane"]),
        "faults": {},
        "admission": dict(BASE_PROFILE["admission"]),
    }
    for key, value in overrides.items():
        if key in ("dataplane", "faults", "admission"):
            p[key].update(value)
        else:
            p[key] = value
    return p


@contextmanager
def lab_clusters(*profiles: dict[str, Any]) -> Iterator[tuple[Any, dict[str, Cluster]]]:
    """Starts a LabServer for the profiles and registers them; yields (server, {name: Cluster})."""
    from lab.server import LabServer

    server = LabServer(list(profiles or [profile()])).start()
    try:
        clusters = register(server)
        yield server, {c.name: c for c in clusters}
    finally:
        server.stop()
