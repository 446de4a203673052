"""Which catalog tests the battery implements, and where: readable without importing the battery
or the kubernetes client (the web process reads it to evaluate tests-written).

workers.battery.registry refuses to import when this map and its classes disagree, and a test
imports the registry, so the two cannot drift.
"""

from __future__ import annotations

import importlib.util

from workers.vocabulary import Key

IMPLEMENTED: dict[str, str] = {
    Key.DECLARE_SCTP_PORTS: "workers.battery.checks.declare_sctp_ports",
    Key.HOSTPORT_KUBENET: "workers.battery.checks.hostport_kubenet",
    Key.SERVICE_IPTABLES_RULES: "workers.battery.checks.service_iptables_rules",
    Key.NETPOL_SCTP_BLOCKS_TCP_UDP: "workers.battery.checks.netpol_sctp_blocks_tcp_udp",
    Key.POD_TO_POD: "workers.battery.checks.pod_to_pod",
    Key.POD_TO_SERVICE: "workers.battery.checks.pod_to_service",
    Key.POD_TO_LOADBALANCER: "workers.battery.checks.pod_to_loadbalancer",
    Key.NETPOL_ALLOW_DENY: "workers.battery.checks.netpol_allow_deny",
}


def implemented_keys() -> frozenset[str]:
    """The catalog keys whose module is present in this installation (found, not imported)."""
    return frozenset(
        key for key, module in IMPLEMENTED.items() if importlib.util.find_spec(module) is not None
    )
