"""The four connectivity tests against the lab over real HTTP."""

from __future__ import annotations

import dataclasses

import pytest

from kernel import sctp_host
from kernel.battery import CONNECTIVITY_KEYS
from tests.battery_specs import FAST, spec_for


def test_a_healthy_cluster_passes_every_connectivity_test(start_lab):
    report = start_lab().run("connectivity")
    # pod-to-loadbalancer: the worker has no kernel SCTP here, and a pod's path to the
    # ingress IP is short-circuited by the service rules: never a pass (skipped, says why).
    assert {k: r.outcome for k, r in report.results.items()} == {
        **dict.fromkeys(CONNECTIVITY_KEYS, "passed"),
        "pod-to-loadbalancer": "skipped",
        "pod-to-service-secondary-family": "skipped",  # single-stack: not upstream's to run
    }
    assert report.results["pod-to-loadbalancer"].reason.startswith("short-circuited: ")
    assert report.fingerprint["load_balancer"] is True
    assert report.fingerprint["proxier_detected"] == "iptables"
    assert report.fingerprint["proxier_demonstrated"]["status"] == "demonstrated"


def test_pod_to_pod_fails_with_netexecs_words_when_sctp_between_pods_is_dropped(start_lab):
    report = start_lab(dataplane={"pod_to_pod": False}).run("connectivity")
    result = report.results["pod-to-pod"]
    assert result.outcome == "failed"
    assert result.reason.startswith(
        "SCTP from the test container did not reach 2 of 2 endpoint pod(s): pod netserver-0 "
        "(10.244.1.2:8082 on lab-worker): no answer: reading from sctp connection failed."
    )
    assert "i/o timeout" in result.reason


def test_pod_to_pod_reaches_every_endpoint_pod_on_distinct_nodes(start_lab):
    result = start_lab(nodes=4).run("connectivity").results["pod-to-pod"]
    assert result.outcome == "passed"
    # One endpoint per ready, schedulable, untainted node: never the tainted control plane.
    assert result.reason == (
        "SCTP from the test container reached every endpoint pod with its hostname "
        "(netserver-0 on lab-worker, netserver-1 on lab-worker2, netserver-2 on "
        "lab-worker3; 3 distinct node(s))"
    )
    # The exchange carries data: each pod answered netexec's "hostname" with its name.
    assert "hostnames ['netserver-2']" in result.evidence
    assert "MaxTries 39 for 3 endpoint(s)" in result.evidence


def test_one_worker_beside_a_tainted_control_plane_skips_as_upstream(start_lab):
    # Upstream counts ready, schedulable, untainted nodes (no tolerations): kind's tainted
    # control plane is not one, so NetworkingTestConfig skips both specs' families.
    report = start_lab(nodes=2).run("connectivity")
    for key in ("pod-to-pod", "pod-to-service"):
        result = report.results[key]
        assert result.outcome == "skipped", key
        assert result.reason.startswith("Requires at least 2 nodes (not 1): upstream's ")
        assert result.reason.endswith(
            "; not counted: lab-control-plane "
            "(taint node-role.kubernetes.io/control-plane:NoSchedule)"
        )
    assert report.fingerprint["ready_schedulable_nodes"] == ["lab-worker"]


@pytest.mark.parametrize(
    ("mode", "line"),
    [
        ("iptables", "-A KUBE-SERVICES -d 10.96."),
        ("ipvs", "SCTP 10.96."),
        ("nftables", " . sctp . 95 : "),
    ],
)
def test_pod_to_service_records_how_each_proxier_carries_the_service(start_lab, mode, line):
    report = start_lab(proxier=mode).run("connectivity")
    result = report.results["pod-to-service"]
    assert result.outcome == "passed"
    assert f"{mode}: SCTP rules for 10.96." in result.evidence
    demonstrated = report.fingerprint["proxier_demonstrated"]
    assert (demonstrated["status"], demonstrated["mode"]) == ("demonstrated", mode)
    assert demonstrated["node"] == "lab-worker2"  # the test container's node
    assert report.fingerprint["proxier_detected"] == mode


def test_pod_to_service_fails_when_the_clusterip_path_drops_sctp(start_lab):
    report = start_lab(dataplane={"via_service": False}).run("connectivity")
    result = report.results["pod-to-service"]
    assert result.outcome == "failed"
    assert result.reason.startswith(
        "SCTP to node-port-service: from the pod through the ClusterIP 10.96."
    )
    assert ":95 endpoint(s) netserver-0, netserver-1 never answered" in result.reason
    assert "NodePort" not in result.reason
    assert report.results["pod-to-pod"].outcome == "passed"


def test_pod_to_service_fails_when_only_the_node_port_is_broken(start_lab):
    result = (
        start_lab(dataplane={"via_node_port": False}).run("connectivity").results["pod-to-service"]
    )
    assert result.outcome == "failed"
    assert result.reason.startswith(
        "SCTP to node-port-service: from the pod through the NodePort 172.18.0.3:"
    )
    assert "ClusterIP" not in result.reason


def test_pod_to_service_fails_when_one_endpoint_is_unreachable(start_lab):
    # One connect that works is no pass: upstream expects every endpoint's hostname.
    result = (
        start_lab(dataplane={"endpoints_reachable": "one"})
        .run("connectivity")
        .results["pod-to-service"]
    )
    assert result.outcome == "failed"
    # pod-Service and endpoint-Service, each through the ClusterIP and the NodePort
    assert result.reason.count("endpoint(s) netserver-1 never answered") == 4
    assert "endpoint(s) netserver-0" not in result.reason


def test_pod_to_service_passes_with_every_hostname_through_both_paths(start_lab):
    result = start_lab().run("connectivity").results["pod-to-service"]
    assert result.outcome == "passed"
    assert result.reason.startswith(
        "SCTP reached all 2 endpoint(s), each answering with its hostname, through the "
        "ClusterIP 10.96."
    )
    assert "and the NodePort 172.18.0.3:3" in result.reason
    assert result.reason.endswith(": pod-Service and endpoint-Service (hairpin)")
    assert "pod -> ClusterIP: SCTP dial to 10.96." in result.evidence
    assert "endpoint netserver-0 -> ClusterIP: SCTP dial to 10.96." in result.evidence


def test_cilium_without_kube_proxy_fails_95_to_8082_and_the_reason_names_the_limit(start_lab):
    report = start_lab(plugin="cilium", kube_proxy="none").run("connectivity")
    result = report.results["pod-to-service"]
    assert result.outcome == "failed"
    assert result.reason.endswith(
        "known Cilium limit: its SCTP service translation requires a Service's targetPort to "
        "equal its port, so upstream's 95 -> 8082 fails there too"
    )
    # Same port on both sides: the load balancer's address answers, in-cluster only.
    assert report.results["pod-to-loadbalancer"].outcome == "skipped"
    assert report.fingerprint["proxier_detected"] is None
    assert report.fingerprint["proxier_demonstrated"]["dataplane"] == "ebpf (cilium)"
    assert report.fingerprint["cni_detected"] == "cilium"


def test_pod_to_loadbalancer_is_skipped_at_once_without_a_declared_load_balancer(start_lab):
    report = start_lab(load_balancer=False).run("connectivity")
    result = report.results["pod-to-loadbalancer"]
    assert (result.outcome, result.reason) == (
        "skipped",
        "the cluster has no load balancer (registered without one)",
    )
    assert result.duration < 0.1


def test_pod_to_loadbalancer_is_skipped_when_no_ingress_ip_arrives(start_lab):
    lab = start_lab(load_balancer=False)
    timeouts = dataclasses.replace(FAST, lb_ingress=0.5)
    spec = spec_for(lab.profile, load_balancer=True, timeouts=timeouts)
    report = lab.run("connectivity", spec=spec)
    result = report.results["pod-to-loadbalancer"]
    assert (result.outcome, result.reason) == ("skipped", "no load balancer ingress within 0.5s")
    assert report.fingerprint["load_balancer"] is False


def test_pod_to_loadbalancer_fails_when_the_load_balancer_drops_sctp(start_lab):
    report = start_lab(dataplane={"via_load_balancer": False}).run("connectivity")
    result = report.results["pod-to-loadbalancer"]
    assert result.outcome == "failed"
    assert result.reason.startswith("SCTP to the load balancer 172.18.255.")
    assert result.reason.endswith(":5060 timed out (TIMEOUT)")


def test_a_worker_without_kernel_sctp_uses_an_in_cluster_client_and_says_so(start_lab):
    assert not sctp_host.check_worker_sctp()["available"]  # this machine: no SCTP
    report = start_lab().run("connectivity")
    result = report.results["pod-to-loadbalancer"]
    assert result.outcome == "skipped"  # in-cluster: short-circuited, proves nothing
    assert "worker host has no kernel SCTP; used an in-cluster client pod" in result.evidence
    assert report.fingerprint["worker_sctp"]["available"] is False


def test_a_worker_with_sctp_connects_to_the_load_balancer_itself(start_lab, monkeypatch):
    calls = []
    monkeypatch.setattr(
        sctp_host,
        "check_worker_sctp",
        lambda: {"available": True, "reason": "ok", "pysctp_version": "0.7.3"},
    )

    def connect(host, port, timeout):
        calls.append((host, port))
        return True, f"SCTP association with {host}:{port} established from the worker"

    monkeypatch.setattr(sctp_host, "sctp_connect", connect)
    report = start_lab().run("connectivity")
    result = report.results["pod-to-loadbalancer"]
    assert result.outcome == "passed"
    assert result.reason.startswith(
        "SCTP connected from outside the cluster (the worker) to 172.18.255."
    )
    assert calls and calls[0][1] == 5060


def test_a_worker_that_cannot_reach_the_load_balancer_falls_back_to_a_pod(start_lab, monkeypatch):
    monkeypatch.setattr(
        sctp_host,
        "check_worker_sctp",
        lambda: {"available": True, "reason": "ok", "pysctp_version": "0.7.3"},
    )
    monkeypatch.setattr(sctp_host, "sctp_connect", lambda h, p, t: (False, "TIMEOUT: no route"))
    report = start_lab().run("connectivity")
    result = report.results["pod-to-loadbalancer"]
    assert result.outcome == "skipped"
    assert "worker client: TIMEOUT: no route" in result.evidence
    assert result.reason.startswith("short-circuited: SCTP reached 172.18.255.")


PORTS_FROM_Y = [
    f"allow-ingress-on-port-81-ns-x: y/{p} -> x/a:81 should be allowed but timed out (TIMEOUT)"
    for p in "abc"
]
POD_AND_NS = (
    "allow-ns-y-pod-a-via-namespace-pod-selector: y/a -> x/a:80 should be allowed but timed "
    "out (TIMEOUT)"
)


def test_netpol_allow_deny_passes_when_policies_are_enforced_for_sctp(start_lab):
    lab = start_lab()
    result = lab.run("connectivity").results["netpol-allow-deny"]
    assert result.outcome == "passed"
    assert result.reason == (
        "upstream's three SCTP NetworkPolicy cases (deny-all, allow-ingress-on-port-81-ns-x, "
        "allow-ns-y-pod-a-via-namespace-pod-selector): every cell of each 9x9 reachability "
        "matrix (namespaces x, y, z; pods a, b, c; through each pod's Service, from long-lived "
        "pods; loopback ignored as upstream) as expected"
    )
    # upstream's truth tables: deny-all leaves x unreachable from everywhere (loopback `-`)
    assert "deny-all (port 80, first pass): to x/a x/b x/c y/a" in result.evidence
    assert "| z/c XXX.....-\n" in result.evidence
    assert "allow-ingress-on-port-81-ns-x (port 81, first pass)" in result.evidence
    assert "| y/a ...-..... |" in result.evidence
    # the model pods are the probers: no one-shot client pod is made
    assert "client-sctp" not in result.evidence
    assert "no policy: port 80: all connect (pass 1); port 81: all connect (pass 1)" in (
        result.evidence
    )
    assert lab.battery_namespaces() == []  # x, y and z are gone with the test


def test_netpol_allow_deny_fails_when_sctp_rules_are_ignored(start_lab):
    report = start_lab(dataplane={"network_policy": "no-sctp"}).run("connectivity")
    result = report.results["netpol-allow-deny"]
    assert result.outcome == "failed"
    assert result.reason == (
        "4 of 216 SCTP probe(s) wrong: " + "; ".join([*PORTS_FROM_Y, POD_AND_NS])
    )


def test_netpol_allow_deny_fails_when_sctp_rules_are_read_as_tcp(start_lab):
    report = start_lab(dataplane={"network_policy": "sctp-as-tcp"}).run("connectivity")
    assert report.results["netpol-allow-deny"].reason == (
        "3 of 216 SCTP probe(s) wrong: " + "; ".join(PORTS_FROM_Y)
    )


def test_netpol_allow_deny_fails_when_the_namespace_selector_is_ignored(start_lab):
    # Both upstream cases with a namespaceSelector peer fail, the Ports case included.
    report = start_lab(dataplane={"namespace_selector": False}).run("connectivity")
    assert report.results["netpol-allow-deny"].reason == (
        "4 of 216 SCTP probe(s) wrong: " + "; ".join([*PORTS_FROM_Y, POD_AND_NS])
    )


def test_netpol_allow_deny_fails_when_a_plugin_blocks_more_than_the_policy_says(start_lab):
    reason = (
        start_lab(dataplane={"network_policy": "deny-all"})
        .run("connectivity")
        .results["netpol-allow-deny"]
        .reason
    )
    assert "allow-ingress-on-port-81-ns-x: x/a -> x/b:81 should be allowed but timed out" in reason


def test_netpol_allow_deny_fails_when_default_deny_is_not_enforced(start_lab):
    lab = start_lab(dataplane={"network_policy": "none"})
    report = lab.run("connectivity", spec=spec_for(lab.profile, implements_network_policy=True))
    result = report.results["netpol-allow-deny"]
    assert result.outcome == "failed"
    # 24 cells into x under deny-all, 5 into x/a under Ports, 7 under the pod+ns selector
    # (loopback cells ignored, as upstream's Summary(ignoreLoopback))
    assert result.reason.startswith(
        "36 of 216 SCTP probe(s) wrong: deny-all: x/a -> x/b:80 should be denied but got through"
    )
    # each case had upstream's second pass
    assert "deny-all (port 80, second pass)" in result.evidence


def test_netpol_allow_deny_is_skipped_for_plugins_without_network_policy(start_lab):
    report = start_lab(plugin="kubenet", dataplane={"network_policy": "none"}).run("connectivity")
    result = report.results["netpol-allow-deny"]
    assert (result.outcome, result.reason) == (
        "skipped",
        "the plugin kubenet does not implement NetworkPolicy",
    )


def test_connectivity_tests_load_sctp_ko_and_do_not_check_the_module_invariant(start_lab):
    lab = start_lab()
    report = lab.run("connectivity")
    assert all("sctp.ko before" not in r.evidence for r in report.results.values())
    # Why they are [Disruptive]: SCTP servers and clients pull the module in, on every node
    # they run on (the workers: the tainted control plane is not counted, as upstream).
    assert [n.name for n in lab.cluster.nodes if n.sctp_loaded] == ["lab-worker", "lab-worker2"]


def test_a_node_kernel_without_sctp_skips_every_connectivity_test_and_says_so(start_lab):
    # [Feature:SCTPConnectivity]: upstream runs these specs only where the nodes have SCTP.
    lab = start_lab(faults={"no_kernel_sctp": True})
    report = lab.run("all")
    connectivity = [*CONNECTIVITY_KEYS, "pod-to-service-secondary-family"]
    for key in connectivity:
        result = report.results[key]
        assert result.outcome == "skipped", (key, result.reason)
        assert result.reason.startswith(
            "[Feature:SCTPConnectivity]: the kernels of nodes lab-worker, lab-worker2 have no "
            "SCTP sockets (`agnhost connect --protocol=sctp`: `OTHER: protocol not supported`)"
        ), result.reason
        assert "neither passed nor failed" in result.reason
        assert (
            "node lab-worker: `agnhost connect 127.0.0.1:9 --protocol=sctp` answered "
            "'OTHER: protocol not supported': its kernel has no SCTP sockets"
        ) in result.evidence
    # The basic tests do not depend on kernel SCTP: they ran (and passed) before the probe.
    assert {report.results[k].outcome for k in report.results if k not in connectivity} == {
        "passed"
    }
    # One probe for the whole run, in a namespace of its own, removed with the others.
    assert sum("kernel-sctp" in n for n in report.namespaces_created) == 1
    assert lab.battery_namespaces() == []


def test_a_node_kernel_with_sctp_is_asked_once_and_runs_the_tests(start_lab):
    report = start_lab().run("connectivity")
    assert sum("kernel-sctp" in n for n in report.namespaces_created) == 1
    assert report.results["pod-to-pod"].outcome == "passed"
