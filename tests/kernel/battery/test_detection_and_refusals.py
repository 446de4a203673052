"""What the run's fingerprint records (emulated, proxier, CNI) and how refusals are read."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException

from kernel.battery.context import parse_connect_log, rbac_reason, refusal_kind
from lab.cluster import Cluster
from lab.errors import ApiError
from tests.battery_specs import spec_for


def test_the_fingerprint_carries_the_agreed_keys(start_lab):
    report = start_lab().run("basic")
    fingerprint = report.fingerprint
    for key in ("emulated", "proxier_detected", "cni_detected"):
        assert key in fingerprint
    assert fingerprint["emulated"] is True  # the lab's /version says so
    assert fingerprint["kube_proxy_mode"] == "iptables"
    assert fingerprint["proxier_source"] == "proxyMode"
    # a basic run carries no Service under test: no proxier is demonstrated by it
    assert fingerprint["proxier_detected"] is None
    assert fingerprint["proxier_demonstrated"]["status"] == "not demonstrated"
    assert fingerprint["cni_detected"] == "calico"
    assert fingerprint["cni_daemonsets"] == ["calico-system/calico-node"]
    assert fingerprint["cni_mismatch"] is None


@pytest.mark.parametrize("flag", [True, False])
def test_emulated_comes_from_the_version_answer(start_lab, monkeypatch, flag):
    plain = Cluster.version

    def version(self):  # the lab always says so; a real server never does
        answer = {k: v for k, v in plain(self).items() if k != "emulated"}
        return {**answer, "emulated": True} if flag else answer

    monkeypatch.setattr(Cluster, "version", version)
    assert start_lab().run("basic").fingerprint["emulated"] is flag


def test_the_proxier_is_what_kube_proxy_runs_never_what_was_registered(start_lab):
    lab = start_lab(proxier="ipvs", kube_proxy="iptables")  # registered ipvs, runs iptables
    report = lab.run("basic")
    assert report.fingerprint["proxier_declared"] == "ipvs"
    assert report.fingerprint["kube_proxy_mode"] == "iptables"
    assert report.results["service-iptables-rules"].outcome == "passed"


def test_the_proxy_mode_is_asked_from_a_host_network_pods_own_container(start_lab):
    lab = start_lab()
    asked = []
    start = Cluster._start_pod

    def spy(self, key, now):
        pod = self.objects["pods"][key]["spec"]
        if pod.get("hostNetwork") and "proxyMode" in " ".join(pod["containers"][0]["command"]):
            asked.append(pod)
        return start(self, key, now)

    lab.cluster.__class__._start_pod = spy
    try:
        lab.run("basic")
    finally:
        lab.cluster.__class__._start_pod = start
    assert len(asked) == 1
    container = asked[0]["containers"][0]
    assert container["command"][0] == "sh" and "nsenter" not in container["command"]
    assert "securityContext" not in container and "volumes" not in asked[0]


def test_without_proxy_mode_the_probe_services_rules_tell_the_mode(start_lab, monkeypatch):
    from lab import dataplane

    plain = dataplane.curl
    # kube-proxy's metrics port closed (bound elsewhere): /proxyMode says nothing.
    monkeypatch.setattr(
        dataplane, "curl", lambda c, k, url: (7, "") if "10249" in url else plain(c, k, url)
    )
    report = start_lab(proxier="nftables").run("basic")
    assert report.fingerprint["kube_proxy_mode"] == "nftables"
    assert report.fingerprint["proxier_source"] == "rules"
    assert report.fingerprint["proxier_tables"] == ["nftables"]


def test_without_kube_proxy_the_proxier_is_undetermined_not_the_registered_one(start_lab):
    report = start_lab(kube_proxy="none").run("basic")
    assert report.fingerprint["proxier_detected"] is None
    assert report.fingerprint["proxier_tables"] == []
    result = report.results["service-iptables-rules"]
    assert (result.outcome, result.reason) == (
        "skipped",
        (
            "The test doesn't work if kube-proxy is not in iptables mode (proxier not detected; "
            "registered as iptables)"
        ),
    )


def test_a_cni_other_than_the_registered_plugin_is_shown(start_lab):
    report = start_lab(plugin="calico", cni="cilium").run("basic")
    assert report.fingerprint["cni_detected"] == "cilium"
    assert report.fingerprint["cni_mismatch"] == (
        "the cluster runs cilium (DaemonSet kube-system/cilium), registered as calico"
    )


def test_kubenet_has_no_cni_daemonset(start_lab):
    report = start_lab(plugin="kubenet", kubenet=True, dataplane={"network_policy": "none"}).run(
        "basic"
    )
    assert report.fingerprint["cni_detected"] is None
    assert report.fingerprint["cni_mismatch"] is None


RBAC_403 = (
    'networkpolicies.networking.k8s.io is forbidden: User "system:serviceaccount:sctp:'
    'battery" cannot create resource "networkpolicies" in API group '
    '"networking.k8s.io" in the namespace "{ns}"'
)


def test_an_rbac_403_is_an_error_naming_the_missing_permission(start_lab, monkeypatch):
    plain = Cluster.create

    def create(self, kind, namespace, body):
        if kind == "networkpolicies":
            raise ApiError(403, RBAC_403.format(ns=namespace))
        return plain(self, kind, namespace, body)

    monkeypatch.setattr(Cluster, "create", create)
    report = start_lab().run("all")
    for key in ("declare-sctp-ports", "netpol-sctp-blocks-tcp-udp", "netpol-allow-deny"):
        result = report.results[key]
        assert result.outcome == "error", key
        assert result.reason.startswith(
            "the battery's credentials lack the RBAC permission to create networkpolicies in "
            'API group "networking.k8s.io" (403 Forbidden: '
        )
    # Not an admission refusal: the rest of the run is unaffected.
    assert report.results["pod-to-service"].outcome == "passed"


def _exc(status: int, message: str) -> ApiException:
    exc = ApiException(status=status, reason="x")
    exc.body = json.dumps({"kind": "Status", "message": message, "code": status})
    return exc


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (
            403,
            'pods "h" is forbidden: violates PodSecurity "restricted:latest": privileged',
            "admission",
        ),
        (
            400,
            'admission webhook "validation.gatekeeper.sh" denied the request: [psp] no',
            "admission",
        ),
        (403, RBAC_403.format(ns="a"), "rbac"),
        (400, "the request body must be a JSON object", None),
        (422, 'Pod "h" is invalid: spec.containers[0].image: Required value', None),
    ],
)
def test_refusals_are_told_apart(status, message, kind):
    assert refusal_kind(_exc(status, message)) == kind


def test_the_rbac_reason_names_verb_resource_and_group():
    reason = rbac_reason(
        _exc(
            403,
            'pods is forbidden: User "u" cannot list resource "pods" '
            'in API group "" at the cluster scope',
        )
    )
    assert reason.startswith("the battery's credentials lack the RBAC permission to list pods (")


@pytest.mark.parametrize(
    ("log", "parsed"),
    [
        ("TIMEOUT\n", ("TIMEOUT", "")),
        ("OTHER: connection refused\n", ("OTHER", "connection refused")),
        ("DNS: lookup nope: no such host\n", ("DNS", "lookup nope: no such host")),
        (
            "TIMEOUT: read udp 1.2.3.4:5->6.7.8.9:10: i/o timeout\n",
            ("TIMEOUT", "read udp 1.2.3.4:5->6.7.8.9:10: i/o timeout"),
        ),
        (
            "I1201 log noise\nUNKNOWN: missing port in address\n",
            ("UNKNOWN", "missing port in address"),
        ),
        ("segfault\n", ("", "")),
    ],
)
def test_agnhost_connect_failure_lines_are_read_with_their_detail(log, parsed):
    assert parse_connect_log(log) == parsed


def test_a_refused_sctp_connect_says_refused_with_agnhosts_words(start_lab, monkeypatch):
    from kernel.battery import pods

    serve = pods.porter_pod
    # The load balancer's backend listens one port off: SCTP gets an ABORT.
    monkeypatch.setattr(pods, "porter_pod", lambda n, i, p, *a: serve(n, i, p + 1, *a))
    result = start_lab().run("connectivity").results["pod-to-loadbalancer"]
    assert result.outcome == "failed"
    assert result.reason.endswith(":5060 was refused (OTHER: connection refused)")


def test_registered_without_node_access_needs_no_refusal_to_skip(start_lab):
    lab = start_lab()
    report = lab.run("basic", spec=spec_for(lab.profile, node_access=False))
    assert report.results["hostport-kubenet"].reason == (
        "no node access: the cluster is registered without node access"
    )


def test_daemonsets_the_battery_may_not_list_leave_the_cni_undetermined(start_lab, monkeypatch):
    import lab.server

    def forbidden(cluster, namespace=None):
        raise ApiError(
            403,
            'daemonsets.apps is forbidden: User "u" cannot list resource '
            '"daemonsets" in API group "apps" at the cluster scope',
        )

    monkeypatch.setattr(lab.server, "daemonsets", forbidden)
    report = start_lab().run("basic")
    assert report.fingerprint["cni_detected"] is None
    assert report.fingerprint["cni_mismatch"] is None
    assert report.fingerprint["cni_detection_error"].startswith(
        "DaemonSets not listed: 403 Forbidden: daemonsets.apps is forbidden"
    )
    assert {r.outcome for r in report.results.values()} == {"passed"}
