"""The worker's own SCTP capability, tested for real on a kernel without SCTP."""

from __future__ import annotations

import socket

import pytest

from kernel.sctp_host import check_worker_sctp, sctp_connect


def kernel_has_sctp() -> bool:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP).close()
    except OSError:
        return False
    return True


no_sctp_only = pytest.mark.skipif(kernel_has_sctp(), reason="this kernel has SCTP")


@no_sctp_only
def test_a_kernel_without_sctp_is_reported_with_the_socket_error():
    result = check_worker_sctp()
    assert result["available"] is False
    assert result["reason"].startswith(
        "kernel has no SCTP: socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP) failed: [Errno 9"
    )
    assert result["pysctp_version"] == "0.7.3"


@no_sctp_only
def test_connecting_without_kernel_sctp_fails_with_a_reason_instead_of_raising():
    ok, detail = sctp_connect("127.0.0.1", 5060, timeout=1)
    assert ok is False
    assert detail.startswith("OTHER: cannot open an SCTP socket on the worker: [Errno 9")


def test_an_unresolvable_host_is_a_dns_failure():
    ok, detail = sctp_connect("no-such-host.invalid", 5060, timeout=1)
    assert (ok, detail.split(":")[0]) == (False, "DNS")
