"""Uploads through POST /api/v1/submissions/ as the tests send them: the four SCTP connectivity
tests' upstream names, a JUnit of them, and the form with a vendor's token."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from tests.conftest import auth
from tests.domain.ingest import builders as b

SCTP = {
    "pod-to-pod": "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: sctp [LinuxOnly] [Feature:SCTPConnectivity]",
    "pod-to-service": "[sig-network] Networking Granular Checks: Services should function for pod-Service: sctp [Feature:SCTPConnectivity]",
    "netpol-allow-deny": "[sig-network] Netpol [Feature:SCTPConnectivity] [LinuxOnly] NetworkPolicy between server and client using SCTP should support a 'default-deny-ingress' policy [Feature:NetworkPolicy]",
    "declare-sctp-ports": "[sig-network] Services should allow creating a basic SCTP service with pod and endpoints [LinuxOnly] [Serial]",
}


def connectivity_junit(status: str = "passed", salt: str = "") -> bytes:
    cases = [(name, status) for name in SCTP.values()] + [
        (f"[sig-node] unrelated {salt}", "passed")
    ]
    return b.junit_v2(cases)


def post(client, token, data: bytes, name: str = "junit_01.xml", **fields):
    form = {
        "plugin": "calico",
        "plugin_version": "3.28.0",
        "kubernetes_version": "1.34.2",
        "proxier": "iptables",
        **fields,
    }
    if data is not None:
        form["file"] = SimpleUploadedFile(name, data)
    return client.post("/api/v1/submissions/", form, **auth(token))
