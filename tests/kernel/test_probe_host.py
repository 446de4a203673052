"""The node preflight on this machine (no kernel SCTP) and the probe's echo client/server."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kernel import probe
from tests.ports import free_port

REPO = Path(__file__).resolve().parent.parent.parent


def _host_has_sctp() -> bool:
    protocols = Path("/proc/net/protocols")
    if protocols.exists() and "SCTP" in protocols.read_text():
        return True
    moddir = Path("/lib/modules") / platform.release()
    return moddir.is_dir() and any(moddir.rglob("sctp.ko*"))


needs_no_sctp = pytest.mark.skipif(_host_has_sctp(), reason="this host has kernel SCTP")


@needs_no_sctp
def test_check_says_sctp_is_unavailable_here_with_the_errno_and_exits_non_zero() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kernel.probe", "check", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"] == "unavailable"
    assert report["ok"] is False
    assert report["module"]["loaded"] is False
    assert report["sockets"]["attempted"] is True
    assert report["sockets"]["plain_stream"].startswith(("errno 93", "errno 94"))
    assert "errno 9" in report["reason"] and "no sctp.ko" in report["reason"]


@needs_no_sctp
def test_check_prints_a_human_summary_naming_the_reason() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kernel.probe", "check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0]
    assert first.startswith("SCTP on this node: UNAVAILABLE - cannot open an SCTP socket: errno 9")


def test_check_does_not_open_a_socket_when_that_would_load_sctp_ko(tmp_path: Path) -> None:
    moddir = tmp_path / platform.release() / "kernel" / "net" / "sctp"
    moddir.mkdir(parents=True)
    (moddir / "sctp.ko").write_bytes(b"")
    module = probe.ModuleFacts(
        kernel=platform.release(), available=True, path=str(moddir / "sctp.ko")
    )
    facts = probe.socket_facts(module, force=False)
    assert facts.attempted is False
    assert "would load sctp.ko" in (facts.skipped_reason or "")
    verdict, reason = probe._verdict(module, facts)
    assert verdict == "loadable" and "not loaded" in reason


@needs_no_sctp
def test_without_a_module_tree_or_modinfo_the_check_says_unknown_not_loadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A VM image without /lib/modules/<kernel> and without kmod: nothing shows sctp.ko, and
    # the socket test is skipped (it could load the module), so nothing shows SCTP works.
    monkeypatch.setattr(probe.shutil, "which", lambda name: None)
    report = probe.check(modules_root=str(tmp_path))
    assert report.module.available is None and report.sockets.attempted is False
    assert report.verdict == "unknown" and report.ok is False
    assert "(None)" not in report.reason
    assert probe.main(["check", "--modules-root", str(tmp_path)]) == 2
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("SCTP on this node: UNKNOWN - cannot tell: no module directory for")


def test_a_module_disabled_by_modprobe_config_is_unavailable() -> None:
    module = probe.ModuleFacts(
        kernel="6.1.0", available=True, path="/x/sctp.ko", disabled_by="install sctp /bin/true"
    )
    verdict, reason = probe._verdict(module, probe.SocketFacts())
    assert verdict == "unavailable" and "install sctp /bin/true" in reason


def test_proc_ip_vs_hex_entries_are_read_as_sctp_services() -> None:
    text = (
        "IP Virtual Server version 1.2.1 (size=4096)\n"
        "Prot LocalAddress:Port Scheduler Flags\n"
        "  -> RemoteAddress:Port Forward Weight ActiveConn InActConn\n"
        "SCTP  0A60000B:0060 rr\n"
        "  -> 0A000202:1F92      Masq    1      0          0\n"
        "TCP  0A600001:01BB rr\n"
        "  -> C0A80002:192B      Masq    1      0          0\n"
    )
    assert probe._proc_ip_vs_sctp(text) == [
        {"vip": "10.96.0.11", "port": 96, "scheduler": "rr", "reals": [["10.0.2.2", 8082, "Masq"]]}
    ]


def test_connect_says_refused_when_nothing_listens() -> None:
    assert probe.connect(f"127.0.0.1:{free_port()}", "tcp", 2.0) == (1, "REFUSED")


def test_connect_says_dns_for_an_unresolvable_host() -> None:
    assert probe.connect("no-such-host.invalid:80", "tcp", 2.0) == (1, "DNS")


@pytest.mark.parametrize("protocol", ["tcp", "udp"])
def test_serve_and_connect_echo_with_the_server_name(protocol: str, tmp_path: Path) -> None:
    port = free_port()
    ready = tmp_path / "ready"
    server = threading.Thread(
        target=probe.serve,
        daemon=True,
        args=("127.0.0.1", port, [protocol], str(ready), 3.0, "srv1"),
    )
    server.start()
    for _ in range(100):
        if ready.exists():
            break
        threading.Event().wait(0.02)
    try:
        assert probe.connect(f"127.0.0.1:{port}", protocol, 2.0) == (0, "OK from srv1")
    finally:
        server.join(timeout=5)
