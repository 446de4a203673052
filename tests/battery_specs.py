"""The battery as the tests run it on the lab: short timeouts, a healthy lab profile, and the
ClusterSpec a registration of a profile would declare (the battery, agent, RBAC and lab tests)."""

from __future__ import annotations

import dataclasses
from typing import Any

from kernel.battery import ClusterSpec, Timeouts
from tests import labtools

FAST = Timeouts.for_lab()


def profile(**changes: Any) -> dict[str, Any]:
    """A healthy three-node (two workers) calico/iptables cluster with a load balancer, changed as asked."""
    faults = {"pod_start_delay_s": 0.01, **changes.pop("faults", {})}
    return labtools.profile(
        **{"name": "lab", "load_balancer": True, "seed": 7, "faults": faults, **changes}
    )


def spec_for(prof: dict[str, Any], **changes: Any) -> ClusterSpec:
    """The ClusterSpec a registration of this profile would declare (honestly, by default)."""
    spec = ClusterSpec(
        name=prof["name"],
        plugin_slug=prof["plugin"],
        plugin_in_tree=prof["plugin"] == "kubenet",
        implements_network_policy=prof["dataplane"]["network_policy"] != "none",
        kubenet=prof["kubenet"],
        declared_proxier=prof["proxier"],
        node_access=prof["node_access"],
        load_balancer=prof["load_balancer"],
        timeouts=FAST,
    )
    return dataclasses.replace(spec, **changes)
