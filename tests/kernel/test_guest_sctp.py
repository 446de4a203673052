"""Real kernel SCTP in a qemu guest: the probe on both ends, kube-proxy's three service paths,
a NetworkPolicy-like filter, module state, and the golden node outputs.

One boot for the whole module (session fixture): lab/guest/checks/sctp_paths.sh runs every
check and prints PASS/FAIL lines, which are echoed to the real stdout so CI logs show them
even under pytest's capture. Skipped with the reason when qemu (or, for a cold build, the
image tools) is missing.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kernel.battery import nodeparse
from lab.guest.golden import comparable
from lab.guest.harness import GuestResult, qemu_available
from tests.kernel.conclusions import iptables_conclusions, ipvs_conclusions, nft_conclusions
from tests.need import unavailable

pytestmark = pytest.mark.guest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "node"
CHECKS = [
    "module-not-loaded-at-boot",
    "probe-check-does-not-load-sctp",
    "socket-loads-sctp",
    "loopback-echo",
    "pod-to-pod-srv1",
    "pod-to-pod-srv2",
    "service-iptables",
    "service-iptables-balances",
    "service-ipvs",
    "service-ipvs-balances",
    "service-nftables",
    "service-nftables-balances",
    "netpol-before-tcp",
    "netpol-before-udp",
    "netpol-allows-sctp",
    "netpol-blocks-tcp",
    "netpol-blocks-udp",
    "netpol-other-pod-tcp",
]


_config: pytest.Config | None = None


def _say(text: str) -> None:
    # Pytest captures file descriptor 1 while fixtures run, so even sys.__stdout__ would not
    # reach the CI log: suspend the capture and write through the terminal reporter.
    capture = _config.pluginmanager.get_plugin("capturemanager") if _config else None
    reporter = _config.pluginmanager.get_plugin("terminalreporter") if _config else None
    if capture is None or reporter is None:
        if sys.__stdout__ is not None:
            sys.__stdout__.write(text + "\n")
            sys.__stdout__.flush()
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(text)


@pytest.fixture(scope="session")
def guest_run(pytestconfig: pytest.Config) -> GuestResult:
    global _config
    _config = pytestconfig
    ok, reason = qemu_available()
    if not ok:
        unavailable(f"kernel SCTP guest unavailable: {reason}")
    from lab.guest.harness import Guest

    started = time.monotonic()
    guest = Guest()
    result = guest.run("sh /opt/sctp-dashboard/lab/guest/checks/sctp_paths.sh", timeout=600)
    _say(
        f"\n[guest] image {guest.image_dir.name} (kernel {guest.manifest['kernel_release']}, "
        f"prepared in {guest.prepare_seconds} s), boot+checks {result.seconds} s "
        f"({result.accel}; {guest.accel_reason}), total {time.monotonic() - started:.1f} s"
    )
    for line in result.files.get("results.txt", "").splitlines():
        _say(f"[guest] {line}")
    if result.timed_out or "results.txt" not in result.files:
        _say(result.console[-3000:])
        _say(result.stderr[-3000:])
    return result


def _results(run: GuestResult) -> dict[str, str]:
    out = {}
    for line in run.files.get("results.txt", "").splitlines():
        _status, name, *_ = [*line.split(" ", 2), ""]
        out[name] = line
    return out


def test_the_guest_finished_its_checks_in_time(guest_run: GuestResult) -> None:
    assert not guest_run.timed_out, guest_run.console[-2000:]
    assert "results.txt" in guest_run.files, guest_run.stderr[-2000:]


@pytest.mark.parametrize("check", CHECKS)
def test_guest_check_passes(guest_run: GuestResult, check: str) -> None:
    line = _results(guest_run).get(check)
    assert line is not None, f"{check} did not run; stderr: {guest_run.stderr[-1500:]}"
    assert line.startswith("PASS "), line


def _report(run: GuestResult, name: str) -> dict[str, Any]:
    return json.loads(run.files[name])


def test_probe_in_the_guest_reports_loadable_before_and_usable_after_the_module_loads(
    guest_run: GuestResult,
) -> None:
    before, after = _report(guest_run, "check-before.json"), _report(guest_run, "check-after.json")
    assert before["verdict"] == "loadable" and before["sockets"]["attempted"] is False
    assert before["module"]["available"] is True and before["module"]["loaded"] is False
    assert after["verdict"] == "usable" and after["module"]["loaded"] is True
    assert after["sockets"]["plain_stream"] == "ok" and after["sockets"]["pysctp"] == "ok"


def test_probe_in_the_guest_finds_each_proxiers_sctp_rules(guest_run: GuestResult) -> None:
    ipt = _report(guest_run, "check-iptables.json")["proxier"]
    assert any("KUBE-SERVICES" in r and "--dport 95" in r for r in ipt["iptables_sctp_rules"])
    ipvs = _report(guest_run, "check-ipvs.json")
    assert [(s["vip"], s["port"]) for s in ipvs["proxier"]["ipvs_sctp_services"]] == [
        ("10.96.0.11", 96)
    ]
    assert [(s["vip"], s["port"]) for s in ipvs["ipvs"]["sctp_services"]] == [("10.96.0.11", 96)]
    nft = _report(guest_run, "check-nftables.json")["proxier"]
    assert [e[:2] for e in nft["nft_sctp_elements"]] == [["10.96.0.12", 97]]
    assert _report(guest_run, "check-after.json")["conntrack"] is not None


def test_fresh_golden_outputs_parse_like_the_committed_fixtures(guest_run: GuestResult) -> None:
    fresh = {
        k.removeprefix("golden/"): v for k, v in guest_run.files.items() if k.startswith("golden/")
    }

    def committed(name: str) -> str:
        return (FIXTURES / name).read_text()

    assert iptables_conclusions(fresh["iptables-save.txt"]) == iptables_conclusions(
        committed("iptables-save.txt")
    )
    assert ipvs_conclusions(fresh["ipvsadm-Ln.txt"]) == ipvs_conclusions(
        committed("ipvsadm-Ln.txt")
    )
    assert nft_conclusions(fresh["nft-list-ruleset.txt"]) == nft_conclusions(
        committed("nft-list-ruleset.txt")
    )
    for name in ("lsmod-before.txt", "lsmod-after.txt"):
        assert nodeparse.sctp_module_loaded(fresh[name]) == nodeparse.sctp_module_loaded(
            committed(name)
        )


@pytest.mark.parametrize(
    "name",
    # ipvsadm-Lnc.txt is left out: its entries depend on connection timing, not on the rules.
    ["iptables-save.txt", "ipvsadm-Ln.txt", "nft-list-ruleset.txt", "netpol-iptables-save.txt"],
)
def test_fresh_golden_text_equals_the_committed_fixture(guest_run: GuestResult, name: str) -> None:
    # Text, not only conclusions: normalised for timestamps, counters, expiry times,
    # ephemeral ports and hash order only (lab.guest.golden.comparable).
    fresh = guest_run.files[f"golden/{name}"]
    assert comparable(fresh) == comparable((FIXTURES / name).read_text())
