"""Which catalog tests the battery implements, and where: readable without importing the battery
or the kubernetes client (the web process reads it to evaluate tests-written).

kernel.battery.registry refuses to import when this map and its classes disagree, and a test
imports the registry, so the two cannot drift.
"""

from __future__ import annotations

import importlib.util

from kernel.vocabulary import Key

IMPLEMENTED: dict[str, str] = {
    Key.DECLARE_SCTP_PORTS: "kernel.battery.checks.declare_sctp_ports",
    Key.HOSTPORT_KUBENET: "kernel.battery.checks.hostport_kubenet",
    Key.SERVICE_IPTABLES_RULES: "kernel.battery.checks.service_iptables_rules",
    Key.NETPOL_SCTP_BLOCKS_TCP_UDP: "kernel.battery.checks.netpol_sctp_blocks_tcp_udp",
    Key.POD_TO_POD: "kernel.battery.checks.pod_to_pod",
    Key.POD_TO_SERVICE: "kernel.battery.checks.pod_to_service",
    Key.POD_TO_LOADBALANCER: "kernel.battery.checks.pod_to_loadbalancer",
    Key.NETPOL_ALLOW_DENY: "kernel.battery.checks.netpol_allow_deny",
}


def implemented_keys() -> frozenset[str]:
    """The catalog keys whose module is present in this installation (found, not imported)."""
    return frozenset(
        key for key, module in IMPLEMENTED.items() if importlib.util.find_spec(module) is not None
    )
