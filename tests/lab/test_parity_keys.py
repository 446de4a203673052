"""The contract's newer profile keys, through the real kubernetes client against the lab."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.lab.kube import Kube, hostexec, namespace, pod, run_client, sctp_server, service


def privileged_pod(kube: Kube, ns: str, name: str = "priv") -> Any:
    return pod(kube, ns, name, ["pause"], privileged=True)


@pytest.mark.parametrize(
    ("mode", "code", "reason", "message"),
    [
        (
            "forbid",
            403,
            "Forbidden",
            (
                'pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged '
                '(container "c" must not set securityContext.privileged=true)'
            ),
        ),
        (
            "webhook-deny",
            400,
            "BadRequest",
            (
                'admission webhook "pod-policy.example.com" denied the request: privileged pods, host '
                "namespaces and hostPath volumes are not allowed"
            ),
        ),
    ],
)
def test_admission_refuses_privileged_pods_as_pod_security_or_a_webhook_does(
    make_kube, mode, code, reason, message
):
    kube = make_kube(admission={"privileged_pods": mode})
    ns = namespace(kube, "a")
    with pytest.raises(ApiException) as caught:
        privileged_pod(kube, ns)
    status = json.loads(caught.value.body)
    assert (caught.value.status, status["reason"], status["message"]) == (code, reason, message)
    pod(kube, ns, "plain", ["pause"])  # an unprivileged pod is admitted


def test_pod_security_baseline_also_refuses_a_host_port(make_kube):
    kube = make_kube(node_access=False)
    ns = namespace(kube, "a")
    with pytest.raises(ApiException) as caught:
        pod(kube, ns, "hp", ["pause"], ports=[(5060, "SCTP")], host_port=True)
    assert json.loads(caught.value.body)["message"].endswith(
        'violates PodSecurity "baseline:latest": hostPort (container "c" uses hostPort 5060)'
    )


def test_the_cni_and_kube_proxy_daemonsets_are_listed(make_kube):
    kube = make_kube(plugin="calico", cni="cilium")
    listing = client.AppsV1Api(kube.api_client).list_daemon_set_for_all_namespaces()
    assert [(d.metadata.namespace, d.metadata.name) for d in listing.items] == [
        ("kube-system", "cilium"),
        ("kube-system", "kube-proxy"),
    ]
    assert listing.items[0].status.number_ready == 2
    none = make_kube("c2", plugin="kubenet", kube_proxy="none")
    assert client.AppsV1Api(none.api_client).list_daemon_set_for_all_namespaces().items == []


def proxy_mode_pod(kube: Kube, ns: str, name: str, host_network: bool = True) -> tuple[str, str]:
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            restart_policy="Never",
            host_network=host_network,
            containers=[
                client.V1Container(
                    name="c",
                    image="agnhost",
                    command=[
                        "sh",
                        "-c",
                        "curl -q -s --connect-timeout 1 http://localhost:10249/proxyMode",
                    ],
                )
            ],
        ),
    )
    kube.core.create_namespaced_pod(ns, body)
    got = kube.core.read_namespaced_pod(name, ns)
    return got.status.phase, kube.core.read_namespaced_pod_log(name, ns)


def test_kube_proxys_mode_answers_a_host_network_pod_with_the_mode_it_runs(make_kube):
    kube = make_kube(proxier="ipvs", kube_proxy="iptables")
    ns = namespace(kube, "a")
    assert proxy_mode_pod(kube, ns, "m1") == ("Succeeded", "iptables")
    assert proxy_mode_pod(kube, ns, "m2", host_network=False) == ("Failed", "")
    gone = make_kube("c2", kube_proxy="none")
    assert proxy_mode_pod(gone, namespace(gone, "a"), "m3") == ("Failed", "")
    # The node's own tables follow the mode kube-proxy runs, not the registered one.
    _phase, rules, _code = hostexec(kube, "c1-worker", "ipvsadm -Ln")
    assert "rr" not in rules


def test_a_node_port_path_that_drops_sctp_times_out(make_kube):
    kube = make_kube(dataplane={"via_node_port": False})
    ns = namespace(kube, "a")
    sctp_server(kube, ns, "srv")
    svc = service(kube, ns, "s", {"app": "srv"}, svc_type="NodePort")
    node_port = svc.spec.ports[0].node_port
    assert run_client(kube, ns, "np", f"172.18.0.3:{node_port}") == ("Failed", "TIMEOUT\n")
    assert run_client(kube, ns, "cip", f"{svc.spec.cluster_ip}:5060") == ("Succeeded", "")


def netexec(kube: Kube, ns: str, name: str, labels: dict[str, str], *flags: str) -> str:
    pod(kube, ns, name, ["netexec", *flags], labels=labels)
    return kube.core.read_namespaced_pod(name, ns).status.pod_ip


def dial(kube: Kube, ns: str, name: str, tester: str, host: str, port: int, tries: int) -> Any:
    url = (
        f"http://{tester}:9080/dial?request=hostname&protocol=sctp&host={host}&port={port}"
        f"&tries={tries}"
    )
    pod(kube, ns, name, [], command=["curl", "-g", "-q", "-s", "--max-time", "5", url])
    got = kube.core.read_namespaced_pod(name, ns)
    assert got.status.phase == "Succeeded"
    return json.loads(kube.core.read_namespaced_pod_log(name, ns))


@pytest.mark.parametrize(
    ("reachable", "answers"), [("all", ["e1", "e2", "e1", "e2"]), ("one", ["e1", "e1"])]
)
def test_netexec_dial_answers_with_each_endpoints_hostname(make_kube, reachable, answers):
    kube = make_kube(dataplane={"endpoints_reachable": reachable})
    ns = namespace(kube, "a")
    for name in ("e1", "e2"):
        netexec(kube, ns, name, {"app": "ep"}, "--http-port=8083", "--sctp-port=8082")
    tester = netexec(kube, ns, "tester", {"app": "tester"}, "--http-port=9080")
    svc = service(kube, ns, "s", {"app": "ep"}, port=95, target_port=8082)
    answer = dial(kube, ns, "d", tester, svc.spec.cluster_ip, 95, 4)
    assert answer["responses"] == answers
    if reachable == "one":
        assert len(answer["errors"]) == 2
        assert answer["errors"][0].startswith("reading from sctp connection failed. err:'read sctp")
    else:
        assert "errors" not in answer


def test_a_porter_is_no_netexec_it_does_not_answer_hostname(kube):
    ns = namespace(kube, "a")
    ip = (
        sctp_server(kube, ns, "srv").metadata.name
        and kube.core.read_namespaced_pod("srv", ns).status.pod_ip
    )
    tester = netexec(kube, ns, "tester", {"app": "tester"}, "--http-port=9080")
    answer = dial(kube, ns, "d", tester, ip, 5060, 1)
    assert answer["responses"] == [] and len(answer["errors"]) == 1


def test_cilium_without_kube_proxy_drops_sctp_whose_target_port_differs(make_kube):
    kube = make_kube(cni="cilium", plugin="cilium", kube_proxy="none")
    ns = namespace(kube, "a")
    sctp_server(kube, ns, "srv", port=8082)
    svc = service(kube, ns, "s", {"app": "srv"}, port=95, target_port=8082)
    assert run_client(kube, ns, "c1", f"{svc.spec.cluster_ip}:95") == ("Failed", "TIMEOUT\n")
    same = service(kube, ns, "same", {"app": "srv"}, port=8082)
    assert run_client(kube, ns, "c2", f"{same.spec.cluster_ip}:8082") == ("Succeeded", "")


def test_an_sctp_host_port_loads_the_module_when_the_fault_says_so(make_kube):
    kube = make_kube(faults={"hostport_loads_module": True})
    ns = namespace(kube, "a")
    pod(kube, ns, "hp", ["pause"], ports=[(5060, "SCTP")], host_port=True, node="c1-worker")
    kube.core.read_namespaced_pod("hp", ns)
    assert [n.sctp_loaded for n in kube.state.nodes] == [False, True]
    pod(kube, ns, "tcp", ["pause"], ports=[(8080, "TCP")], host_port=True, node="c1-control-plane")
    kube.core.read_namespaced_pod("tcp", ns)
    assert kube.state.nodes[0].sctp_loaded is False


def test_endpoints_never_removed_keeps_a_deleted_pod_listed(make_kube):
    kube = make_kube(faults={"endpoints_never_removed": True})
    ns = namespace(kube, "a")
    sctp_server(kube, ns, "srv")
    svc = service(kube, ns, "s", {"app": "srv"})
    kube.core.delete_namespaced_pod("srv", ns)
    with pytest.raises(ApiException) as caught:
        kube.core.read_namespaced_pod("srv", ns)
    assert caught.value.status == 404
    assert kube.core.list_namespaced_pod(ns).items == []
    endpoints = kube.core.read_namespaced_endpoints("s", ns)
    assert [a.target_ref.name for a in endpoints.subsets[0].addresses] == ["srv"]
    slices = kube.discovery.list_namespaced_endpoint_slice(ns).items
    assert [e.target_ref.name for e in slices[0].endpoints] == ["srv"]
    # Traffic to the stale endpoint goes nowhere; the name can be used again.
    assert run_client(kube, ns, "cl", f"{svc.spec.cluster_ip}:5060") == ("Failed", "TIMEOUT\n")
    sctp_server(kube, ns, "srv")


def test_namespace_selector_false_ignores_sctp_peers_given_by_namespace(make_kube):
    kube = make_kube(dataplane={"namespace_selector": False})
    ns = namespace(kube, "a")
    namespace(kube, "b", {"team": "b"})
    ip = sctp_server(kube, ns, "srv") and kube.core.read_namespaced_pod("srv", ns).status.pod_ip
    peer = client.V1NetworkPolicyPeer(
        namespace_selector=client.V1LabelSelector(match_labels={"team": "b"})
    )
    kube.net.create_namespaced_network_policy(
        ns,
        client.V1NetworkPolicy(
            metadata=client.V1ObjectMeta(name="p"),
            spec=client.V1NetworkPolicySpec(
                pod_selector=client.V1LabelSelector(match_labels={"app": "srv"}),
                policy_types=["Ingress"],
                ingress=[client.V1NetworkPolicyIngressRule(_from=[peer])],
            ),
        ),
    )
    assert run_client(kube, "b", "sctp", f"{ip}:5060") == ("Failed", "TIMEOUT\n")


def test_pod_security_lists_violations_in_its_checks_order(make_kube):
    # As a real refusal reads: host namespaces, hostPath volumes, hostPort, privileged.
    kube = make_kube(node_access=False)
    ns = namespace(kube, "a")
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(name="all"),
        spec=client.V1PodSpec(
            host_network=True,
            containers=[
                client.V1Container(
                    name="c",
                    image="agnhost",
                    ports=[client.V1ContainerPort(container_port=5060, host_port=5060)],
                    security_context=client.V1SecurityContext(privileged=True),
                )
            ],
            volumes=[client.V1Volume(name="r", host_path=client.V1HostPathVolumeSource(path="/"))],
        ),
    )
    with pytest.raises(ApiException) as caught:
        kube.core.create_namespaced_pod(ns, body)
    assert json.loads(caught.value.body)["message"] == (
        'pods "all" is forbidden: violates PodSecurity "baseline:latest": host namespaces '
        '(hostNetwork=true), hostPath volumes (volume "r"), hostPort (container "c" uses '
        'hostPort 5060), privileged (container "c" must not set '
        "securityContext.privileged=true)"
    )
