"""Each situation of issue 23 (lab/profiles/situations/) comes out as upstream would.

The battery runs on the lab profile as a registration would declare it; what it concludes is
asserted from upstream's behaviour: a replaced kube-proxy credits no kube-proxy mode, a
single node skips the two-node specs, no node access is never a basic pass, and so on.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from kernel.battery import run_battery
from kernel.kubeconfig import api_client_from_kubeconfig
from lab.profiles import load_profiles
from lab.server import LabServer
from tests.battery_specs import FAST, spec_for

SITUATIONS = Path(__file__).resolve().parents[2] / "lab" / "profiles" / "situations"
PROFILES = {p["name"]: p for p in load_profiles(SITUATIONS)}


def run(name: str, battery: str = "connectivity", timeouts=None, **changes):
    prof = dict(PROFILES[name], faults={**PROFILES[name]["faults"], "pod_start_delay_s": 0.01})
    prof.update(changes)
    with LabServer([prof]) as lab:
        api = api_client_from_kubeconfig(
            yaml.safe_dump(lab.kubeconfig(name)), request_timeout=FAST.request
        )
        try:
            spec = spec_for(prof) if timeouts is None else spec_for(prof, timeouts=timeouts)
            return run_battery(api, spec, battery, f"{name}-1")
        finally:
            api.close()


def outcomes(report):
    return {k: r.outcome for k, r in report.results.items()}


def test_every_situation_of_the_issue_has_its_profile():
    assert set(PROFILES) >= {
        "ebpf-replaces-kube-proxy",
        "kube-router-ipvs",
        "calico-policy-only",
        "dual-stack",
        "single-node",
        "no-node-access",
        "kind-shared-kernel",
        "eks",
        "aks",
        "aks-cilium",
        "k3s",
        "gke-dpv2",
        "one-worker-tainted-control-plane",
        # issue 40's held-back shapes
        "slow-endpoint-programming",
        "cni-slow-to-learn-pods",
        "unreachable-external-ip",
        "broken-secondary-family",
        "lsmod-fails",
    }


def test_an_ebpf_dataplane_with_kube_proxy_still_up_credits_no_kube_proxy_mode():
    report = run("ebpf-replaces-kube-proxy")
    fingerprint = report.fingerprint
    assert fingerprint["kube_proxy_mode"] == "iptables"  # kube-proxy runs and says so
    assert fingerprint["proxier_detected"] is None
    demonstrated = fingerprint["proxier_demonstrated"]
    assert demonstrated["dataplane"] == "ebpf (cilium)"
    assert demonstrated["tables"] == ["iptables"]  # its rules are there, unused
    assert demonstrated["detail"].startswith("not demonstrated: Services are carried by ebpf")
    # Cilium's SCTP service translation keeps the port: upstream's 95 -> 8082 fails there too
    assert report.results["pod-to-service"].outcome == "failed"


def test_kube_router_ipvs_is_not_kube_proxy_ipvs():
    report = run("kube-router-ipvs")
    fingerprint = report.fingerprint
    assert report.results["pod-to-service"].outcome == "passed"
    assert fingerprint["proxier_detected"] is None
    assert fingerprint["proxier_demonstrated"]["dataplane"] == "ipvs (kube-router)"
    assert fingerprint["proxier_demonstrated"]["tables"] == ["ipvs"]


def test_calico_for_policy_only_is_reported_as_the_pair():
    report = run("calico-policy-only")
    assert report.fingerprint["cni_detected"] == "flannel+calico"
    assert report.fingerprint["cni"]["policy"] == "calico"
    assert report.fingerprint["cni_mismatch"] is None  # registered as the policy plugin
    assert report.results["netpol-allow-deny"].outcome == "passed"
    assert report.fingerprint["proxier_detected"] == "iptables"


def test_dual_stack_checks_the_secondary_family_as_its_own_outcome():
    report = run("dual-stack")
    assert report.results["pod-to-service"].outcome == "passed"
    result = report.results["pod-to-service-secondary-family"]
    assert result.outcome == "passed", result.reason
    assert result.reason.startswith(
        "SCTP reached all 2 endpoint(s) through the secondary IP family (IPv6): [fd00:"
    )
    assert "secondary-family ClusterIP: SCTP dial to [fd00:" in result.evidence


def test_a_broken_secondary_family_fails_its_own_spec_never_pod_to_service():
    broken = {**PROFILES["dual-stack"]["dataplane"], "secondary_family": False}
    report = run("dual-stack", dataplane=broken)
    # Upstream's dual-stack spec is its own: pod-to-service keeps its single-family outcome.
    assert report.results["pod-to-service"].outcome == "passed"
    result = report.results["pod-to-service-secondary-family"]
    assert result.outcome == "failed"
    assert "through the secondary-family ClusterIP [fd00:" in result.reason


def test_a_single_stack_cluster_skips_the_secondary_family():
    result = run("kube-router-ipvs").results["pod-to-service-secondary-family"]
    assert result.outcome == "skipped"
    assert result.reason.startswith(
        "not a dual-stack cluster: a RequireDualStack Service got one ClusterIP"
    )


def test_a_single_node_skips_the_two_node_specs():
    report = run("single-node")
    for key in ("pod-to-pod", "pod-to-service"):
        assert report.results[key].outcome == "skipped"
        assert report.results[key].reason.startswith("Requires at least 2 nodes (not 1): ")


def test_one_worker_beside_a_tainted_control_plane_skips_the_two_node_specs():
    report = run("one-worker-tainted-control-plane")
    for key in ("pod-to-pod", "pod-to-service"):
        result = report.results[key]
        assert result.outcome == "skipped"
        assert result.reason.startswith("Requires at least 2 nodes (not 1): ")
        assert "one-worker-tainted-control-plane-control-plane (taint " in result.reason
    assert report.results["netpol-allow-deny"].outcome == "passed"


def test_without_node_access_basic_is_inconclusive_and_no_proxier_is_demonstrated():
    report = run("no-node-access", battery="all")
    declare = report.results["declare-sctp-ports"]
    assert declare.outcome == "skipped" and declare.reason.startswith("inconclusive")
    assert "passed" not in {
        report.results[k].outcome
        for k in ("declare-sctp-ports", "hostport-kubenet", "service-iptables-rules")
    }
    # Upstream's NetworkPolicy spec reads no module: it passes; our invariant is unchecked.
    assert report.results["netpol-sctp-blocks-tcp-udp"].outcome == "passed"
    assert report.fingerprint["sctp_invariant"]["held"] is None
    assert report.fingerprint["proxier_demonstrated"]["detail"] == (
        "not demonstrated: no node access"
    )
    assert report.fingerprint["proxier_detected"] is None


def test_kind_style_shared_kernels_are_said_in_the_fingerprint():
    report = run("kind-shared-kernel")
    fingerprint = report.fingerprint
    assert fingerprint["shared_kernel"] is True
    assert "holds for the host, not per node" in fingerprint["shared_kernel_note"]
    # a connectivity run loads sctp.ko: on one kernel, on every node at once
    assert set(fingerprint["sctp_module_after"].values()) == {True}


def test_a_cluster_without_shared_kernels_says_so():
    assert run("single-node", battery="basic").fingerprint["shared_kernel"] is False


@pytest.mark.parametrize(
    ("name", "label", "dataplane", "proxier"),
    [
        ("eks", "amazon-vpc-cni", None, "iptables"),
        ("eks-calico-policy", "amazon-vpc-cni+calico", None, "iptables"),
        ("aks", "azure-cni", None, "iptables"),
        ("aks-cilium", "azure-cni+cilium", "ebpf (cilium)", None),
        ("k3s", "flannel+kube-router", None, "iptables"),
        ("gke-dpv2", "gke-dataplane-v2", "ebpf (gke-dataplane-v2)", None),
    ],
)
def test_cloud_shaped_clusters_are_detected(name, label, dataplane, proxier):
    report = run(name)
    fingerprint = report.fingerprint
    assert fingerprint["cni_detected"] == label
    assert fingerprint["cni_mismatch"] is None
    assert fingerprint["service_dataplane"] == dataplane
    assert fingerprint["proxier_detected"] == proxier


# --- issue 40: the held-back profiles, each with the outcome upstream would report ---------


def test_slow_endpoint_programming_passes_after_retries_as_upstreams_dials_do():
    # upstream's tries are 2 s apart (34 tries: over a minute); the lab's 0.2 s keeps the
    # proportion to the profile's 1 s programming lag
    report = run("slow-endpoint-programming", timeouts=replace(FAST, dial_retry_delay=0.2))
    for key in ("pod-to-pod", "pod-to-service"):
        assert report.results[key].outcome == "passed", report.results[key].reason
    evidence = report.results["pod-to-service"].evidence
    # the first tries met no rules yet: the pass came from upstream's retries
    assert "hostnames [], " in evidence and "error(s)" in evidence
    assert report.results["netpol-allow-deny"].outcome == "passed"


def test_a_cni_slow_to_learn_pods_passes_netpol_as_upstreams_long_lived_probers_do():
    report = run("cni-slow-to-learn-pods")
    result = report.results["netpol-allow-deny"]
    assert result.outcome == "passed", result.reason
    assert "client-sctp" not in result.evidence  # no fresh one-shot client pod was made
    # traffic no policy isolates is unaffected: the other connectivity specs pass as well
    for key in ("pod-to-pod", "pod-to-service"):
        assert report.results[key].outcome == "passed", report.results[key].reason


def test_on_a_cni_slow_to_learn_pods_a_fresh_client_after_the_policy_is_denied():
    """What made the old probing (one-shot client pods made after the policy) fail there:
    the fresh pod is not yet a peer, so the policy that allows it drops it."""
    from tests.lab import kube as k

    prof = k.profile("slow", faults={"cni_pod_learn_delay_s": 30.0})
    with LabServer([prof]) as lab:
        kube = k.connect_kube(lab, "slow")
        try:
            k.namespace(kube, "x", {"ns": "x"})
            k.namespace(kube, "y", {"ns": "y"})
            k.sctp_server(kube, "x", "a", port=80, labels={"pod": "a"})
            kube.net.create_namespaced_network_policy(
                "x",
                {
                    "apiVersion": "networking.k8s.io/v1",
                    "kind": "NetworkPolicy",
                    "metadata": {"name": "from-y-a"},
                    "spec": {
                        "podSelector": {"matchLabels": {"pod": "a"}},
                        "ingress": [
                            {
                                "from": [
                                    {
                                        "namespaceSelector": {"matchLabels": {"ns": "y"}},
                                        "podSelector": {"matchLabels": {"pod": "a"}},
                                    }
                                ]
                            }
                        ],
                    },
                },
            )
            ip = kube.core.read_namespaced_pod("a", "x").status.pod_ip
            phase, log = k.run_client(kube, "y", "fresh", f"{ip}:80", labels={"pod": "a"})
            assert (phase, log) == ("Failed", "TIMEOUT\n")
            later = time.time() + 100  # long after the first: still, every new pod is new
            lab.cluster("slow").clock = lambda: later
            phase, log = k.run_client(kube, "y", "known", f"{ip}:80", labels={"pod": "a"})
            assert (phase, log) == ("Failed", "TIMEOUT\n")  # a fresh pod again: not yet
        finally:
            kube.api_client.close()


def test_an_unreachable_external_ip_does_not_fail_the_nodeport_dials():
    report = run("unreachable-external-ip")
    result = report.results["pod-to-service"]
    assert result.outcome == "passed", result.reason
    # upstream's NodeIP: the InternalIP, never the (unreachable) ExternalIP listed first
    assert "172.18.0." in result.evidence and "198.51.100." not in result.evidence


def test_the_unreachable_external_ip_is_listed_first_and_answers_nothing():
    from tests.lab import kube as k

    prof = k.profile("ext", faults={"external_ip_unreachable": True})
    with LabServer([prof]) as lab:
        kube = k.connect_kube(lab, "ext")
        try:
            node = kube.core.read_node("ext-worker")
            assert [(a.type, a.address) for a in node.status.addresses][:2] == [
                ("ExternalIP", "198.51.100.3"),
                ("InternalIP", "172.18.0.3"),
            ]
            k.namespace(kube, "a")
            k.sctp_server(kube, "a", "srv")
            svc = k.service(kube, "a", "svc", {"app": "srv"}, svc_type="NodePort")
            port = svc.spec.ports[0].node_port
            assert k.run_client(kube, "a", "ext", f"198.51.100.3:{port}") == (
                "Failed",
                "TIMEOUT\n",
            )
            assert k.run_client(kube, "a", "int", f"172.18.0.3:{port}") == ("Succeeded", "")
        finally:
            kube.api_client.close()


def test_a_broken_secondary_family_profile_fails_only_the_dual_stack_key():
    report = run("broken-secondary-family")
    assert report.results["pod-to-service-secondary-family"].outcome == "failed"
    others = {
        k: r.outcome
        for k, r in report.results.items()
        if k not in ("pod-to-service-secondary-family", "pod-to-loadbalancer")
    }
    assert set(others.values()) == {"passed"}, others


def test_nodes_where_lsmod_fails_pass_the_basic_specs_and_leave_the_invariant_unchecked():
    report = run("lsmod-fails", battery="basic")
    assert {k: r.outcome for k, r in report.results.items()} == dict.fromkeys(
        report.results, "passed"
    )
    assert "lsmod failed on lsmod-fails-worker, lsmod-fails-worker2: read as not loaded" in (
        report.results["declare-sctp-ports"].evidence
    )
    assert report.fingerprint["sctp_invariant"]["held"] is None
