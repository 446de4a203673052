"""SCTP on the worker host itself: can it open SCTP sockets, and connect out-of-cluster.

The pod-to-loadbalancer test prefers a client outside the cluster (the worker), which is
what a real user of an SCTP load balancer is; it can only do so when the worker's kernel
has SCTP, which container hosts and CI machines often lack.
"""

from __future__ import annotations

import importlib.metadata
import socket
from typing import Any


def _pysctp_version() -> str | None:
    try:
        return importlib.metadata.version("pysctp")
    except importlib.metadata.PackageNotFoundError:
        return None


def check_worker_sctp() -> dict[str, Any]:
    """{"available", "reason", "pysctp_version"} for this host's kernel and pysctp."""
    version = _pysctp_version()
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)
    except OSError as exc:
        return {
            "available": False,
            "reason": "kernel has no SCTP: socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP) "
            f"failed: {exc}",
            "pysctp_version": version,
        }
    probe.close()
    try:
        import sctp  # noqa: F401  (pysctp: bundles libsctp in its wheel)
    except ImportError as exc:
        return {
            "available": False,
            "reason": f"pysctp is not importable: {exc}",
            "pysctp_version": version,
        }
    return {
        "available": True,
        "reason": "kernel SCTP and pysctp available",
        "pysctp_version": version,
    }


def sctp_connect(host: str, port: int, timeout: float) -> tuple[bool, str]:
    """Open (and close) one SCTP association to host:port; (ok, what happened).

    The detail uses agnhost connect's words (TIMEOUT, REFUSED, DNS, OTHER) so in-cluster
    and out-of-cluster evidence read alike.
    """
    try:
        import sctp  # deferred: pysctp is optional, and needs a kernel with SCTP to be useful
    except ImportError as exc:
        return False, f"OTHER: pysctp is not importable: {exc}"
    try:
        address = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
    except socket.gaierror as exc:
        return False, f"DNS: {host}: {exc}"
    try:
        sock = sctp.sctpsocket_tcp(socket.AF_INET)
    except OSError as exc:
        return False, f"OTHER: cannot open an SCTP socket on the worker: {exc}"
    try:
        sock.settimeout(timeout)
        sock.connect(address)
    except TimeoutError:  # socket.timeout is an alias since 3.10
        return False, f"TIMEOUT: no SCTP association with {host}:{port} within {timeout:g}s"
    except ConnectionRefusedError as exc:
        return False, f"REFUSED: {host}:{port}: {exc}"
    except OSError as exc:
        return False, f"OTHER: {host}:{port}: {exc}"
    finally:
        sock.close()
    return True, f"SCTP association with {host}:{port} established from the worker"
