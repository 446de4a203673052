"""The catalog: test keys in catalog order, mapped to their classes, and the batteries."""

from __future__ import annotations

from kernel import vocabulary
from kernel.battery.base import BatteryTest
from kernel.battery.checks.conformance import EXTRA_BASIC
from kernel.battery.checks.declare_sctp_ports import DeclareSctpPorts
from kernel.battery.checks.hostport_kubenet import HostportKubenet
from kernel.battery.checks.netpol_allow_deny import NetpolAllowDeny
from kernel.battery.checks.netpol_sctp_blocks_tcp_udp import NetpolSctpBlocksTcpUdp
from kernel.battery.checks.pod_to_loadbalancer import PodToLoadBalancer
from kernel.battery.checks.pod_to_pod import PodToPod
from kernel.battery.checks.pod_to_service import PodToService
from kernel.battery.checks.pod_to_service_secondary_family import PodToServiceSecondaryFamily
from kernel.battery.checks.service_iptables_rules import ServiceIptablesRules
from kernel.battery.implemented import IMPLEMENTED

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
BASIC_KEYS: tuple[str, ...] = vocabulary.BASIC_KEYS
CONNECTIVITY_KEYS: tuple[str, ...] = vocabulary.CONNECTIVITY_KEYS
BATTERIES: dict[str, tuple[str, ...]] = dict(vocabulary.BATTERY_KEYS)

# The catalog is the vocabulary's; the classes must implement exactly it, in its batteries, and
# implemented.IMPLEMENTED (what the web process reads without importing this) must agree.
if tuple(REGISTRY) != vocabulary.ALL_KEYS or any(
    t.battery != vocabulary.battery_of(t.key) for t in _TESTS
):
    raise ImportError("kernel.battery.registry does not implement the catalog of kernel.vocabulary")
if {k: t.__module__ for k, t in REGISTRY.items()} != IMPLEMENTED:
    raise ImportError("kernel.battery.implemented.IMPLEMENTED disagrees with the registry")

# Network conformance checks the basic battery adds after the catalog tests (KEP: "a few other
# network conformance tests"); reported separately, never part of a criterion.
EXTRAS: dict[str, type[BatteryTest]] = {
    test.key: test for test in [*EXTRA_BASIC, PodToServiceSecondaryFamily]
}
EXTRAS_OF = vocabulary.EXTRAS_OF
