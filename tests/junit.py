"""A small e2e JUnit with the SCTP tests of v1.30, for upload tests (pages and browser)."""

from __future__ import annotations

from tests.domain.ingest.builders import junit_v2

SCTP_V130 = [
    "[sig-network] Services should allow creating a basic SCTP service with pod and endpoints [LinuxOnly] [Serial]",
    "[sig-network] Networking should allow creating a Pod with an SCTP HostPort [LinuxOnly] [Serial]",
    (
        "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: sctp "
        "[LinuxOnly] [Feature:SCTPConnectivity]"
    ),
    (
        "[sig-network] Networking Granular Checks: Services should function for pod-Service: sctp "
        "[Feature:SCTPConnectivity]"
    ),
    (
        "[sig-network] Netpol [Feature:SCTPConnectivity] [LinuxOnly] NetworkPolicy between server and client "
        "using SCTP should enforce policy based on Ports [Feature:NetworkPolicy]"
    ),
]


def sctp_junit(hostport: str = "skipped", extra: str = "") -> bytes:
    statuses = ["passed", hostport, "passed", "passed", "passed"]
    cases = list(zip(SCTP_V130, statuses, strict=True))
    if extra:
        cases.append((f"[sig-network] unrelated {extra}", "passed"))
    return junit_v2(cases)
