"""The catalog: test keys in catalog order, mapped to their classes, and the batteries."""

from __future__ import annotations

from workers.battery.base import BatteryTest
from workers.battery.checks.conformance import EXTRA_BASIC
from workers.battery.checks.declare_sctp_ports import DeclareSctpPorts
from workers.battery.checks.hostport_kubenet import HostportKubenet
from workers.battery.checks.netpol_allow_deny import NetpolAllowDeny
from workers.battery.checks.netpol_sctp_blocks_tcp_udp import NetpolSctpBlocksTcpUdp
from workers.battery.checks.pod_to_loadbalancer import PodToLoadBalancer
from workers.battery.checks.pod_to_pod import PodToPod
from workers.battery.checks.pod_to_service import PodToService
from workers.battery.checks.service_iptables_rules import ServiceIptablesRules

_TESTS: list[type[BatteryTest]] = [
    DeclareSctpPorts,
    HostportKubenet,
    ServiceIptablesRules,
    NetpolSctpBlocksTcpUdp,
    PodToPod,
    PodToService,
    PodToLoadBalancer,
    NetpolAllowDeny,
]

REGISTRY: dict[str, type[BatteryTest]] = {test.key: test for test in _TESTS}
BASIC_KEYS: tuple[str, ...] = tuple(t.key for t in _TESTS if t.battery == "basic")
CONNECTIVITY_KEYS: tuple[str, ...] = tuple(t.key for t in _TESTS if t.battery == "connectivity")
BATTERIES: dict[str, tuple[str, ...]] = {
    "basic": BASIC_KEYS,
    "connectivity": CONNECTIVITY_KEYS,
    "all": BASIC_KEYS + CONNECTIVITY_KEYS,
}

# Network conformance checks the basic battery adds after the catalog tests (KEP: "a few other
# network conformance tests"); reported separately, never part of a criterion.
EXTRAS: dict[str, type[BatteryTest]] = {test.key: test for test in EXTRA_BASIC}
EXTRAS_OF: dict[str, tuple[str, ...]] = {"basic": tuple(EXTRAS), "connectivity": (), "all": tuple(EXTRAS)}
