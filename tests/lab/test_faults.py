"""Fault injection: error rate, slow and stuck pods, a module-loading plugin, a hanging API."""

from __future__ import annotations

import time
from typing import Any

import pytest
import urllib3
from kubernetes.client.rest import ApiException

from tests.lab.kube import FakeClock, Kube, hostexec, namespace, pod, sctp_server, service


def outcomes(kube: Kube, count: int) -> list[int]:
    codes = []
    for _ in range(count):
        try:
            kube.core.read_namespace("default")
            codes.append(200)
        except ApiException as err:
            codes.append(err.status)
    return codes


def test_the_error_rate_fails_about_that_fraction_of_requests(make_kube: Any) -> None:
    kube = make_kube(faults={"api_error_rate": 0.3})
    codes = outcomes(kube, 200)
    failures = [c for c in codes if c != 200]
    assert set(failures) <= {500, 503}
    assert 30 <= len(failures) <= 90


def test_error_injection_is_reproducible_for_a_seed(make_kube: Any) -> None:
    first = outcomes(make_kube(name="x", seed=7, faults={"api_error_rate": 0.5}), 40)
    second = outcomes(make_kube(name="x", seed=7, faults={"api_error_rate": 0.5}), 40)
    assert first == second
    assert 200 in first and any(c != 200 for c in first)


def test_injected_errors_are_status_objects(make_kube: Any) -> None:
    kube = make_kube(faults={"api_error_rate": 1.0})
    with pytest.raises(ApiException) as err:
        kube.core.list_namespace()
    assert err.value.status in (500, 503)
    assert '"kind": "Status"' in (err.value.body or "")


def test_the_start_delay_holds_pods_pending(make_kube: Any) -> None:
    kube = make_kube(faults={"pod_start_delay_s": 5})
    clock = FakeClock()
    kube.state.clock = clock
    namespace(kube, "a")
    sctp_server(kube, "a", "srv")
    clock.advance(4.9)
    assert kube.core.read_namespaced_pod("srv", "a").status.phase == "Pending"
    clock.advance(0.2)
    assert kube.core.read_namespaced_pod("srv", "a").status.phase == "Running"


def test_stuck_pending_pods_never_start_nor_load_the_module(make_kube: Any) -> None:
    kube = make_kube(faults={"stuck_pending": True})
    clock = FakeClock()
    kube.state.clock = clock
    namespace(kube, "a")
    sctp_server(kube, "a", "srv")
    clock.advance(86400)
    assert kube.core.read_namespaced_pod("srv", "a").status.phase == "Pending"
    assert not any(node.sctp_loaded for node in kube.state.nodes)


@pytest.mark.parametrize("kind", ["pod", "service", "networkpolicy"])
def test_basic_loads_module_loads_sctp_everywhere_when_an_sctp_object_appears(
    make_kube: Any, kind: str
) -> None:
    from kubernetes import client

    kube = make_kube(faults={"basic_loads_module": True})
    namespace(kube, "a")
    service(kube, "a", "tcp", {"app": "x"}, protocol="TCP")
    assert not any(node.sctp_loaded for node in kube.state.nodes)
    if kind == "pod":
        pod(kube, "a", "pause", ["pause"], ports=[(5060, "SCTP")])
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
    for node in ("c1-control-plane", "c1-worker"):
        _p, log, _c = hostexec(kube, node, "lsmod")
        assert "\nsctp " in log
    assert "basic_loads_module" in kube.state.module_events[0].cause


def test_api_timeout_makes_requests_hang(make_kube: Any) -> None:
    kube = make_kube(faults={"api_timeout": True, "api_timeout_s": 5})
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.HTTPError):
        kube.core.list_namespace(_request_timeout=0.3)
    # The client retries a read timeout three times; each attempt waits its 0.3 s.
    assert 0.25 <= time.monotonic() - started < 3


def test_stop_is_quick_even_with_a_request_hanging(make_kube: Any) -> None:
    kube = make_kube(faults={"api_timeout": True, "api_timeout_s": 30})
    with pytest.raises(urllib3.exceptions.HTTPError):
        kube.core.list_namespace(_request_timeout=0.2)
    started = time.monotonic()
    kube.lab.stop()
    assert time.monotonic() - started < 2
