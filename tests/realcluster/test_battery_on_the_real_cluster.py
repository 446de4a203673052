"""Our battery (`all`: the KEP's 4 basic and 4 connectivity tests) against the real cluster of
`make cluster`, through the product's own path: a vendor registers it through the API with its
kubeconfig (a loopback API server, allowed only by the operator's CLUSTER_ALLOWED_NETWORKS), a
maintainer approves it, `manage.py run_battery` queues the run and a real Celery worker over
Redis (the test's own queue and key prefixes) runs it; then the run page.

What each test must end as, on this cluster (one node; kernel without SCTP sockets or modules;
netfilter with xt_sctp; the reference bridge/host-local/portmap CNI; no NetworkPolicy
enforcer running; kube-proxy in iptables or nftables mode):

- declare-sctp-ports passes (the API keeps SCTP ports; Endpoints and EndpointSlice 0 -> 1 -> 0);
- hostport-kubenet passes on the rules portmap really wrote (CNI-HOSTPORT-DNAT -> CNI-DN-…);
- service-iptables-rules passes on kube-proxy's nat rules in iptables mode, and is skipped
  (upstream's words) in nftables mode;
- netpol-sctp-blocks-tcp-udp never passes: skipped, no NetworkPolicy implementation;
- the connectivity tests are skipped as [Feature:SCTPConnectivity] would be, the kernel's
  missing SCTP named: never passed, never failed.
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from dashboard.domain.models import Cluster, Run
from kernel.vocabulary import BASIC_KEYS, CONNECTIVITY_KEYS
from tests.conftest import auth
from tests.e2e import wait_for
from tests.realcluster.conftest import (
    battery_namespaces_left,
    proxy_mode,
    register_and_approve,
    registration_form,
    vendor_token,
)
from tests.worker import celery_worker
from workers import runner

pytestmark = [
    pytest.mark.realcluster,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]


def host_has_sctp_sockets() -> bool:
    """The node is this host (same kernel): can it open an SCTP socket at all?"""
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP).close()
    except OSError as exc:
        if exc.errno in (errno.EPROTONOSUPPORT, errno.ESOCKTNOSUPPORT):
            return False
        raise
    return True


def test_the_loopback_server_is_refused_without_the_operators_setting(
    client, real_kubeconfig: Path, settings
) -> None:
    settings.CLUSTER_ALLOWED_NETWORKS = ""
    form = registration_form(real_kubeconfig, "real-refused")
    resp = client.post("/api/v1/clusters/", form, **auth(vendor_token()))
    assert resp.status_code == 400, resp.content
    assert resp.json()["error"] == (
        "kubeconfig: server https://127.0.0.1:6443 is not allowed: the server resolves to a "
        "loopback address, where clusters may not be (CLUSTER_ALLOWED_NETWORKS lists the "
        "exceptions)"
    )
    assert not Cluster.objects.filter(name="real-refused").exists()


def test_the_battery_runs_on_the_real_cluster_through_a_worker_and_ends_as_upstream(
    real_kubeconfig: Path,
) -> None:
    client = Client()
    mode = proxy_mode(real_kubeconfig)
    cluster = register_and_approve(client, real_kubeconfig, "real-battery", mode)
    with celery_worker() as worker:
        call_command("run_battery", cluster.name, "--battery", "all")
        run = Run.objects.get(cluster=cluster)
        wait_for(
            lambda: Run.objects.get(pk=run.pk).state in ("finished", "error"),
            600,  # about 70 s measured on the shared cluster
            f"run {run.pk}",
            worker["log"],
        )
    run.refresh_from_db()
    assert run.state == "finished", run.error
    # Every namespace of the run is deleted (the API deletes asynchronously: wait for it).
    wait_for(
        lambda: not battery_namespaces_left(real_kubeconfig, [runner.battery_run_id(run.pk)]),
        180,
        f"the namespaces of run {run.pk} to go",
    )
    assert run.emulated is False and run.fingerprint["emulated"] is False
    assert run.fingerprint["kubernetes_version"] == "1.36.3"
    assert run.fingerprint["kube_proxy_mode"] == mode
    results = {r.test_key: r for r in run.results.all()}
    assert set(BASIC_KEYS) | set(CONNECTIVITY_KEYS) <= set(results)

    declare = results["declare-sctp-ports"]
    assert declare.outcome == "passed", declare.reason
    assert declare.reason == (
        "The API accepted protocol SCTP on a Pod, a Service and a NetworkPolicy, and the "
        "service's Endpoints and EndpointSlice listed the pod with 5060/SCTP only while it existed"
    )

    hostport = results["hostport-kubenet"]
    assert hostport.outcome == "passed", hostport.reason
    assert hostport.reason.startswith("iptables on node ")
    assert "carries SCTP hostPort 5060 to the pod (10.88." in hostport.reason
    assert ": CNI-HOSTPORT-DNAT -> CNI-DN-" in hostport.reason
    assert "-m multiport --dports 5060 -j CNI-DN-" in hostport.evidence

    rules = results["service-iptables-rules"]
    if mode == "iptables":
        assert rules.outcome == "passed", rules.reason
        assert rules.reason.startswith("kube-proxy wrote the nat-table KUBE-SERVICES jump for SCTP")
        assert "-A KUBE-SERVICES -d 10.0.0." in rules.evidence and "-p sctp" in rules.evidence
    else:  # nftables: kube-proxy's nftables rules are read
        assert rules.outcome == "passed", rules.reason
        assert rules.reason.startswith(
            "kube-proxy (nftables mode) wrote the service-ips element for SCTP 10.0.0."
        )
        assert " . sctp . 5060 : goto service-" in rules.evidence
        assert "dnat ip to numgen random mod 1 map { 0 : 10.88." in rules.evidence

    # The TCP and UDP pod-to-service checks beside the catalog: pods reach the Service range
    # (the CNI config gives them a default route; without it, "connect: network is unreachable").
    for key in ("conformance-tcp-pod-to-service", "conformance-udp-pod-to-service"):
        assert key in results, sorted(results)
        assert results[key].outcome == "passed", (key, results[key].reason)

    # No NetworkPolicy implementation runs here (kubenet's plugins have none): never a pass.
    netpol = results["netpol-sctp-blocks-tcp-udp"]
    assert netpol.outcome == "skipped", netpol.reason
    assert netpol.reason == "the plugin kubenet does not implement NetworkPolicy"

    if not host_has_sctp_sockets():
        for key in CONNECTIVITY_KEYS:
            result = results[key]
            assert result.outcome == "skipped", (key, result.reason)
            assert result.reason.startswith("[Feature:SCTPConnectivity]: the kernel of node "), (
                result.reason
            )
            assert (
                "has no SCTP sockets (`agnhost connect --protocol=sctp`: `OTHER: protocol not supported`)"
                in result.reason
            )
            assert "neither passed nor failed" in result.reason
            assert "its kernel has no SCTP sockets" in result.evidence
    else:
        assert all(results[k].outcome != "failed" or results[k].reason for k in CONNECTIVITY_KEYS)

    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "CNI-HOSTPORT-DNAT" in html
    if not host_has_sctp_sockets():
        assert "[Feature:SCTPConnectivity]" in html
