"""The emulated API through real HTTP and the official `kubernetes` client."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from lab.server import LabServer
from tests.lab.kube import FakeClock, Kube, namespace, pod, profile, sctp_server, service


def status_of(err: ApiException) -> dict[str, Any]:
    assert err.body is not None, "an API error without a body"
    return json.loads(err.body)


def test_version_reports_the_profile_kubernetes_version(make_kube: Any) -> None:
    kube = make_kube(kubernetes_version="1.30.6")
    info = kube.version.get_code()
    assert info.git_version == "v1.30.6"
    assert (info.major, info.minor) == ("1", "30")


def test_version_says_the_cluster_is_emulated(kube: Kube) -> None:
    # The evidence policy reads this raw field (the typed VersionInfo model drops it).
    answer = json.loads(kube.version.get_code(_preload_content=False).data)
    assert answer["emulated"] is True and answer["gitVersion"] == "v1.31.2"


def test_nodes_are_listed_with_their_pod_cidrs(make_kube: Any) -> None:
    kube = make_kube(nodes=3)
    nodes = kube.core.list_node().items
    assert [n.metadata.name for n in nodes] == ["c1-control-plane", "c1-worker", "c1-worker2"]
    assert [n.spec.pod_cidr for n in nodes] == ["10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"]
    assert nodes[1].status.node_info.kubelet_version == "v1.31.2"


def test_a_wrong_token_is_refused_with_a_status(kube: Kube) -> None:
    kubeconfig = kube.lab.kubeconfig("c1")
    kubeconfig["users"][0]["user"]["token"] = "nope"
    other = client.CoreV1Api(config.new_client_from_config_dict(kubeconfig))
    with pytest.raises(ApiException) as err:
        other.list_namespace()
    assert err.value.status == 401
    assert status_of(err.value)["kind"] == "Status"


def test_the_profile_can_set_its_own_token(make_kube: Any) -> None:
    kube = make_kube(token="s3cret")
    assert kube.lab.kubeconfig("c1")["users"][0]["user"]["token"] == "s3cret"
    assert kube.core.read_namespace("default").metadata.name == "default"


def test_namespaces_list_by_label_selector(kube: Kube) -> None:
    namespace(kube, "a", {"team": "x", "tier": "1"})
    namespace(kube, "b", {"team": "y"})

    def names(sel: str) -> list[str]:
        return sorted(n.metadata.name for n in kube.core.list_namespace(label_selector=sel).items)

    assert names("team=x") == ["a"]
    assert names("team!=x,team") == ["b"]
    assert names("team in (x,y)") == ["a", "b"]
    assert names("tier") == ["a"]
    assert names("!tier,team") == ["b"]
    assert kube.core.read_namespace("a").metadata.labels["kubernetes.io/metadata.name"] == "a"


def test_a_duplicate_namespace_is_a_conflict(kube: Kube) -> None:
    namespace(kube, "a")
    with pytest.raises(ApiException) as err:
        namespace(kube, "a")
    assert err.value.status == 409
    assert status_of(err.value)["reason"] == "AlreadyExists"


def test_unknown_objects_are_not_found(kube: Kube) -> None:
    for call in (
        lambda: kube.core.read_namespace("nope"),
        lambda: kube.core.read_namespaced_pod("nope", "default"),
        lambda: kube.core.read_namespaced_service("nope", "default"),
        lambda: kube.net.read_namespaced_network_policy("nope", "default"),
        lambda: kube.core.delete_namespaced_pod("nope", "default"),
    ):
        with pytest.raises(ApiException) as err:
            call()
        assert err.value.status == 404
        assert status_of(err.value)["reason"] == "NotFound"


def test_creating_in_a_missing_namespace_is_not_found(kube: Kube) -> None:
    with pytest.raises(ApiException) as err:
        pod(kube, "ghost", "p", ["pause"])
    assert err.value.status == 404
    assert 'namespaces "ghost" not found' in status_of(err.value)["message"]


def test_deleting_a_namespace_deletes_everything_in_it(kube: Kube) -> None:
    namespace(kube, "a")
    sctp_server(kube, "a", "srv")
    service(kube, "a", "svc", {"app": "srv"})
    kube.net.create_namespaced_network_policy(
        "a",
        client.V1NetworkPolicy(
            metadata=client.V1ObjectMeta(name="np"),
            spec=client.V1NetworkPolicySpec(pod_selector=client.V1LabelSelector()),
        ),
    )
    kube.core.delete_namespace("a")
    with pytest.raises(ApiException):
        kube.core.read_namespace("a")
    namespace(kube, "a")
    assert kube.core.list_namespaced_pod("a").items == []
    assert kube.core.list_namespaced_service("a").items == []
    assert kube.net.list_namespaced_network_policy("a").items == []


def test_objects_carry_uid_resource_version_and_creation_time(kube: Kube) -> None:
    namespace(kube, "a")
    first = pod(kube, "a", "p1", ["pause"], labels={"x": "1"})
    second = pod(kube, "a", "p2", ["pause"])
    assert first.metadata.uid != second.metadata.uid
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    assert first.metadata.creation_timestamp is not None
    assert first.metadata.labels == {"x": "1"}
    listed = kube.core.list_namespaced_pod("a", label_selector="x=1").items
    assert [p.metadata.name for p in listed] == ["p1"]


def test_pods_move_from_pending_to_running_as_time_passes(make_kube: Any) -> None:
    kube = make_kube(faults={"pod_start_delay_s": 2})
    clock = FakeClock()
    kube.state.clock = clock
    namespace(kube, "a")
    created = sctp_server(kube, "a", "srv")
    assert created.status.phase == "Pending"
    assert created.status.pod_ip is None
    assert created.status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    clock.advance(1.9)
    assert kube.core.read_namespaced_pod("srv", "a").status.phase == "Pending"
    clock.advance(0.2)
    running = kube.core.read_namespaced_pod("srv", "a")
    assert running.status.phase == "Running"
    assert ipaddress.ip_address(running.status.pod_ip) in ipaddress.ip_network("10.244.0.0/16")
    assert running.status.container_statuses[0].ready is True
    assert kube.core.read_namespaced_pod_log("srv", "a") == ""


def test_pods_land_on_the_asked_node_or_round_robin_on_workers(make_kube: Any) -> None:
    kube = make_kube(nodes=3)
    namespace(kube, "a")
    pinned = pod(kube, "a", "pinned", ["pause"], node="c1-control-plane")
    spread = [pod(kube, "a", f"p{i}", ["pause"]).spec.node_name for i in range(4)]
    assert pinned.spec.node_name == "c1-control-plane"
    assert spread == ["c1-worker", "c1-worker2", "c1-worker", "c1-worker2"]
    got = kube.core.read_namespaced_pod("pinned", "a")
    assert got.status.pod_ip.startswith("10.244.0.")
    assert got.status.host_ip == "172.18.0.2"


def test_a_log_of_a_pending_pod_is_a_bad_request(make_kube: Any) -> None:
    kube = make_kube(faults={"pod_start_delay_s": 60})
    namespace(kube, "a")
    pod(kube, "a", "p", ["pause"])
    with pytest.raises(ApiException) as err:
        kube.core.read_namespaced_pod_log("p", "a")
    assert err.value.status == 400
    assert "ContainerCreating" in status_of(err.value)["message"]


def test_a_one_shot_pod_with_restart_always_crash_loops(kube: Kube) -> None:
    namespace(kube, "a")
    pod(kube, "a", "p", ["connect", "nowhere:80"], restart="Always")
    got = kube.core.read_namespaced_pod("p", "a")
    assert got.status.phase == "Running"
    assert got.status.container_statuses[0].state.waiting.reason == "CrashLoopBackOff"
    assert got.status.container_statuses[0].last_state.terminated.exit_code == 1


def test_deleting_a_pod_answers_the_pod_and_removes_it(kube: Kube) -> None:
    namespace(kube, "a")
    pod(kube, "a", "p", ["pause"])
    deleted = kube.core.delete_namespaced_pod("p", "a")
    assert deleted.metadata.name == "p"
    assert deleted.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException):
        kube.core.read_namespaced_pod("p", "a")


def test_generate_name_gives_a_fresh_name(kube: Kube) -> None:
    namespace(kube, "a")
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(generate_name="hostexec-"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x")]),
    )
    first = kube.core.create_namespaced_pod("a", body)
    second = kube.core.create_namespaced_pod("a", body)
    assert first.metadata.name.startswith("hostexec-") and len(first.metadata.name) == 14
    assert first.metadata.name != second.metadata.name


# ---------------------------------------------------------------- services


def test_a_cluster_ip_service_gets_an_address_from_the_service_range(kube: Kube) -> None:
    namespace(kube, "a")
    svc = service(kube, "a", "s", {"app": "x"})
    assert ipaddress.ip_address(svc.spec.cluster_ip) in ipaddress.ip_network("10.96.0.0/16")
    assert svc.spec.cluster_ips == [svc.spec.cluster_ip]
    assert svc.spec.ports[0].target_port == 5060
    assert svc.spec.ports[0].node_port is None
    assert svc.status.load_balancer.ingress is None


def test_a_taken_cluster_ip_is_refused(kube: Kube) -> None:
    namespace(kube, "a")
    with pytest.raises(ApiException) as err:
        service(kube, "a", "s", {"app": "x"}, cluster_ip="10.96.0.1")
    assert err.value.status == 422
    assert "already allocated" in status_of(err.value)["message"]


def test_node_ports_come_from_the_node_port_range(kube: Kube) -> None:
    namespace(kube, "a")
    ports = {
        service(kube, "a", f"s{i}", {"app": "x"}, svc_type="NodePort").spec.ports[0].node_port
        for i in range(20)
    }
    assert len(ports) == 20
    assert all(30000 <= p <= 32767 for p in ports)


def test_a_load_balancer_gets_an_ingress_ip_after_a_moment(make_kube: Any) -> None:
    kube = make_kube(load_balancer=True)
    clock = FakeClock()
    kube.state.clock = clock
    namespace(kube, "a")
    created = service(kube, "a", "lb", {"app": "x"}, svc_type="LoadBalancer")
    assert created.status.load_balancer.ingress is None
    assert created.spec.ports[0].node_port is not None
    clock.advance(0.25)
    ingress = kube.core.read_namespaced_service("lb", "a").status.load_balancer.ingress
    assert ipaddress.ip_address(ingress[0].ip) in ipaddress.ip_network("172.18.255.0/24")


def test_without_a_load_balancer_the_ingress_stays_empty(kube: Kube) -> None:
    clock = FakeClock()
    kube.state.clock = clock
    namespace(kube, "a")
    service(kube, "a", "lb", {"app": "x"}, svc_type="LoadBalancer")
    clock.advance(3600)
    assert kube.core.read_namespaced_service("lb", "a").status.load_balancer.ingress is None


def test_deleting_a_service_answers_the_service(kube: Kube) -> None:
    namespace(kube, "a")
    service(kube, "a", "s", {"app": "x"})
    assert kube.core.delete_namespaced_service("s", "a").metadata.name == "s"
    assert kube.core.list_namespaced_service("a").items == []


def test_endpoints_and_slices_follow_ready_pods_matching_the_selector(kube: Kube) -> None:
    namespace(kube, "a")
    service(kube, "a", "s", {"app": "srv"})
    empty = kube.core.read_namespaced_endpoints("s", "a")
    assert empty.subsets is None
    sctp_server(kube, "a", "srv")
    pod(kube, "a", "other", ["pause"], labels={"app": "other"})
    ip = kube.core.read_namespaced_pod("srv", "a").status.pod_ip
    subsets = kube.core.read_namespaced_endpoints("s", "a").subsets
    assert [a.ip for a in subsets[0].addresses] == [ip]
    assert (subsets[0].ports[0].port, subsets[0].ports[0].protocol) == (5060, "SCTP")
    slices = kube.discovery.list_namespaced_endpoint_slice(
        "a", label_selector="kubernetes.io/service-name=s"
    ).items
    assert len(slices) == 1
    assert slices[0].address_type == "IPv4"
    assert [e.addresses for e in slices[0].endpoints] == [[ip]]
    assert slices[0].endpoints[0].conditions.ready is True
    assert slices[0].ports[0].port == 5060
    again = kube.discovery.read_namespaced_endpoint_slice(slices[0].metadata.name, "a")
    assert again.metadata.name == slices[0].metadata.name


def test_a_named_target_port_resolves_through_the_pod(kube: Kube) -> None:
    namespace(kube, "a")
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(name="srv", labels={"app": "srv"}),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(
                    name="c",
                    image="x",
                    args=["porter"],
                    ports=[
                        client.V1ContainerPort(name="sip", container_port=5061, protocol="SCTP")
                    ],
                )
            ]
        ),
    )
    kube.core.create_namespaced_pod("a", body)
    service(kube, "a", "s", {"app": "srv"}, target_port="sip")
    assert kube.core.read_namespaced_endpoints("s", "a").subsets[0].ports[0].port == 5061


def test_endpoint_slices_do_not_exist_before_1_21(make_kube: Any) -> None:
    kube = make_kube(kubernetes_version="1.18.20")
    with pytest.raises(ApiException) as err:
        kube.discovery.list_namespaced_endpoint_slice("default")
    assert err.value.status == 404


# ---------------------------------------------------------------- network policies


def test_network_policies_round_trip_and_delete_with_a_success_status(kube: Kube) -> None:
    namespace(kube, "a")
    body = client.V1NetworkPolicy(
        metadata=client.V1ObjectMeta(name="allow-sctp"),
        spec=client.V1NetworkPolicySpec(
            pod_selector=client.V1LabelSelector(match_labels={"app": "srv"}),
            ingress=[
                client.V1NetworkPolicyIngressRule(
                    ports=[client.V1NetworkPolicyPort(protocol="SCTP", port=5060)]
                )
            ],
        ),
    )
    created = kube.net.create_namespaced_network_policy("a", body)
    assert created.spec.policy_types == ["Ingress"]
    got = kube.net.read_namespaced_network_policy("allow-sctp", "a")
    assert got.spec.ingress[0].ports[0].protocol == "SCTP"
    assert [p.metadata.name for p in kube.net.list_namespaced_network_policy("a").items] == [
        "allow-sctp"
    ]
    with pytest.raises(ApiException) as err:
        kube.net.create_namespaced_network_policy("a", body)
    assert err.value.status == 409
    deleted = kube.net.delete_namespaced_network_policy("allow-sctp", "a")
    assert deleted["kind"] == "Status" and deleted["status"] == "Success"


# ---------------------------------------------------------------- admission


@pytest.mark.parametrize("kind", ["pod", "service", "networkpolicy"])
def test_sctp_is_invalid_when_the_feature_gate_is_off(make_kube: Any, kind: str) -> None:
    kube = make_kube(sctp_feature_gate=False, kubernetes_version="1.18.20")
    namespace(kube, "a")
    with pytest.raises(ApiException) as err:
        if kind == "pod":
            sctp_server(kube, "a", "srv")
        elif kind == "service":
            service(kube, "a", "s", {"app": "x"})
        else:
            kube.net.create_namespaced_network_policy(
                "a",
                client.V1NetworkPolicy(
                    metadata=client.V1ObjectMeta(name="np"),
                    spec=client.V1NetworkPolicySpec(
                        pod_selector=client.V1LabelSelector(),
                        ingress=[
                            client.V1NetworkPolicyIngressRule(
                                ports=[client.V1NetworkPolicyPort(protocol="SCTP", port=5060)]
                            )
                        ],
                    ),
                ),
            )
    assert err.value.status == 422
    body = status_of(err.value)
    assert body["reason"] == "Invalid"
    assert body["message"].endswith('Unsupported value: "SCTP": supported values: "TCP", "UDP"')


def test_tcp_still_works_when_the_feature_gate_is_off(make_kube: Any) -> None:
    kube = make_kube(sctp_feature_gate=False)
    namespace(kube, "a")
    assert service(kube, "a", "s", {"app": "x"}, protocol="TCP").spec.ports[0].protocol == "TCP"


def test_privileged_pods_are_forbidden_without_node_access(make_kube: Any) -> None:
    kube = make_kube(node_access=False)
    from tests.lab.kube import hostexec

    with pytest.raises(ApiException) as err:
        hostexec(kube, "c1-worker", "lsmod", name="hostexec-x")
    assert err.value.status == 403
    message = status_of(err.value)["message"]
    assert message.startswith(
        'pods "hostexec-x" is forbidden: violates PodSecurity "baseline:latest": '
    )
    assert "privileged" in message and "hostNetwork=true" in message and "hostPath" in message


def test_an_unknown_path_and_an_unknown_cluster_answer_404(kube: Kube) -> None:
    import urllib.error
    import urllib.request

    for path in ("/clusters/c1/api/v1/widgets", "/clusters/nope/version"):
        req = urllib.request.Request(
            kube.lab.base_url + path, headers={"Authorization": "Bearer lab-c1-token"}
        )
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, context=kube.lab.client_context())
        assert err.value.code == 404
        assert json.loads(err.value.read())["kind"] == "Status"


def test_one_server_serves_several_clusters_apart() -> None:
    lab = LabServer([profile("one"), profile("two", kubernetes_version="1.33.1")]).start()
    try:
        one = client.VersionApi(config.new_client_from_config_dict(lab.kubeconfig("one")))
        two = client.CoreV1Api(config.new_client_from_config_dict(lab.kubeconfig("two")))
        assert one.get_code().git_version == "v1.31.2"
        two.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="only-two")))
        assert "only-two" not in lab.cluster("one").namespaces
        assert lab.cluster_url("two") == f"{lab.base_url}/clusters/two"
    finally:
        lab.stop()
