"""IP families of an emulated cluster (profile `ip_families`).

The lab keeps one IPv4 address per pod, Service and node internally; on a dual-stack or IPv6
cluster each also has an IPv6 address, derived one-to-one inside fd00:10::/96 (so
10.244.1.3 is fd00:10::af4:103). The API shows the families the profile names, in its order
(the first is the primary), and the dataplane maps an IPv6 address back to the object.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Protocol


class Profiled(Protocol):
    """Anything that carries the cluster's profile (the cluster, its runtime, its nodes)."""

    @property
    def profile(self) -> dict[str, Any]: ...


V6_BASE = int(ipaddress.IPv6Address("fd00:10::"))
V6_NET = ipaddress.ip_network("fd00:10::/96")


def families(cluster: Profiled) -> list[str]:
    return list(cluster.profile.get("ip_families") or ["IPv4"])


def to_v6(v4: str) -> str:
    return str(ipaddress.IPv6Address(V6_BASE + int(ipaddress.IPv4Address(v4))))


def present(cluster: Profiled, v4: str, family: str) -> str:
    """The address of this family for an internal IPv4 address."""
    return to_v6(v4) if family == "IPv6" else v4


def addresses(cluster: Profiled, v4: str) -> list[str]:
    """Every family's address, primary first (pod status podIPs, node InternalIPs)."""
    return [present(cluster, v4, f) for f in families(cluster)]


def unmap(cluster: Profiled, host: str) -> tuple[str, str | None]:
    """(internal IPv4 address, family) of an address a client dialled; family None when the
    address is not one of the cluster's (or not an address)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host, None
    if ip.version == 4:
        return host, "IPv4" if "IPv4" in families(cluster) else None
    if ip in V6_NET and "IPv6" in families(cluster):
        return str(ipaddress.IPv4Address(int(ip) - V6_BASE)), "IPv6"
    return host, None


def is_secondary(cluster: Profiled, family: str | None) -> bool:
    fams = families(cluster)
    return family is not None and len(fams) > 1 and family == fams[1]


def service_families(cluster: Profiled, spec: dict[str, Any]) -> list[str]:
    """ipFamilies the apiserver gives a Service: its policy over the cluster's families."""
    fams = families(cluster)
    policy = spec.get("ipFamilyPolicy") or "SingleStack"
    wanted = [f for f in spec.get("ipFamilies") or [] if f in fams]
    if policy in ("PreferDualStack", "RequireDualStack") and len(fams) > 1:
        first = wanted[0] if wanted else fams[0]
        return [first, next(f for f in fams if f != first)]
    return [wanted[0] if wanted else fams[0]]
