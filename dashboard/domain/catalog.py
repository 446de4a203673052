"""The vocabulary of the domain (contract §Vocabulary) and the catalog of the KEP-614 tests.

The catalog rows are seeded from CATALOG by a data migration; this module is the one place
that names keys, batteries, outcomes and criteria.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from django.db import models

from kernel import vocabulary as vocab
from kernel.vocabulary import Criterion, Key


def _choices(enum: type[StrEnum], label: Callable[[str], str]) -> Any:
    """The model field choices of one vocabulary enum: the same members, with labels."""
    members = [(m.name, (m.value, label(m.value))) for m in enum]
    # Django's functional form (Enum's); django-stubs types only its one-string variant.
    return models.TextChoices(enum.__name__, members)  # type: ignore[call-overload]


def _spaced(value: str) -> str:
    return value.replace("_", " ")


# The model choices of the vocabulary (kernel.vocabulary), member for member: written there only.
Battery = _choices(vocab.Battery, str.capitalize)
Outcome = _choices(vocab.Outcome, _spaced)
Proxier = _choices(vocab.Proxier, _spaced)
Stage = _choices(vocab.Stage, _spaced)
CriterionStatus = _choices(vocab.CriterionStatus, _spaced)


# The keys themselves live in kernel.vocabulary (the battery and ingest use them too).
BASIC_KEYS = vocab.BASIC_KEYS
CONNECTIVITY_KEYS = vocab.CONNECTIVITY_KEYS
ALL_KEYS = vocab.ALL_KEYS


def keys_of(battery: str) -> tuple[str, ...]:
    return vocab.BATTERY_KEYS.get(battery, ALL_KEYS)


# The catalog as the KEP's Test Plan states it. `upstream_names` are the core names (tags
# stripped) of the upstream e2e tests that feed each entry; dashboard/domain/ingest holds the full,
# per-release mapping.
_ENTRIES: dict[Key, dict[str, Any]] = {
    Key.DECLARE_SCTP_PORTS: {
        "title": "Pods, Services, and NetworkPolicies can declare SCTP ports",
        "tags": ["Feature:SCTP"],
        "kep_text": "Just checks that resources can be created using SCTP as a Protocol value.",
        "upstream_names": [
            "[sig-network] Services should allow creating a basic SCTP service with pod and endpoints",
            "[sig-network] SCTP should allow creating a basic SCTP service with pod and endpoints",
        ],
    },
    Key.HOSTPORT_KUBENET: {
        "title": "Pods can declare SCTP HostPorts when using kubenet",
        "tags": ["Feature:SCTP"],
        "kep_text": "Confirms that adding an SCTP HostPort creates an appropriate iptables rule. "
        "Will be Skipped if SSH is not available or kubenet is not in use.",
        "upstream_names": [
            "[sig-network] Networking should allow creating a Pod with an SCTP HostPort",
            "[sig-network] SCTP should create a Pod with SCTP HostPort",
        ],
    },
    Key.SERVICE_IPTABLES_RULES: {
        "title": "Services can declare SCTP ServicePorts when using the iptables proxier",
        "tags": ["Feature:SCTP"],
        "kep_text": "Confirms that appropriate iptables rules are created for SCTP services. "
        "Will be Skipped if SSH is not available or the iptables proxier is not in use.",
        "upstream_names": ["[sig-network] SCTP should create a ClusterIP Service with SCTP ports"],
        "upstream_note": (
            "No upstream spec today: upstream's \"should create a ClusterIP Service with SCTP "
            'ports" is gone (not at v1.34.4 … v1.37.2); this check is ours, kept because the '
            "KEP's test plan names it."
        ),
    },
    Key.NETPOL_SCTP_BLOCKS_TCP_UDP: {
        "title": "A NetworkPolicy matching an SCTP port does not allow TCP or UDP traffic",
        "tags": ["Feature:SCTP", "Feature:NetworkPolicy"],
        "kep_text": "A policy that allows only SCTP to a port must not let TCP or UDP to that port through.",
        "upstream_names": [
            (
                "[sig-network] Netpol NetworkPolicy between server and client should properly isolate pods "
                "that are selected by a policy allowing SCTP, even if the plugin doesn't support SCTP"
            ),
            (
                "[sig-network] Netpol NetworkPolicy between server and client should not mistakenly treat "
                "'protocol: SCTP' as 'protocol: TCP', even if the plugin doesn't support SCTP"
            ),
        ],
    },
    Key.POD_TO_POD: {
        "title": "A pod can connect directly to another pod via SCTP",
        "tags": ["Feature:SCTPConnectivity", "Disruptive"],
        "kep_text": "SCTP between two pods, by pod IP.",
        "upstream_names": [
            "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: sctp",
            "[sig-network] Networking Granular Checks: Pods should function for node-pod communication: sctp",
        ],
    },
    Key.POD_TO_SERVICE: {
        "title": "A pod can connect to another pod via SCTP via a Service IP",
        "tags": ["Feature:SCTPConnectivity", "Disruptive"],
        "kep_text": "SCTP from a pod to a ClusterIP Service backed by another pod.",
        "upstream_names": [
            "[sig-network] Networking Granular Checks: Services should function for pod-Service: sctp",
            "[sig-network] Networking Granular Checks: Services should function for node-Service: sctp",
            "[sig-network] Networking Granular Checks: Services should function for endpoint-Service: sctp",
            (
                "[sig-network] [Feature:IPv6DualStack] Granular Checks: Services Secondary IP Family "
                "should function for pod-Service: sctp"
            ),
        ],
    },
    Key.POD_TO_LOADBALANCER: {
        "title": "A pod can connect to another pod via SCTP via a Load Balancer",
        "tags": ["Feature:SCTPConnectivity", "Disruptive"],
        "kep_text": "SCTP through a LoadBalancer Service. Skipped on bare metal or clouds without "
        "SCTP load balancers.",
        "upstream_names": [],
        "upstream_note": (
            "No upstream spec: upstream has no SCTP LoadBalancer spec (v1.34.4 … v1.37.2); "
            "this check is ours alone."
        ),
    },
    Key.NETPOL_ALLOW_DENY: {
        "title": "NetworkPolicy can be used to allow or deny traffic to SCTP ports",
        "tags": ["Feature:SCTPConnectivity", "Feature:NetworkPolicy", "Disruptive"],
        "kep_text": "A NetworkPolicy can allow SCTP to a port and deny it otherwise.",
        "upstream_names": [
            (
                "[sig-network] Netpol NetworkPolicy between server and client using SCTP should support "
                "a 'default-deny-ingress' policy"
            ),
            (
                "[sig-network] Netpol NetworkPolicy between server and client using SCTP should enforce "
                "policy based on Ports"
            ),
            (
                "[sig-network] Netpol NetworkPolicy between server and client using SCTP should enforce "
                "policy to allow traffic only from a pod in a different namespace based on PodSelector "
                "and NamespaceSelector"
            ),
        ],
    },
}
# Built from the enum: every key has its entry, in the vocabulary's order.
CATALOG: list[dict[str, Any]] = [
    {"key": key, "battery": vocab.battery_of(key), **_ENTRIES[key]} for key in Key
]

# The newest Kubernetes release whose upstream SCTP test names the ingest mapping knows
# (dashboard/domain/ingest/upstream_names.RELEASES ends there; a test keeps the two in step).
NEWEST_KNOWN_MINOR = 37
# The evidence policy's default release floor: three minors below the newest known release.
DEFAULT_MIN_MINOR = NEWEST_KNOWN_MINOR - 3

_MINOR_RE = re.compile(r"^\s*v?1\.(\d{1,3})(?:\D|$)")


def newer_than_known(minor: int | None) -> str:
    """What the product says of a release newer than the catalog knows ("" for any other): its
    SCTP specs are read with the newest known release's names (matched on their text without
    tags), and a spec renamed since shows as not in the catalog mapping, never as another test."""
    if minor is None or minor <= NEWEST_KNOWN_MINOR:
        return ""
    return (
        f"Kubernetes 1.{minor} is newer than the releases whose upstream SCTP spec names this "
        f"dashboard knows (1.19 to 1.{NEWEST_KNOWN_MINOR}): its names were mapped with "
        f"1.{NEWEST_KNOWN_MINOR}'s"
    )


def kubernetes_minor(version: str | None) -> int | None:
    """The minor of a "1.31.2" / "v1.31.0-gke.1" style version; None when it is not one."""
    m = _MINOR_RE.match(version or "")
    return int(m.group(1)) if m else None


def parse_minor_setting(value: str | None) -> int:
    """READINESS_MIN_KUBERNETES ("1.32", "v1.32" or empty for the default) as a minor number."""
    if not (value or "").strip():
        return DEFAULT_MIN_MINOR
    minor = kubernetes_minor(value)
    if minor is None:
        raise ValueError(f"READINESS_MIN_KUBERNETES={value!r} is not a release like 1.32")
    return minor


def criterion_title(key: str) -> str:
    """The KEP's wording of a criterion (one place: TRANSITIONS)."""
    for t in TRANSITIONS:
        for k, title in t["criteria"]:
            if k == key:
                return str(title)
    raise KeyError(key)


# Transitions and the criteria that gate them, in display order.
TRANSITIONS: list[dict[str, Any]] = [
    {
        "from": "alpha",
        "to": "beta",
        "criteria": [
            (Criterion.TESTS_WRITTEN, "The e2e tests described in the Test Plan have been written"),
            (
                Criterion.PERIODIC_BASIC_PASSING,
                'A periodic job runs the "Basic Tests", and it passes',
            ),
        ],
    },
    {
        "from": "beta",
        "to": "stable",
        "criteria": [
            (
                Criterion.TWO_OUT_OF_TREE_PLUGINS,
                "At least 2 out-of-tree network plugins pass the [Feature:SCTPConnectivity] tests",
            ),
            (
                Criterion.IPTABLES_AND_IPVS,
                "Both iptables and ipvs proxiers demonstrated to work with SCTP",
            ),
        ],
    },
]

CLOUD_PLUGINS: list[dict[str, Any]] = [
    {
        "slug": "amazon-vpc-cni",
        "name": "Amazon VPC CNI",
        "in_tree": False,
        "implements_network_policy": True,
    },
    {"slug": "azure-cni", "name": "Azure CNI", "in_tree": False, "implements_network_policy": True},
    {
        "slug": "gke-dataplane-v2",
        "name": "GKE Dataplane V2",
        "in_tree": False,
        "implements_network_policy": True,
    },
]

SEED_PLUGINS: list[dict[str, Any]] = [
    {"slug": "kubenet", "name": "kubenet", "in_tree": True, "implements_network_policy": False},
    {"slug": "calico", "name": "Calico", "in_tree": False, "implements_network_policy": True},
    {"slug": "cilium", "name": "Cilium", "in_tree": False, "implements_network_policy": True},
    {
        "slug": "ovn-kubernetes",
        "name": "OVN-Kubernetes",
        "in_tree": False,
        "implements_network_policy": True,
    },
    {"slug": "antrea", "name": "Antrea", "in_tree": False, "implements_network_policy": True},
    {
        "slug": "kube-router",
        "name": "kube-router",
        "in_tree": False,
        "implements_network_policy": True,
    },
    {"slug": "flannel", "name": "Flannel", "in_tree": False, "implements_network_policy": False},
    # The cloud platforms' own CNIs (detected from their DaemonSets, kernel/cni.py), each
    # with its NetworkPolicy support: Amazon VPC CNI through its network policy agent (v1.14+,
    # EKS 1.25+), Azure CNI through Azure Network Policy Manager (or Cilium as its dataplane),
    # GKE Dataplane V2 always (Cilium-based, NetworkPolicy built in).
    *CLOUD_PLUGINS,
]


def seed(catalog_model: Any, plugin_model: Any) -> None:
    """Creates or refreshes the catalog and the contract's plugins (the seed migration calls it
    with its historical models, hence Any; tests that flush the database call it again)."""
    for position, entry in enumerate(CATALOG):
        catalog_model.objects.update_or_create(
            key=entry["key"],
            defaults={
                k: entry[k] for k in ("title", "battery", "tags", "kep_text", "upstream_names")
            }
            | {"position": position},
        )
    for plugin in SEED_PLUGINS:
        plugin_model.objects.get_or_create(slug=plugin["slug"], defaults=plugin)
