"""The four basic tests and the sctp.ko invariant, against the lab over real HTTP."""

from __future__ import annotations

import pytest

from tests.battery.conftest import spec_for
from workers.battery import BASIC_KEYS, REGISTRY


def outcomes(report):
    """The catalog tests' outcomes (the TCP/UDP conformance extras are tested on their own)."""
    return {key: result.outcome for key, result in report.results.items() if key in REGISTRY}


def test_a_healthy_cluster_passes_every_basic_test_without_loading_sctp_ko(start_lab):
    lab = start_lab(kubenet=True)
    report = lab.run("basic")
    assert outcomes(report) == {key: "passed" for key in BASIC_KEYS}
    assert not any(node.sctp_loaded for node in lab.cluster.nodes)
    assert report.fingerprint["sctp_module_before"] == {
        "lab-worker": False,
        "lab-control-plane": False,
    }
    assert report.fingerprint["sctp_module_after"] == {
        "lab-worker": False,
        "lab-control-plane": False,
    }
    declare = report.results["declare-sctp-ports"]
    assert "sctp.ko before: lab-worker=not loaded" in declare.evidence
    assert report.fingerprint["feature_gate"] == "on"


def test_the_hostport_rule_and_the_clusterip_rule_are_the_evidence(start_lab):
    report = start_lab(kubenet=True).run("basic")
    hostport = report.results["hostport-kubenet"].evidence
    assert "-A KUBE-HOSTPORTS -p sctp" in hostport and "--dport 5060" in hostport
    clusterip = report.results["service-iptables-rules"].evidence
    assert "-A KUBE-SERVICES -d 10.96." in clusterip and "-m sctp --dport 5060" in clusterip


def test_a_disabled_feature_gate_fails_declare_sctp_ports_with_the_api_error(start_lab):
    report = start_lab(sctp_feature_gate=False).run("basic")
    declare = report.results["declare-sctp-ports"]
    assert declare.outcome == "failed"
    assert declare.reason.startswith("feature gate off: API rejected protocol SCTP (422 Invalid:")
    assert 'Unsupported value: "SCTP"' in declare.reason
    assert report.fingerprint["feature_gate"] == "off"


def test_without_node_access_the_node_tests_are_skipped_and_the_invariant_not_checked(start_lab):
    lab = start_lab(node_access=False, kubenet=True)
    # Registered as having node access: the 403 on the probe pod is what decides.
    report = lab.run("basic", spec=spec_for(lab.profile, node_access=True))
    for key in ("hostport-kubenet", "service-iptables-rules"):
        assert report.results[key].outcome == "skipped"
        assert report.results[key].reason.startswith("no node access: 403 Forbidden")
    declare = report.results["declare-sctp-ports"]
    assert declare.outcome == "passed"
    assert declare.reason.endswith("(module invariant not checked: no node access)")
    assert "violates PodSecurity" in declare.evidence
    assert report.fingerprint["node_access"] is False


def test_a_cluster_registered_without_node_access_is_never_sent_a_hostexec_pod(start_lab):
    lab = start_lab(node_access=False, kubenet=True)
    report = lab.run("basic")
    reason = report.results["hostport-kubenet"].reason
    assert reason == "no node access: the cluster is registered without node access"
    assert "403" not in report.results["declare-sctp-ports"].evidence


def test_hostport_kubenet_is_skipped_when_the_plugin_is_not_kubenet(start_lab):
    report = start_lab(kubenet=False).run("basic")
    hostport = report.results["hostport-kubenet"]
    assert (hostport.outcome, hostport.reason) == (
        "skipped",
        "kubenet not in use: the cluster's network plugin is calico",
    )


def test_hostport_kubenet_fails_when_no_iptables_rule_appears(start_lab):
    lab = start_lab(kubenet=False)  # the lab writes hostport rules only for kubenet clusters
    report = lab.run("basic", spec=spec_for(lab.profile, kubenet=True))
    hostport = report.results["hostport-kubenet"]
    assert hostport.outcome == "failed"
    assert hostport.reason.startswith(
        "no iptables rule for SCTP hostPort 5060 on node lab-worker within"
    )


@pytest.mark.parametrize("mode", ["ipvs", "nftables"])
def test_service_iptables_rules_is_skipped_when_kube_proxy_reports_another_mode(start_lab, mode):
    lab = start_lab(proxier=mode)
    # Even when registered as iptables: what kube-proxy says on :10249/proxyMode wins.
    report = lab.run("basic", spec=spec_for(lab.profile, declared_proxier="iptables"))
    result = report.results["service-iptables-rules"]
    assert result.outcome == "skipped"
    assert result.reason == (
        f"The test doesn't work if kube-proxy is not in iptables mode (detected proxier: {mode})"
    )
    assert report.fingerprint["proxier_detected"] == mode


def test_a_plugin_that_loads_sctp_ko_for_declared_ports_fails_the_invariant(start_lab):
    report = start_lab(faults={"basic_loads_module": True}).run("basic")
    declare = report.results["declare-sctp-ports"]
    assert declare.outcome == "failed"
    assert declare.reason.startswith(
        "The state of the sctp module has changed due to the test case"
    )
    assert "sctp.ko after: lab-worker=loaded" in declare.evidence
    # Later tests find the module already there: their own verdict stands, marked inconclusive.
    netpol = report.results["netpol-sctp-blocks-tcp-udp"]
    assert netpol.outcome == "passed"
    assert (
        "module invariant inconclusive: sctp.ko was already loaded before the test" in netpol.reason
    )


def test_a_module_loaded_before_the_run_makes_the_invariant_inconclusive_not_failed(start_lab):
    report = start_lab(sctp_module_loaded_at_start=True).run("basic")
    declare = report.results["declare-sctp-ports"]
    assert declare.outcome == "passed"
    assert declare.reason.endswith(
        "; module invariant inconclusive: sctp.ko was already loaded before the test "
        "(on lab-worker, lab-control-plane)"
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
    from workers.battery import pods

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


def test_endpoints_are_read_from_the_core_api_before_endpoint_slices_existed(start_lab):
    report = start_lab(kubernetes_version="1.20.4").run("basic")
    assert report.results["declare-sctp-ports"].outcome == "passed"
    assert report.fingerprint["kubernetes_version"] == "1.20.4"
