"""The four basic tests and the sctp.ko invariant, against the lab over real HTTP."""

from __future__ import annotations

import dataclasses
import re

import pytest

from kernel.battery import BASIC_KEYS, REGISTRY
from tests.battery_specs import FAST, spec_for


def outcomes(report):
    """The catalog tests' outcomes (the TCP/UDP conformance extras are tested on their own)."""
    return {key: result.outcome for key, result in report.results.items() if key in REGISTRY}


def test_a_healthy_cluster_passes_every_basic_test_without_loading_sctp_ko(start_lab):
    lab = start_lab(kubenet=True)
    report = lab.run("basic")
    assert outcomes(report) == dict.fromkeys(BASIC_KEYS, "passed")
    assert not any(node.sctp_loaded for node in lab.cluster.nodes)
    assert report.fingerprint["sctp_module_before"] == {
        "lab-worker": False,
        "lab-worker2": False,
        "lab-control-plane": False,
    }
    assert report.fingerprint["sctp_module_after"] == {
        "lab-worker": False,
        "lab-worker2": False,
        "lab-control-plane": False,
    }
    declare = report.results["declare-sctp-ports"]
    assert (
        "sctp.ko before (upstream's nodes): lab-worker=not loaded, lab-worker2=not loaded"
        in declare.evidence
    )
    assert "sctp.ko invariant (ours, stricter than upstream: every battery node" in declare.evidence
    assert report.fingerprint["sctp_invariant"]["held"] is True
    assert report.fingerprint["feature_gate"] == "on"


def test_the_hostport_rule_and_the_clusterip_rule_are_the_evidence(start_lab):
    report = start_lab(kubenet=True).run("basic")
    hostport = report.results["hostport-kubenet"].evidence
    # The lab's kubenet-style node at 1.24 and later writes portmap's chains, as the real one.
    assert "-A CNI-HOSTPORT-DNAT -p sctp" in hostport and "--dports 5060 -j CNI-DN-" in hostport
    assert "-j DNAT --to-destination" in hostport
    clusterip = report.results["service-iptables-rules"].evidence
    assert "-A KUBE-SERVICES -d 10.96." in clusterip and "-m sctp --dport 5060" in clusterip


def test_a_disabled_feature_gate_skips_the_sctp_tests_with_the_api_error(start_lab):
    # Contract: an environment that cannot is `skipped` with that reason, never `failed`.
    report = start_lab(sctp_feature_gate=False).run("all")
    for key in (
        "declare-sctp-ports",
        "hostport-kubenet",
        "service-iptables-rules",
        "pod-to-pod",
        "pod-to-service",
        "netpol-allow-deny",
    ):
        result = report.results[key]
        assert result.outcome == "skipped", (key, result.reason)
        assert result.reason.startswith(
            "feature gate off: the API refuses protocol SCTP (422 Invalid:"
        )
        assert 'Unsupported value: "SCTP"' in result.reason
    assert report.fingerprint["feature_gate"] == "off"
    # TCP and UDP need no gate: the conformance extras still ran.
    assert report.results["conformance-tcp-pod-to-service"].outcome == "passed"


def _api_exception(status, body):
    import json

    from kubernetes.client.exceptions import ApiException

    exc = ApiException(status=status, reason="Unprocessable Entity")
    exc.body = json.dumps(body)
    return exc


def test_only_a_422_whose_cause_is_the_protocol_field_means_the_gate_is_off():
    from kernel.battery.runner import sctp_refused

    gate = {
        "message": 'Service "s" is invalid: spec.ports[0].protocol: Unsupported value: '
        '"SCTP": supported values: "TCP", "UDP"',
        "details": {
            "causes": [
                {
                    "reason": "FieldValueNotSupported",
                    "message": 'Unsupported value: "SCTP": supported values: "TCP", "UDP"',
                    "field": "spec.ports[0].protocol",
                }
            ]
        },
    }
    other = {
        "message": 'Service "s" is invalid: spec.ports[0].port: Invalid value: 0: must be '
        "between 1 and 65535, inclusive (port 5060/SCTP)",
        "details": {
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: 0: must be between 1 and 65535, inclusive",
                    "field": "spec.ports[0].port",
                }
            ]
        },
    }
    both = {"details": {"causes": gate["details"]["causes"] + other["details"]["causes"]}}
    assert sctp_refused(_api_exception(422, gate)) is True
    assert sctp_refused(_api_exception(422, other)) is False
    assert sctp_refused(_api_exception(422, both)) is False
    assert sctp_refused(_api_exception(422, {"message": gate["message"]})) is True


def test_without_node_access_the_node_tests_are_skipped_and_the_invariant_not_checked(start_lab):
    lab = start_lab(node_access=False, kubenet=True)
    # Registered as having node access: the 403 on the probe pod is what decides.
    report = lab.run("basic", spec=spec_for(lab.profile, node_access=True))
    for key in ("hostport-kubenet", "service-iptables-rules"):
        assert report.results[key].outcome == "skipped"
        assert report.results[key].reason.startswith("no node access: 403 Forbidden")
    declare = report.results["declare-sctp-ports"]
    # Without node access the invariant is never checked: inconclusive, never a pass.
    assert declare.outcome == "skipped"
    assert declare.reason.startswith(
        "inconclusive: the sctp.ko invariant could not be checked (no node access); "
        "the test itself: "
    )
    assert "violates PodSecurity" in declare.evidence
    assert report.fingerprint["node_access"] is False
    # Upstream's NetworkPolicy spec reads no module: its pass stands; the invariant is unchecked.
    passed = [k for k, r in report.results.items() if r.outcome == "passed" and k in REGISTRY]
    assert passed == ["netpol-sctp-blocks-tcp-udp"]
    assert report.fingerprint["sctp_invariant"]["held"] is None


def test_a_cluster_registered_without_node_access_is_never_sent_a_hostexec_pod(start_lab):
    lab = start_lab(node_access=False, kubenet=True)
    report = lab.run("basic")
    reason = report.results["hostport-kubenet"].reason
    assert reason == "no node access: the cluster is registered without node access"
    assert "403" not in report.results["declare-sctp-ports"].evidence


def test_hostport_kubenet_runs_on_every_cluster_and_checks_iptables_only_on_kubenet(start_lab):
    report = start_lab(kubenet=False).run("basic")
    hostport = report.results["hostport-kubenet"]
    assert hostport.outcome == "passed"
    assert hostport.reason.startswith("a pod with SCTP hostPort 5060 runs on lab-worker")
    assert "iptables hostPort rule not checked: kubenet is not in use (calico)" in hostport.reason
    assert "sctp.ko before (upstream's nodes): lab-worker=not loaded\n" in hostport.evidence


def test_an_sctp_hostport_that_loads_sctp_ko_fails_on_a_non_kubenet_cluster(start_lab):
    # Upstream would fail too: the module invariant is the point of its hostPort test.
    report = start_lab(kubenet=False, faults={"hostport_loads_module": True}).run("basic")
    hostport = report.results["hostport-kubenet"]
    assert hostport.outcome == "failed"
    assert hostport.reason.startswith(
        "The state of the sctp module has changed due to the test case (sctp.ko got loaded on "
        "lab-worker)"
    )


@pytest.mark.parametrize(
    ("mode", "code", "words"),
    [
        ("forbid", "403 Forbidden", 'violates PodSecurity "baseline:latest"'),
        (
            "webhook-deny",
            "400 BadRequest",
            'admission webhook "pod-policy.example.com" denied the request',
        ),
    ],
)
def test_admission_refusing_privileged_pods_skips_node_checks_and_the_run_goes_on(
    start_lab, mode, code, words
):
    lab = start_lab(kubenet=True, admission={"privileged_pods": mode})
    # Registered with node access: the refusal itself decides, and is quoted.
    report = lab.run("all", spec=spec_for(lab.profile, node_access=True))
    for key in ("hostport-kubenet", "service-iptables-rules"):
        result = report.results[key]
        assert result.outcome == "skipped", (key, result.reason)
        assert result.reason.startswith(f"no node access: {code}: ")
        assert words in result.reason
    # Basic tests cannot check sctp.ko: inconclusive (skipped), never passed. Connectivity
    # tests still ran and passed; nothing ended in error.
    assert report.results["declare-sctp-ports"].outcome == "skipped"
    assert report.results["pod-to-service"].outcome == "passed"
    assert "error" not in {r.outcome for r in report.results.values()}
    assert report.fingerprint["kube_proxy_mode"] is None  # no host-network pod either
    assert report.fingerprint["proxier_detected"] is None
    assert report.fingerprint["proxier_demonstrated"]["detail"] == (
        "not demonstrated: no node access"
    )


def test_endpoints_that_are_never_removed_fail_declare_sctp_ports(start_lab):
    lab = start_lab(faults={"endpoints_never_removed": True})
    # The wait for the endpoints to go is bounded by pod_start: keep it short here.
    spec = spec_for(lab.profile, timeouts=dataclasses.replace(FAST, pod_start=0.5))
    report = lab.run("basic", spec=spec)
    declare = report.results["declare-sctp-ports"]
    assert declare.outcome == "failed"
    assert declare.reason.startswith(
        "the Endpoints of service sctp-endpoint-test after the pod was deleted list "
        "{'sctp-declare': ['5060/SCTP']}, expected nothing (within 0.5s)"
    )


def test_declare_sctp_ports_reads_the_endpoint_lifecycle_from_both_apis(start_lab):
    declare = start_lab().run("basic").results["declare-sctp-ports"]
    assert declare.outcome == "passed"
    for api in ("Endpoints", "EndpointSlice"):
        assert f"{api} of sctp-endpoint-test before the pod exists: none" in declare.evidence
        assert (
            f"{api} of sctp-endpoint-test while the pod runs: {{'sctp-declare': ['5060/SCTP']}}"
        ) in declare.evidence
        assert f"{api} of sctp-endpoint-test after the pod was deleted: none" in declare.evidence


def test_hostport_kubenet_fails_when_no_iptables_rule_appears(start_lab):
    lab = start_lab(kubenet=False)  # the lab writes hostport rules only for kubenet clusters
    report = lab.run("basic", spec=spec_for(lab.profile, kubenet=True))
    hostport = report.results["hostport-kubenet"]
    assert hostport.outcome == "failed"
    assert re.fullmatch(
        r"no nat-table rule for SCTP hostPort 5060 DNATing to 10\.244\.\d+\.\d+:5060 on node "
        r"lab-worker \(CNI-HOSTPORT-DNAT -> CNI-DN-\*, as portmap writes it, or "
        r"KUBE-HOSTPORTS -> KUBE-HP-\*\) within 1s",
        hostport.reason,
    ), hostport.reason


def test_service_iptables_rules_reads_kube_proxys_nftables_rules_in_nftables_mode(start_lab):
    lab = start_lab(proxier="nftables")
    report = lab.run("basic", spec=spec_for(lab.profile, declared_proxier="iptables"))
    result = report.results["service-iptables-rules"]
    assert result.outcome == "passed", result.reason
    assert result.reason.startswith(
        "kube-proxy (nftables mode) wrote the service-ips element for SCTP "
    )
    assert "nft list ruleset on lab-worker (table kube-proxy):" in result.evidence
    assert " . sctp . 5060 : goto service-" in result.evidence
    assert "dnat to 10.244." in result.evidence


@pytest.mark.parametrize("mode", ["ipvs"])
def test_service_iptables_rules_is_skipped_when_kube_proxy_reports_another_mode(start_lab, mode):
    lab = start_lab(proxier=mode)
    # Even when registered as iptables: what kube-proxy says on :10249/proxyMode wins.
    report = lab.run("basic", spec=spec_for(lab.profile, declared_proxier="iptables"))
    result = report.results["service-iptables-rules"]
    assert result.outcome == "skipped"
    assert result.reason == (
        f"The test doesn't work if kube-proxy is not in iptables mode (detected proxier: {mode})"
    )
    assert report.fingerprint["kube_proxy_mode"] == mode
    # kube-proxy's word is no demonstration: a basic run carries no Service under test
    assert report.fingerprint["proxier_detected"] is None


def test_a_plugin_that_loads_sctp_ko_for_declared_ports_fails_the_invariant(start_lab):
    report = start_lab(faults={"basic_loads_module": True}).run("basic")
    declare = report.results["declare-sctp-ports"]
    assert declare.outcome == "failed"
    assert declare.reason.startswith(
        "The state of the sctp module has changed due to the test case"
    )
    assert "sctp.ko after (upstream's nodes): lab-worker=loaded" in declare.evidence
    # Upstream's NetworkPolicy spec checks no module: its verdict is the test's alone, and our
    # invariant, already broken by declare-sctp-ports, is a fact beside it.
    netpol = report.results["netpol-sctp-blocks-tcp-udp"]
    assert netpol.outcome == "passed"
    assert "inconclusive" not in netpol.reason
    assert (
        "(already loaded before on lab-worker, lab-worker2, lab-control-plane)" in netpol.evidence
    )
    invariant = report.fingerprint["sctp_invariant"]
    assert invariant["held"] is False
    assert invariant["tests"]["declare-sctp-ports"]["changed"] == [
        "lab-worker",
        "lab-worker2",
        "lab-control-plane",
    ]


def test_a_module_loaded_before_the_run_makes_the_invariant_inconclusive_not_failed(start_lab):
    report = start_lab(sctp_module_loaded_at_start=True).run("basic")
    declare = report.results["declare-sctp-ports"]
    assert declare.outcome == "passed"
    assert declare.reason.endswith(
        "; module invariant inconclusive: sctp.ko was already loaded before the test "
        "(on lab-worker, lab-worker2)"
    )


def test_a_policy_that_lets_tcp_through_fails_netpol_sctp_blocks_tcp_udp(start_lab):
    report = start_lab(dataplane={"network_policy": "sctp-as-tcp"}).run("basic")
    result = report.results["netpol-sctp-blocks-tcp-udp"]
    assert (result.outcome, result.reason) == (
        "failed",
        "TCP to port 8081 got through a policy that allows only SCTP",
    )


def test_a_plugin_ignoring_policies_it_claims_to_enforce_lets_tcp_and_udp_through(start_lab):
    lab = start_lab(dataplane={"network_policy": "none"})
    report = lab.run("basic", spec=spec_for(lab.profile, implements_network_policy=True))
    result = report.results["netpol-sctp-blocks-tcp-udp"]
    assert result.reason == "TCP and UDP to port 8081 got through a policy that allows only SCTP"


def test_a_plugin_that_drops_sctp_rules_still_blocks_tcp_and_udp(start_lab):
    report = start_lab(dataplane={"network_policy": "no-sctp"}).run("basic")
    assert report.results["netpol-sctp-blocks-tcp-udp"].outcome == "passed"


def test_netpol_sctp_blocks_tcp_udp_is_skipped_for_plugins_without_network_policy(start_lab):
    report = start_lab(plugin="flannel", dataplane={"network_policy": "none"}).run("basic")
    result = report.results["netpol-sctp-blocks-tcp-udp"]
    assert (result.outcome, result.reason) == (
        "skipped",
        "the plugin flannel does not implement NetworkPolicy",
    )


def test_the_policy_test_never_judges_a_policy_when_tcp_did_not_work_without_one(
    start_lab, monkeypatch
):
    from kernel.battery import pods

    serve = pods.netexec_tcp_udp_pod
    # The server listens one port off, so the baseline TCP connect is refused.
    monkeypatch.setattr(
        pods, "netexec_tcp_udp_pod", lambda name, image, port, *a: serve(name, image, port + 1, *a)
    )
    report = start_lab().run("basic")
    result = report.results["netpol-sctp-blocks-tcp-udp"]
    assert result.outcome == "failed"
    assert result.reason.startswith("baseline failed: TCP to 10.244.")
    assert result.reason.endswith(
        ":8081 was refused (REFUSED) before any policy, so the policy cannot be judged"
    )


def test_a_plugin_that_blocks_everything_fails_the_positive_control(start_lab):
    # TCP and UDP "blocked" by a plugin (or client) that drops all traffic is no pass.
    report = start_lab(dataplane={"network_policy": "deny-all"}).run("basic")
    result = report.results["netpol-sctp-blocks-tcp-udp"]
    assert result.outcome == "failed"
    assert result.reason.startswith("positive control failed: TCP to the unselected pod 10.244.")
    assert result.reason.endswith(
        ":8081 timed out (TIMEOUT) after the policy, so the denials above cannot be read as "
        "the policy's doing"
    )


def test_endpoints_are_read_from_the_core_api_before_endpoint_slices_existed(start_lab):
    report = start_lab(kubernetes_version="1.20.4").run("basic")
    assert report.results["declare-sctp-ports"].outcome == "passed"
    assert report.fingerprint["kubernetes_version"] == "1.20.4"


def test_the_filter_tables_reject_rule_does_not_pass_service_iptables_rules(start_lab, monkeypatch):
    # kube-proxy sees no endpoints for the SCTP service (e.g. it never got them): it writes
    # only the filter table's "has no endpoints" REJECT, which names the VIP, the port and
    # -p sctp under KUBE-SERVICES, and carries no traffic. Upstream's check would pass on it.
    from lab import nodetools

    plain = nodetools.service_ports

    def without_sctp_endpoints(cluster):
        ports = plain(cluster)
        for sp in ports:
            if sp.protocol == "SCTP":
                sp.endpoints = []
        return ports

    monkeypatch.setattr(nodetools, "service_ports", without_sctp_endpoints)
    lab = start_lab()
    spec = spec_for(lab.profile, timeouts=dataclasses.replace(FAST, rules_poll=0.2))
    result = lab.run("basic", spec=spec).results["service-iptables-rules"]
    assert result.outcome == "failed"
    assert result.reason.startswith("no nat-table KUBE-SERVICES rule with -p sctp for 10.96.")
    assert "jumping to a service chain that DNATs to 10.244." in result.reason


def test_a_failing_lsmod_only_logs_and_leaves_our_invariant_unchecked(start_lab):
    # Upstream's CheckSCTPModuleLoadedOnNodes logs a failed command and reads "not loaded".
    report = start_lab(faults={"lsmod_fails": True}).run("basic")
    assert outcomes(report) == dict.fromkeys(BASIC_KEYS, "passed")
    declare = report.results["declare-sctp-ports"]
    assert "lsmod failed on lab-worker, lab-worker2: read as not loaded" in declare.evidence
    # Ours stays unchecked: such a run is never a conclusive basic run (policy.py).
    assert report.fingerprint["sctp_invariant"]["held"] is None


def test_a_hostexec_pod_that_never_runs_fails_the_upstream_module_check(start_lab, monkeypatch):
    from kernel.battery.base import TestError
    from kernel.battery.context import TestContext

    lab = start_lab()
    real = TestContext.hostexec_nodes

    def broken(self, nodes, cmd):
        if cmd == "lsmod" and self.namespace.endswith("declare-sctp-ports"):
            raise TestError("pod hostexec-lab-worker-9 did not reach Succeeded/Failed within 3s")
        return real(self, nodes, cmd)

    monkeypatch.setattr(TestContext, "hostexec_nodes", broken)
    declare = lab.run("basic").results["declare-sctp-ports"]
    assert declare.outcome == "failed"
    assert declare.reason.startswith("the hostexec pod of the sctp.ko check did not run: pod ")


def test_a_node_that_refuses_nsenter_is_read_chrooted_into_its_root(start_lab):
    # The real cluster's host: `nsenter: can't open '/rootfs/proc/1/ns/mnt': Permission denied`.
    lab = start_lab(kubenet=True, faults={"nsenter_refused": True})
    report = lab.run("basic")
    outcomes = {key: report.results[key].outcome for key in BASIC_KEYS}
    assert outcomes == dict.fromkeys(BASIC_KEYS, "passed"), {
        k: report.results[k].reason for k in BASIC_KEYS
    }
    hostport = report.results["hostport-kubenet"].evidence
    assert "-A CNI-HOSTPORT-DNAT -p sctp" in hostport
    assert report.fingerprint["node_access"] is True
    assert report.fingerprint["sctp_invariant"]["held"] is True
    # lsmod was read chrooted on every node: sctp.ko known (not loaded), not "unread".
    before = report.fingerprint["sctp_module_before"]
    assert before and set(before.values()) == {False}


# ---- kube-proxy v1.36's nftables form (lab/nftables.py): a profile variant at 1.36.3

_OVN_NFTABLES = "lab/profiles/ovn-nftables.yaml"


def _ovn_nftables_at(version: str) -> dict:
    """The shipped ovn-nftables profile (kube-proxy in nftables mode) at another release."""
    from pathlib import Path

    from lab.profiles import load_profile

    shipped = load_profile(Path(__file__).resolve().parents[3] / _OVN_NFTABLES)
    assert shipped["kube_proxy"] == "nftables"
    return {**shipped, "name": "lab", "kubernetes_version": version, "seed": 7}


def test_service_iptables_rules_passes_on_kube_proxy_1_36s_nftables_form(start_lab):
    lab = start_lab(**_ovn_nftables_at("1.36.3"))
    report = lab.run("basic", spec=spec_for(lab.profile))
    result = report.results["service-iptables-rules"]
    assert result.outcome == "passed", result.reason
    assert result.reason.startswith(
        "kube-proxy (nftables mode) wrote the service-ips element for SCTP "
    )
    # The service chain's own DNAT map, as v1.36.3 writes it: no endpoint chain in between.
    evidence = result.evidence.splitlines()
    assert "nft list ruleset on lab-worker (table kube-proxy):" in evidence
    dnat = [line for line in evidence if " dnat " in line]
    assert dnat and all(
        re.fullmatch(
            r"  meta l4proto sctp dnat ip to numgen random mod 1 map "
            r"\{ 0 : 10\.244\.\d+\.\d+ \. 5060 \}",
            line,
        )
        for line in dnat
    ), dnat
    assert len(dnat) == lab.profile["nodes"]  # on every node
    assert not [line for line in evidence if "endpoint-" in line]


def _broken_sctp(monkeypatch, change):
    from lab import nodetools

    plain = nodetools.service_ports

    def broken(cluster):
        ports = plain(cluster)
        for sp in ports:
            if sp.protocol == "SCTP":
                change(sp)
        return ports

    monkeypatch.setattr(nodetools, "service_ports", broken)


@pytest.mark.parametrize(
    "broken",
    [
        # kube-proxy DNATs the SCTP service to the wrong port: the element and chain are there.
        lambda sp: setattr(sp, "endpoints", [(ip, port + 1) for ip, port in sp.endpoints]),
        # kube-proxy never got the SCTP endpoints: only the no-endpoint-services element.
        lambda sp: setattr(sp, "endpoints", []),
    ],
    ids=["dnat-to-the-wrong-port", "no-endpoints"],
)
def test_service_iptables_rules_fails_on_a_broken_sctp_rule_of_the_1_36_form(
    start_lab, monkeypatch, broken
):
    _broken_sctp(monkeypatch, broken)
    lab = start_lab(**_ovn_nftables_at("1.36.3"))
    spec = spec_for(lab.profile, timeouts=dataclasses.replace(FAST, rules_poll=0.2))
    result = lab.run("basic", spec=spec).results["service-iptables-rules"]
    assert result.outcome == "failed"
    assert re.fullmatch(
        r"no kube-proxy nftables element for SCTP 10\.96\.\d+\.\d+:5060 going to a service "
        r"chain that DNATs to 10\.244\.\d+\.\d+:5060 on node\(s\) .+ within 0\.2s",
        result.reason,
    ), result.reason
