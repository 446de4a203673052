"""The domain's vocabulary, defined once: catalog test keys, criteria, the conformance extras,
batteries, outcomes, proxier modes, stages and criterion statuses (contract: Vocabulary).

Plain Python (no Django, no kubernetes client), so every room imports it: the battery and the
probe on a worker or in a vendor's cluster, the lab, ingest and the dashboard. The dashboard's
model choices (dashboard.domain.catalog) are built from these enums.
"""

from __future__ import annotations

from enum import StrEnum


class Key(StrEnum):
    """The KEP-614 Test Plan, in catalog order."""

    DECLARE_SCTP_PORTS = "declare-sctp-ports"
    HOSTPORT_KUBENET = "hostport-kubenet"
    SERVICE_IPTABLES_RULES = "service-iptables-rules"
    NETPOL_SCTP_BLOCKS_TCP_UDP = "netpol-sctp-blocks-tcp-udp"
    POD_TO_POD = "pod-to-pod"
    POD_TO_SERVICE = "pod-to-service"
    POD_TO_LOADBALANCER = "pod-to-loadbalancer"
    NETPOL_ALLOW_DENY = "netpol-allow-deny"


class Criterion(StrEnum):
    """The graduation criteria of KEP-614, in the order the transitions list them."""

    TESTS_WRITTEN = "tests-written"
    PERIODIC_BASIC_PASSING = "periodic-basic-passing"
    TWO_OUT_OF_TREE_PLUGINS = "two-out-of-tree-plugins"
    IPTABLES_AND_IPVS = "iptables-and-ipvs"


class Extra(StrEnum):
    """Checks reported beside the catalog, never a criterion: the basic battery's TCP/UDP
    conformance checks, and the connectivity battery's secondary IP family (upstream's own
    dual-stack spec, kept apart from pod-to-service)."""

    CONFORMANCE_TCP = "conformance-tcp-pod-to-service"
    CONFORMANCE_UDP = "conformance-udp-pod-to-service"
    SECONDARY_FAMILY = "pod-to-service-secondary-family"


BASIC_EXTRAS: tuple[str, ...] = (Extra.CONFORMANCE_TCP, Extra.CONFORMANCE_UDP)
CONNECTIVITY_EXTRAS: tuple[str, ...] = (Extra.SECONDARY_FAMILY,)


class Battery(StrEnum):
    BASIC = "basic"
    CONNECTIVITY = "connectivity"
    ALL = "all"
    # Upstream's own e2e.test of the cluster's minor, focused on its SCTP specs (workers/upstream.py).
    UPSTREAM = "upstream"


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"
    NOT_RUN = "not_run"


class Proxier(StrEnum):
    IPTABLES = "iptables"
    IPVS = "ipvs"
    NFTABLES = "nftables"


class Stage(StrEnum):
    ALPHA = "alpha"
    BETA = "beta"
    STABLE = "stable"


class CriterionStatus(StrEnum):
    MET = "met"
    UNMET = "unmet"
    AT_RISK = "at_risk"
    STALE = "stale"


BASIC_KEYS: tuple[str, ...] = (
    Key.DECLARE_SCTP_PORTS,
    Key.HOSTPORT_KUBENET,
    Key.SERVICE_IPTABLES_RULES,
    Key.NETPOL_SCTP_BLOCKS_TCP_UDP,
)
CONNECTIVITY_KEYS: tuple[str, ...] = (
    Key.POD_TO_POD,
    Key.POD_TO_SERVICE,
    Key.POD_TO_LOADBALANCER,
    Key.NETPOL_ALLOW_DENY,
)
ALL_KEYS: tuple[str, ...] = BASIC_KEYS + CONNECTIVITY_KEYS
BATTERY_KEYS: dict[str, tuple[str, ...]] = {
    Battery.BASIC: BASIC_KEYS,
    Battery.CONNECTIVITY: CONNECTIVITY_KEYS,
    Battery.ALL: ALL_KEYS,
    # Keyed by catalog key like any run; a key with no upstream spec at the release is stored
    # not_run and never shown as an outcome of upstream (ingest.upstream_names.fed_keys).
    Battery.UPSTREAM: ALL_KEYS,
}
# The proxier modes kube-proxy has (and a demonstration can show), in the order pages list them.
PROXIERS: tuple[str, ...] = tuple(Proxier)
# The conformance extras each battery reports beside the catalog.
EXTRAS_OF: dict[str, tuple[str, ...]] = {
    Battery.BASIC: BASIC_EXTRAS,
    Battery.CONNECTIVITY: CONNECTIVITY_EXTRAS,
    Battery.ALL: BASIC_EXTRAS + CONNECTIVITY_EXTRAS,
    Battery.UPSTREAM: (),
}
# Batteries that run connectivity tests (and may load sctp.ko): a basic-only cluster refuses them.
LOADS_SCTP_MODULE: tuple[str, ...] = (Battery.CONNECTIVITY, Battery.ALL, Battery.UPSTREAM)
# Only these are verdicts; skipped, not_run and error never stand in for a pass.
VERDICTS: tuple[str, ...] = (Outcome.PASSED, Outcome.FAILED)


def battery_of(key: str) -> str:
    return Battery.BASIC if key in BASIC_KEYS else Battery.CONNECTIVITY
