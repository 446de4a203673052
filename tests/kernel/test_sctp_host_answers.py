"""The worker host's SCTP: what it reports without kernel SCTP (this machine), and, with the
SCTP socket replaced at one seam (the kernel here has none), each answer sctp_connect gives."""

from __future__ import annotations

import socket
import sys
import types

import pytest

from kernel import sctp_host


class FakeSocket:
    def __init__(self, outcome: BaseException | None = None) -> None:
        self.outcome = outcome
        self.closed = False

    def settimeout(self, timeout: float) -> None:
        self.timeout = timeout

    def connect(self, address: object) -> None:
        if self.outcome is not None:
            raise self.outcome

    def close(self) -> None:
        self.closed = True


def test_without_kernel_sctp_the_worker_says_why():
    found = sctp_host.check_worker_sctp()
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP).close()
    except OSError:
        assert found["available"] is False and "kernel has no SCTP" in found["reason"]
    else:  # a kernel with SCTP (the guest, a real worker)
        assert found["available"] is True


def kernel_with_sctp(monkeypatch) -> None:
    """The module's socket namespace, with a socket() that opens (only sctp_host sees it)."""
    fake = types.SimpleNamespace(
        socket=lambda *a: FakeSocket(),
        AF_INET=socket.AF_INET,
        SOCK_STREAM=socket.SOCK_STREAM,
        IPPROTO_SCTP=socket.IPPROTO_SCTP,
    )
    monkeypatch.setattr(sctp_host, "socket", fake)


def test_a_kernel_with_sctp_but_no_pysctp_is_not_available(monkeypatch):
    kernel_with_sctp(monkeypatch)
    monkeypatch.setitem(sys.modules, "sctp", None)  # import sctp raises ImportError
    found = sctp_host.check_worker_sctp()
    assert found["available"] is False and "pysctp is not importable" in found["reason"]


def test_a_kernel_with_sctp_and_pysctp_is_available(monkeypatch):
    kernel_with_sctp(monkeypatch)
    monkeypatch.setitem(sys.modules, "sctp", types.ModuleType("sctp"))
    assert sctp_host.check_worker_sctp()["available"] is True


def test_connect_names_a_host_that_does_not_resolve():
    ok, why = sctp_host.sctp_connect("no-such-host.invalid", 5060, 1)
    assert not ok and why.startswith("DNS: no-such-host.invalid")


def test_connect_without_pysctp_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "sctp", None)
    ok, why = sctp_host.sctp_connect("127.0.0.1", 5060, 1)
    assert not ok and why.startswith("OTHER: pysctp is not importable")


@pytest.mark.parametrize(
    ("outcome", "words"),
    [
        (TimeoutError(), "TIMEOUT: no SCTP association with 127.0.0.1:5060 within 1.5s"),
        (ConnectionRefusedError(111, "Connection refused"), "REFUSED: 127.0.0.1:5060"),
        (OSError(113, "No route to host"), "OTHER: 127.0.0.1:5060"),
        (None, "SCTP association with 127.0.0.1:5060 established from the worker"),
    ],
)
def test_connect_reads_each_answer_in_agnhosts_words(monkeypatch, outcome, words):
    made: list[FakeSocket] = []

    def sctpsocket_tcp(family: int) -> FakeSocket:
        made.append(FakeSocket(outcome))
        return made[-1]

    monkeypatch.setitem(sys.modules, "sctp", types.SimpleNamespace(sctpsocket_tcp=sctpsocket_tcp))
    ok, why = sctp_host.sctp_connect("127.0.0.1", 5060, 1.5)
    assert ok is (outcome is None) and why.startswith(words)
    assert made[0].closed and made[0].timeout == 1.5


def test_connect_says_when_the_worker_cannot_open_an_sctp_socket(monkeypatch):
    def refuse(family: int) -> None:
        raise OSError(93, "Protocol not supported")

    monkeypatch.setitem(sys.modules, "sctp", types.SimpleNamespace(sctpsocket_tcp=refuse))
    ok, why = sctp_host.sctp_connect("127.0.0.1", 5060, 1)
    assert not ok and why.startswith("OTHER: cannot open an SCTP socket on the worker")


def test_the_battery_package_refuses_unknown_names():
    import kernel.battery

    with pytest.raises(AttributeError):
        kernel.battery.no_such_thing  # noqa: B018
