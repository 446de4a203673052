"""Upstream's kube-proxy in the qemu guest, against a real API server, carrying real SCTP.

`make guest-proxy` runs this module (marker `guestproxy`, opt-in: collected only when `-m`
names it, so `make test` leaves it out; it takes minutes under TCG). One control plane of its
own for the module (lab/guest/control-plane.sh: cluster/up.sh with the state dir
var/cluster-guest and ports 26443, 22379/22380, 20257, 20259; it shares nothing with the
cluster of `make cluster`), stopped and its state removed even when a test fails; one boot of
the guest, where lab/guest/real-kube-proxy.sh runs the release's kube-proxy in iptables, ipvs
and nftables mode in turn (lab.guest.real_proxy). Per mode: the rules written, a real SCTP
association from one network namespace through the ClusterIP 10.0.0.95:9595 to the endpoint
10.88.0.11:9595 with the kernel's evidence of it (an SCTP conntrack entry DNATed to the
endpoint; an IPVS SCTP connection), `kube-proxy --cleanup` leaving nothing of any mode, and the
battery's rule matching (kernel/battery/nodeparse.py) recognising what this kube-proxy wrote.

Skipped with the reason when qemu, the guest image or the cluster binaries are missing (failed
under CI=true, or when GUEST_PROXY_REQUIRED=1, which `make guest-proxy` sets).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.battery import nodeparse
from lab.guest import real_proxy
from lab.guest.harness import qemu_available
from tests.need import unavailable

pytestmark = pytest.mark.guestproxy

ROOT = Path(__file__).resolve().parents[2]
CONTROL_PLANE = ROOT / "lab" / "guest" / "control-plane.sh"
VIP, PORT = real_proxy.VIP, real_proxy.PORT
ENDPOINT, CLIENT = real_proxy.ENDPOINT, "10.88.1.2"
MODES = real_proxy.MODES

_config: pytest.Config | None = None


def _say(text: str) -> None:
    """A line on the terminal even under pytest's capture (the run's PASS/FAIL and timings)."""
    capture = _config.pluginmanager.get_plugin("capturemanager") if _config else None
    reporter = _config.pluginmanager.get_plugin("terminalreporter") if _config else None
    if capture is None or reporter is None:
        sys.stderr.write(text + "\n")
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(text)


def _missing(reason: str) -> None:
    if os.environ.get("GUEST_PROXY_REQUIRED", "").strip() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (GUEST_PROXY_REQUIRED=1)", pytrace=False)
    unavailable(reason)


def _control_plane(action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CONTROL_PLANE), action], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture(scope="module")
def proxy_run(pytestconfig: pytest.Config) -> Iterator[real_proxy.ProxyRun]:
    global _config
    _config = pytestconfig
    ok, reason = qemu_available()
    if not ok:
        _missing(f"kernel SCTP guest unavailable: {reason}")
    started = time.monotonic()
    up = _control_plane("up")
    try:
        if up.returncode != 0:
            text = (up.stdout + up.stderr).strip()
            if "run cluster/build.sh" in text:
                _missing(f"no cluster binaries: {text.splitlines()[-1]}")
            pytest.fail(f"the guest's control plane did not start:\n{text}", pytrace=False)
        found = re.search(r"guest-control-plane: state=(\S+) bin=(\S+) port=(\d+)", up.stdout)
        assert found, up.stdout
        state, bin_dir, port = Path(found[1]), Path(found[2]), int(found[3])
        control_plane_seconds = round(time.monotonic() - started, 1)
        run = real_proxy.run(state, port, bin_dir)
        for status, name, detail in run.results:
            _say(f"guest-proxy: {status} {name} {detail}")
        marks = {name: t for t, name in run.timings}
        _say(
            f"guest-proxy: control plane up in {control_plane_seconds} s; objects "
            f"{run.setup_seconds} s; guest {run.guest.seconds} s ({run.guest.accel}; job from "
            f"guest uptime {marks.get('job-start', '?')} s); per mode (start to cleanup done) "
            f"{run.mode_seconds()}"
        )
        if run.guest.timed_out or run.guest.exit_code is None:
            pytest.fail(
                "the guest did not finish:\n"
                + run.guest.console[-3000:]
                + run.guest.stderr[-3000:],
                pytrace=False,
            )
        yield run
    finally:
        down = _control_plane("down")
        _say(f"guest-proxy: {(down.stdout + down.stderr).strip().splitlines()[-1:]}")
        _say(f"guest-proxy: whole run {time.monotonic() - started:.1f} s")
        assert down.returncode == 0, down.stdout + down.stderr


def _result(run: real_proxy.ProxyRun, check: str) -> tuple[str, str]:
    found = [(status, detail) for status, name, detail in run.results if name == check]
    assert len(found) == 1, f"the guest reported {check} {len(found)} times: {run.results}"
    return found[0]


def _rules(run: real_proxy.ProxyRun, mode: str) -> str:
    text = run.rules.get(mode)
    assert text is not None, f"the guest captured no rules of mode {mode}"
    # The first line is the binary's and the tools' versions, as a comment.
    first, _, body = text.partition("\n")
    assert first.startswith(f"# Kubernetes {real_proxy.release()} ({mode})"), first
    return body


def test_the_guest_ran_every_check_and_none_failed(proxy_run: real_proxy.ProxyRun) -> None:
    assert proxy_run.guest.exit_code == 0, proxy_run.guest.stderr[-2000:]
    assert proxy_run.failures == []
    names = [name for _, name, _ in proxy_run.results]
    assert names[:2] == ["pod-to-pod", "no-proxy-no-service"]
    # Without kube-proxy the ClusterIP leads nowhere: what follows is kube-proxy's doing.
    assert _result(proxy_run, "no-proxy-no-service")[1] != "OK from srv"


@pytest.mark.parametrize("mode", MODES)
def test_kube_proxy_wrote_its_rules(proxy_run: real_proxy.ProxyRun, mode: str) -> None:
    assert _result(proxy_run, f"{mode}-rules")[0] == "PASS"
    assert _result(proxy_run, f"{mode}-proxyMode") == ("PASS", mode)  # its /proxyMode
    text = _rules(proxy_run, mode)
    want = {
        "iptables": f"--to-destination {ENDPOINT}:{PORT}",
        "ipvs": f"-> {ENDPOINT}:{PORT}",
        "nftables": f"{ENDPOINT} . {PORT}",
    }[mode]
    assert want in text


@pytest.mark.parametrize("mode", MODES)
def test_a_real_sctp_association_went_through_the_cluster_ip(
    proxy_run: real_proxy.ProxyRun, mode: str
) -> None:
    assert _result(proxy_run, f"{mode}-association") == ("PASS", f"{VIP}:{PORT} -> OK from srv")
    files = proxy_run.guest.files
    if mode == "ipvs":
        # ipvsadm -Lnc: the client's SCTP connection to the virtual service, to the real server.
        conns = files.get("ipvs-connections.txt", "")
        assert re.search(
            rf"^SCTP\s+\S+\s+\S+\s+{re.escape(CLIENT)}:\d+\s+{re.escape(VIP)}:{PORT}\s+"
            rf"{re.escape(ENDPOINT)}:{PORT}",
            conns,
            re.MULTILINE,
        ), conns
        assert _result(proxy_run, "ipvs-connection")[0] == "PASS"
    else:
        # /proc/net/nf_conntrack: the original direction to the ClusterIP, the reply from the
        # endpoint (DNAT), made by this mode's association alone.
        entries = files.get(f"conntrack-{mode}.txt", "")
        assert re.search(
            rf"\bsctp\s+\d+\s+\d+\s+\w+\s+src={re.escape(CLIENT)} dst={re.escape(VIP)} "
            rf"sport=\d+ dport={PORT} .*src={re.escape(ENDPOINT)} dst={re.escape(CLIENT)} "
            rf"sport={PORT} dport=\d+",
            entries,
        ), entries
        assert _result(proxy_run, f"{mode}-conntrack")[0] == "PASS"


# What `kube-proxy --cleanup` keeps by upstream's design (v1.36.3), the only leftovers allowed:
# - iptables mode: the kubelet's KUBE-FIREWALL chain and its INPUT/OUTPUT jumps, which
#   kube-proxy duplicates at start "but do[es] not delete ... in CleanupLeftovers"
#   (pkg/proxy/iptables/proxier.go, iptablesKubeletJumpChains);
# - ipvs mode: the IPv6 ipsets, named KUBE-6-* (pkg/proxy/ipvs/ipset.go, NewIPSet), which
#   cleanupLeftovers never destroys: it destroys ipsetInfo's names (pkg/proxy/ipvs/cleanup.go),
#   the IPv4 ones only.
KEPT_BY_DESIGN = {
    "iptables": re.compile(
        r"^ip6?tables (chain KUBE-FIREWALL|rule -A (INPUT|OUTPUT) -j KUBE-FIREWALL"
        r"|rule -A KUBE-FIREWALL .*)$"
    ),
    "ipvs": re.compile(r"^ipset KUBE-6-[A-Z0-9-]+$"),
    "nftables": None,
}


@pytest.mark.parametrize("mode", MODES)
def test_kube_proxy_cleanup_left_nothing(proxy_run: real_proxy.ProxyRun, mode: str) -> None:
    assert _result(proxy_run, f"{mode}-cleanup")[0] == "PASS"
    # What this mode left: KUBE-* chains and rules (iptables, ip6tables), the kube-proxy nft
    # tables, IPVS virtual services, KUBE-* ipsets, the kube-ipvs0 link, a line each.
    leftovers = proxy_run.guest.files.get(f"after-cleanup-{mode}.txt")
    assert leftovers is not None, "the guest wrote no after-cleanup list"
    kept = KEPT_BY_DESIGN[mode]
    unexpected = [ln for ln in leftovers.splitlines() if kept is None or not kept.match(ln)]
    assert unexpected == []
    if mode == "iptables":
        # The IPv4 chain and both jumps are there: what the design keeps is really kept.
        assert {
            "iptables chain KUBE-FIREWALL",
            "iptables rule -A INPUT -j KUBE-FIREWALL",
            "iptables rule -A OUTPUT -j KUBE-FIREWALL",
        } <= set(leftovers.splitlines())


def test_the_battery_recognises_the_iptables_rules(proxy_run: real_proxy.ProxyRun) -> None:
    text = _rules(proxy_run, "iptables")
    path = nodeparse.iptables_service_path(text, VIP, PORT)
    assert path is not None and "-p sctp" in path.jump and path.chain.startswith("KUBE-SVC-")
    assert path.destinations == [f"{ENDPOINT}:{PORT}"]
    assert nodeparse.proxier_modes_with(VIP, PORT, "SCTP", iptables=text, ipvs="", nftables="") == [
        "iptables"
    ]
    # The kubernetes Service's TCP rules are there, and no SCTP path.
    assert nodeparse.iptables_service_path(text, "10.0.0.1", 443) is None


def test_the_battery_recognises_the_ipvs_rules(proxy_run: real_proxy.ProxyRun) -> None:
    text = _rules(proxy_run, "ipvs")
    services = nodeparse.ipvs_sctp_services(text)
    assert [(s.vip, s.port, s.scheduler) for s in services] == [(VIP, PORT, "rr")]
    assert services[0].reals == [(ENDPOINT, PORT, "Masq")]
    assert nodeparse.proxier_modes_with(VIP, PORT, "SCTP", iptables="", ipvs=text, nftables="") == [
        "ipvs"
    ]


def test_the_battery_recognises_the_nftables_rules(proxy_run: real_proxy.ProxyRun) -> None:
    text = _rules(proxy_run, "nftables")
    elements = nodeparse.nft_sctp_service_elements(text)
    assert [(ip, port) for ip, port, _ in elements] == [(VIP, PORT)]
    assert f"{real_proxy.NAMESPACE}/{real_proxy.SERVICE}/sctp" in elements[0][2]
    assert nodeparse.proxier_modes_with(VIP, PORT, "SCTP", iptables="", ipvs="", nftables=text) == [
        "nftables"
    ]
    # The kubernetes Service (no endpoints here: the reconciler is off) is a no-endpoint
    # element with its comment, which the battery reads as nftables' too.
    assert '10.0.0.1 . tcp . 443 comment "default/kubernetes:https" : goto reject-chain' in text
    assert nodeparse.proxier_modes_with(
        "10.0.0.1", 443, "tcp", iptables="", ipvs="", nftables=text
    ) == ["nftables"]


def test_every_mode_was_timed(proxy_run: real_proxy.ProxyRun) -> None:
    seconds = proxy_run.mode_seconds()
    assert sorted(seconds) == sorted(MODES)
    assert all(s > 0 for s in seconds.values())
