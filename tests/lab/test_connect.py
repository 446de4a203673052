"""Connect verdicts of agnhost client pods, for every path of the protocol document."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.lab.kube import FakeClock, Kube, namespace, pod, run_client, sctp_server, service

OK = ("Succeeded", "")
TIMEOUT = ("Failed", "TIMEOUT\n")
# agnhost connect's own words (test/images/agnhost/connect/connect.go): SCTP has no refused
# branch (an ABORT reads "OTHER: <error>"), UDP adds the Go error, DNS names the lookup.
REFUSED = ("Failed", "OTHER: connection refused\n")
TCP_REFUSED = ("Failed", "REFUSED\n")


def dns(host: str) -> tuple[str, str]:
    return ("Failed", f"DNS: lookup {host}: no such host\n")


def server_ip(kube: Kube, ns: str, name: str) -> str:
    return kube.core.read_namespaced_pod(name, ns).status.pod_ip


def deny_all_but(
    kube: Kube,
    ns: str,
    name: str,
    ports: list[tuple[str, int]] | None = None,
    peers: list[client.V1NetworkPolicyPeer] | None = None,
) -> None:
    """A policy selecting app=srv that allows only `ports` (None: every port) from `peers`."""
    rule = client.V1NetworkPolicyIngressRule(
        _from=peers,
        ports=[client.V1NetworkPolicyPort(protocol=p, port=n) for p, n in ports] if ports else None,
    )
    kube.net.create_namespaced_network_policy(
        ns,
        client.V1NetworkPolicy(
            metadata=client.V1ObjectMeta(name=name),
            spec=client.V1NetworkPolicySpec(
                pod_selector=client.V1LabelSelector(match_labels={"app": "srv"}),
                policy_types=["Ingress"],
                ingress=[rule],
            ),
        ),
    )


@pytest.fixture
def ns(kube: Kube) -> str:
    namespace(kube, "a")
    sctp_server(kube, "a", "srv")
    return "a"


def test_sctp_to_a_pod_ip_succeeds_with_an_empty_log(kube: Kube, ns: str) -> None:
    assert run_client(kube, ns, "cl", f"{server_ip(kube, ns, 'srv')}:5060") == OK


def test_the_failed_client_exits_1(kube: Kube, ns: str) -> None:
    run_client(kube, ns, "cl", f"{server_ip(kube, ns, 'srv')}:5999")
    state = kube.core.read_namespaced_pod("cl", ns).status.container_statuses[0].state
    assert state.terminated.exit_code == 1


def test_a_port_nobody_listens_on_is_refused(kube: Kube, ns: str) -> None:
    assert run_client(kube, ns, "cl", f"{server_ip(kube, ns, 'srv')}:5999") == REFUSED


def test_tcp_to_a_port_served_only_over_sctp_is_refused(kube: Kube, ns: str) -> None:
    assert (
        run_client(kube, ns, "cl", f"{server_ip(kube, ns, 'srv')}:5060", protocol="tcp")
        == TCP_REFUSED
    )


def test_an_address_nobody_owns_times_out(kube: Kube, ns: str) -> None:
    assert run_client(kube, ns, "cl", "10.244.9.9:5060") == TIMEOUT


def test_a_pause_pod_declares_the_port_but_refuses(kube: Kube, ns: str) -> None:
    pod(kube, ns, "pause", ["pause"], ports=[(5060, "SCTP")])
    assert run_client(kube, ns, "cl", f"{server_ip(kube, ns, 'pause')}:5060") == REFUSED


def test_netexec_serves_its_flags(kube: Kube, ns: str) -> None:
    pod(kube, ns, "nx", ["netexec", "--http-port=8080", "--sctp-port=9090"])
    ip = server_ip(kube, ns, "nx")
    assert run_client(kube, ns, "c1", f"{ip}:9090") == OK
    assert run_client(kube, ns, "c2", f"{ip}:8080", protocol="tcp") == OK
    phase, log = run_client(kube, ns, "c3", f"{ip}:8081", protocol="udp")
    assert (phase, log.split(":")[0]) == ("Failed", "REFUSED")
    assert log.endswith(f"->{ip}:8081: read: connection refused\n")


def test_a_client_created_before_its_server_has_started_is_refused(make_kube: Any) -> None:
    kube = make_kube(faults={"pod_start_delay_s": 1})
    clock = FakeClock()
    kube.state.clock = clock
    namespace(kube, "a")
    sctp_server(kube, "a", "srv")
    service(kube, "a", "s", {"app": "srv"})
    clock.advance(0.5)
    pod(kube, "a", "early", ["connect", "s:5060", "--protocol=sctp"])
    clock.advance(0.6)  # the server starts; the client is still pending
    pod(kube, "a", "late", ["connect", "s:5060", "--protocol=sctp"])
    clock.advance(1.0)
    assert kube.core.read_namespaced_pod_log("early", "a") == ""
    assert kube.core.read_namespaced_pod("late", "a").status.phase == "Succeeded"


@pytest.mark.parametrize("host", ["s.a.svc.cluster.local", "s.a.svc", "s.a", "s"])
def test_every_service_dns_form_resolves(kube: Kube, ns: str, host: str) -> None:
    service(kube, ns, "s", {"app": "srv"})
    assert run_client(kube, ns, "cl", f"{host}:5060") == OK


def test_a_short_name_resolves_only_in_the_clients_namespace(kube: Kube, ns: str) -> None:
    service(kube, ns, "s", {"app": "srv"})
    namespace(kube, "b")
    assert run_client(kube, "b", "cl", "s:5060") == dns("s")
    assert run_client(kube, "b", "cl2", "s.a:5060") == OK


def test_an_unknown_name_is_a_dns_failure(kube: Kube, ns: str) -> None:
    assert run_client(kube, ns, "cl", "nope.a.svc.cluster.local:5060") == dns(
        "nope.a.svc.cluster.local"
    )


def test_a_cluster_ip_reaches_the_pod_through_the_target_port(kube: Kube, ns: str) -> None:
    svc = service(kube, ns, "s", {"app": "srv"}, port=95, target_port=5060)
    assert run_client(kube, ns, "cl", f"{svc.spec.cluster_ip}:95") == OK
    assert run_client(kube, ns, "cl2", f"{svc.spec.cluster_ip}:5060") == REFUSED


def test_a_service_without_ready_endpoints_is_refused(kube: Kube, ns: str) -> None:
    service(kube, ns, "s", {"app": "nobody"})
    assert run_client(kube, ns, "cl", "s:5060") == REFUSED


def test_a_node_port_on_a_node_ip_reaches_the_pod(kube: Kube, ns: str) -> None:
    svc = service(kube, ns, "s", {"app": "srv"}, svc_type="NodePort")
    assert run_client(kube, ns, "cl", f"172.18.0.3:{svc.spec.ports[0].node_port}") == OK


def test_a_load_balancer_ip_reaches_the_pod(make_kube: Any) -> None:
    kube = make_kube(load_balancer=True)
    clock = FakeClock()
    kube.state.clock = clock
    namespace(kube, "a")
    sctp_server(kube, "a", "srv")
    service(kube, "a", "lb", {"app": "srv"}, svc_type="LoadBalancer")
    clock.advance(0.3)
    ip = kube.core.read_namespaced_service("lb", "a").status.load_balancer.ingress[0].ip
    assert run_client(kube, "a", "cl", f"{ip}:5060") == OK


@pytest.mark.parametrize(
    ("flag", "target"),
    [
        ("pod_to_pod", "pod"),
        ("via_service", "service"),
        ("via_service", "name"),
        ("via_load_balancer", "lb"),
    ],
)
def test_each_dataplane_flag_drops_sctp_on_its_path_only(
    make_kube: Any, flag: str, target: str
) -> None:
    kube = make_kube(load_balancer=True, dataplane={flag: False})
    clock = FakeClock()
    kube.state.clock = clock
    namespace(kube, "a")
    sctp_server(kube, "a", "srv")
    pod(kube, "a", "tcp", ["porter"], env={"SERVE_PORT_5060": "foo"}, labels={"app": "tcp"})
    svc = service(kube, "a", "s", {"app": "srv"}, svc_type="LoadBalancer")
    service(kube, "a", "t", {"app": "tcp"}, protocol="TCP", svc_type="LoadBalancer")
    clock.advance(0.3)
    hosts = {
        "pod": (server_ip(kube, "a", "srv"), server_ip(kube, "a", "tcp")),
        "service": (
            svc.spec.cluster_ip,
            kube.core.read_namespaced_service("t", "a").spec.cluster_ip,
        ),
        "name": ("s", "t"),
        "lb": tuple(
            kube.core.read_namespaced_service(n, "a").status.load_balancer.ingress[0].ip
            for n in ("s", "t")
        ),
    }
    paths = {
        "pod": "pod_to_pod",
        "service": "via_service",
        "name": "via_service",
        "lb": "via_load_balancer",
    }
    for i, (kind, (sctp_host, tcp_host)) in enumerate(hosts.items()):
        expected = TIMEOUT if paths[kind] == flag else OK
        assert run_client(kube, "a", f"s{i}", f"{sctp_host}:5060") == expected, kind
        # TCP never depends on the SCTP dataplane flags.
        assert run_client(kube, "a", f"t{i}", f"{tcp_host}:5060", protocol="tcp") == OK, kind


# ---------------------------------------------------------------- NetworkPolicy


def test_a_deny_all_policy_times_out_sctp_under_full_enforcement(kube: Kube, ns: str) -> None:
    kube.net.create_namespaced_network_policy(
        ns,
        client.V1NetworkPolicy(
            metadata=client.V1ObjectMeta(name="deny"),
            spec=client.V1NetworkPolicySpec(
                pod_selector=client.V1LabelSelector(), policy_types=["Ingress"]
            ),
        ),
    )
    assert run_client(kube, ns, "cl", f"{server_ip(kube, ns, 'srv')}:5060") == TIMEOUT


def test_a_policy_allowing_the_sctp_port_lets_sctp_in_under_full(kube: Kube, ns: str) -> None:
    pod(kube, ns, "tcp-srv", ["porter"], env={"SERVE_PORT_5060": "x"}, labels={"app": "srv"})
    deny_all_but(kube, ns, "allow-sctp", [("SCTP", 5060)])
    assert run_client(kube, ns, "cl", f"{server_ip(kube, ns, 'srv')}:5060") == OK
    assert (
        run_client(kube, ns, "cl2", f"{server_ip(kube, ns, 'tcp-srv')}:5060", protocol="tcp")
        == TIMEOUT
    )


def test_policies_select_peers_by_pod_and_namespace(kube: Kube, ns: str) -> None:
    namespace(kube, "other", {"team": "blue"})
    peer = client.V1NetworkPolicyPeer(
        namespace_selector=client.V1LabelSelector(match_labels={"team": "blue"}),
        pod_selector=client.V1LabelSelector(match_labels={"role": "client"}),
    )
    deny_all_but(kube, ns, "from-blue-clients", peers=[peer])
    ip = server_ip(kube, ns, "srv")
    assert run_client(kube, "other", "ok", f"{ip}:5060", labels={"role": "client"}) == OK
    assert run_client(kube, "other", "wrong-pod", f"{ip}:5060", labels={"role": "x"}) == TIMEOUT
    assert run_client(kube, ns, "wrong-ns", f"{ip}:5060", labels={"role": "client"}) == TIMEOUT


def test_a_pod_selector_peer_alone_means_the_policys_namespace(kube: Kube, ns: str) -> None:
    namespace(kube, "other")
    deny_all_but(
        kube,
        ns,
        "same-ns",
        peers=[
            client.V1NetworkPolicyPeer(
                pod_selector=client.V1LabelSelector(match_labels={"role": "client"})
            )
        ],
    )
    ip = server_ip(kube, ns, "srv")
    assert run_client(kube, ns, "in", f"{ip}:5060", labels={"role": "client"}) == OK
    assert run_client(kube, "other", "out", f"{ip}:5060", labels={"role": "client"}) == TIMEOUT


def test_a_policy_on_other_pods_changes_nothing(kube: Kube, ns: str) -> None:
    kube.net.create_namespaced_network_policy(
        ns,
        client.V1NetworkPolicy(
            metadata=client.V1ObjectMeta(name="others"),
            spec=client.V1NetworkPolicySpec(
                pod_selector=client.V1LabelSelector(match_labels={"app": "x"}),
                policy_types=["Ingress"],
            ),
        ),
    )
    assert run_client(kube, ns, "cl", f"{server_ip(kube, ns, 'srv')}:5060") == OK


def test_a_policy_also_applies_behind_a_service(kube: Kube, ns: str) -> None:
    service(kube, ns, "s", {"app": "srv"})
    deny_all_but(kube, ns, "only-9999", [("SCTP", 9999)])
    assert run_client(kube, ns, "cl", "s:5060") == TIMEOUT


def test_network_policy_none_ignores_policies(make_kube: Any) -> None:
    kube = make_kube(dataplane={"network_policy": "none"})
    namespace(kube, "a")
    sctp_server(kube, "a", "srv")
    deny_all_but(kube, "a", "only-9999", [("SCTP", 9999)])
    assert run_client(kube, "a", "cl", f"{server_ip(kube, 'a', 'srv')}:5060") == OK


def test_sctp_as_tcp_applies_an_sctp_rule_to_tcp(make_kube: Any) -> None:
    kube = make_kube(dataplane={"network_policy": "sctp-as-tcp"})
    namespace(kube, "a")
    pod(
        kube,
        "a",
        "srv",
        ["porter"],
        env={"SERVE_SCTP_PORT_5060": "x", "SERVE_PORT_5060": "x"},
        labels={"app": "srv"},
    )
    deny_all_but(kube, "a", "allow-sctp", [("SCTP", 5060)])
    ip = server_ip(kube, "a", "srv")
    assert run_client(kube, "a", "tcp", f"{ip}:5060", protocol="tcp") == OK
    assert run_client(kube, "a", "sctp", f"{ip}:5060") == TIMEOUT


def test_no_sctp_always_denies_sctp_to_a_selected_pod(make_kube: Any) -> None:
    kube = make_kube(dataplane={"network_policy": "no-sctp"})
    namespace(kube, "a")
    pod(
        kube,
        "a",
        "srv",
        ["porter"],
        env={"SERVE_SCTP_PORT_5060": "x", "SERVE_PORT_80": "x"},
        labels={"app": "srv"},
    )
    ip = server_ip(kube, "a", "srv")
    assert run_client(kube, "a", "before", f"{ip}:5060") == OK
    deny_all_but(kube, "a", "allow-everything")  # a rule with no ports at all
    assert run_client(kube, "a", "sctp", f"{ip}:5060") == TIMEOUT
    assert run_client(kube, "a", "tcp", f"{ip}:80", protocol="tcp") == OK


def test_no_sctp_does_not_widen_an_sctp_only_rule_to_every_port(make_kube: Any) -> None:
    kube = make_kube(dataplane={"network_policy": "no-sctp"})
    namespace(kube, "a")
    pod(kube, "a", "srv", ["porter"], env={"SERVE_PORT_80": "x"}, labels={"app": "srv"})
    deny_all_but(kube, "a", "allow-sctp", [("SCTP", 5060)])
    assert (
        run_client(kube, "a", "tcp", f"{server_ip(kube, 'a', 'srv')}:80", protocol="tcp") == TIMEOUT
    )


def test_the_upstream_shell_loop_client_is_understood(kube: Kube, ns: str) -> None:
    ip = server_ip(kube, ns, "srv")
    script = (
        f"for i in $(seq 1 5); do /agnhost connect {ip}:5060 --protocol sctp --timeout 8s "
        "&& exit 0 || sleep 1; done; exit 1"
    )
    pod(kube, ns, "loop", [], command=["/bin/sh", "-c", script])
    assert kube.core.read_namespaced_pod("loop", ns).status.phase == "Succeeded"
