"""The node probe's edges, called in this process (the subprocess and guest tests cover its
commands end to end): tool runs that fail, the echo client's failure words, argument errors,
and a server that cannot bind."""

from __future__ import annotations

import socket
import threading
from collections import namedtuple
from dataclasses import dataclass

import pytest

from kernel import probe
from tests.ports import free_port


def test_a_missing_or_hanging_tool_is_told_apart() -> None:
    assert probe._run(["/nonexistent/ipvsadm", "-Ln"]) == (127, "")
    assert probe._run(["sleep", "5"], timeout=0.1) == (124, "")
    assert probe._run(["sh", "-c", "echo out; echo err >&2; exit 3"]) == (3, "out\nerr\n")


def test_ipvs_services_of_any_parser_shape_become_plain_dicts() -> None:
    Service = namedtuple("Service", "vip port reals")

    @dataclass
    class Dataclassed:
        vip: str
        port: int
        reals: list

    class Plain:
        def __init__(self) -> None:
            self.vip, self.port, self.reals = "10.0.0.3", 80, [("10.1.0.3", 8080)]

    for service in (
        Service("10.0.0.1", 80, [("10.1.0.1", 8080)]),
        Dataclassed("10.0.0.2", 80, [("10.1.0.2", 8080)]),
        Plain(),
    ):
        data = probe._ipvs_dict(service)
        assert data["port"] == 80 and isinstance(data["reals"][0], list)


def test_an_ipv6_proc_address_keeps_its_text() -> None:
    assert probe._hexaddr("[FD00::1]:0050") == ("[FD00::1]", 80)


def test_the_proxier_facts_of_this_host_name_each_tool() -> None:
    facts = probe.proxier_facts(ipvs_loaded=False)
    assert set(facts.tools) == {"iptables-save", "ipvsadm", "nft"}
    assert all(
        v == "absent" or v == "ok" or v.startswith(("exit ", "skipped"))
        for v in facts.tools.values()
    )


def test_the_echo_client_names_each_failure() -> None:
    closed = free_port()
    assert probe.connect(f"127.0.0.1:{closed}", "tcp", 1.0) == (1, "REFUSED")
    assert probe.connect("127.0.0.1:not-a-port", "tcp", 1.0) == (1, "DNS")
    assert probe.connect(f"127.0.0.1:{closed}", "udp", 1.0) in ((1, "REFUSED"), (1, "TIMEOUT"))


def test_connect_over_sctp_without_kernel_sctp_says_why() -> None:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP).close()
    except OSError:
        status, word = probe.connect(f"127.0.0.1:{free_port()}", "sctp", 1.0)
        assert status == 1 and word.startswith("OTHER: errno 9")
    else:
        pytest.skip("this host has kernel SCTP")


def test_the_command_line_connects_several_times_and_fails_if_any_fails(capsys) -> None:
    assert (
        probe.main(
            [
                "connect",
                f"127.0.0.1:{free_port()}",
                "--protocol",
                "tcp",
                "--timeout",
                "0.5s",
                "--count",
                "2",
            ]
        )
        == 1
    )
    assert capsys.readouterr().out.splitlines() == ["REFUSED", "REFUSED"]


def test_serve_refuses_unknown_protocols() -> None:
    with pytest.raises(SystemExit):
        probe.main(["serve", "--port", str(free_port()), "--protocols", "tcp,quic"])


def test_serve_says_when_it_cannot_bind_and_echoes_otherwise(tmp_path, capsys) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        assert probe.serve("127.0.0.1", taken.getsockname()[1], ["tcp"], None, 0.1, "") == 1
    assert "cannot bind tcp" in capsys.readouterr().err
    port, ready = free_port(), tmp_path / "ready"
    answers: list[int] = []
    server = threading.Thread(
        target=lambda: answers.append(
            probe.serve("127.0.0.1", port, ["tcp", "udp"], str(ready), 1.5, "node-a")
        )
    )
    server.start()  # not the main thread: it installs no signal handlers in the test process
    try:
        for _ in range(100):
            if ready.exists():
                break
            threading.Event().wait(0.02)
        assert probe.connect(f"127.0.0.1:{port}", "tcp", 2.0) == (0, "OK from node-a")
        assert probe.connect(f"127.0.0.1:{port}", "udp", 2.0) == (0, "OK from node-a")
    finally:
        server.join(timeout=5)
    assert answers == [0]
