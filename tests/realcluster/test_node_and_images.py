"""The real cluster's node (`make cluster`): pods run from the agnhost image built from the
release's source, imported under the exact name upstream's e2e.test v1.36.3 uses (nothing is
pulled: the pods here say imagePullPolicy Never), with the user land the e2e specs and the
battery exec (sh, curl, nsenter); and var/cluster/netpol tells the truth about NetworkPolicy
(enforced: a default-deny policy blocks TCP; unenforced: it does not, and the record says why).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from kernel.kubeconfig import api_client_from_kubeconfig
from tests.realcluster.conftest import ROOT

pytestmark = pytest.mark.realcluster

# test/utils/image/manifest.go of v1.36.3: configs[Agnhost] = {PromoterE2eRegistry, "agnhost",
# "2.63.0"}, PromoterE2eRegistry = registry.k8s.io/e2e-test-images.
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.63.0"
NETPOL_RECORD = ROOT / "var" / "cluster" / "netpol"


@pytest.fixture
def core(real_kubeconfig: Path) -> Iterator[Any]:
    api = api_client_from_kubeconfig(real_kubeconfig.read_text(), request_timeout=30)
    try:
        yield k8s.CoreV1Api(api)
    finally:
        api.close()


@pytest.fixture
def namespace(core: Any) -> Iterator[str]:
    name = f"realcluster-test-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    try:
        yield name
    finally:
        core.delete_namespace(name, grace_period_seconds=0)
        # Deletion is asynchronous: the suite leaves the cluster clean, so wait until it is gone.
        deadline = time.monotonic() + 120
        while any(ns.metadata.name == name for ns in core.list_namespace().items):
            assert time.monotonic() < deadline, f"namespace {name} still there after 120 s"
            time.sleep(0.5)


def pod(name: str, args: list[str], *, command: list[str] | None = None, **spec: Any) -> dict:
    container: dict[str, Any] = {
        "name": "agnhost",
        "image": AGNHOST,
        "imagePullPolicy": "Never",  # imported, never pulled: Never fails if it is not there
        "args": args,
    }
    if command:
        container["command"] = command
    return {
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 0, **spec},
    }


def wait_phase(core: Any, ns: str, name: str, phases: set[str], secs: float = 90) -> Any:
    deadline = time.monotonic() + secs
    while True:
        p = core.read_namespaced_pod(name, ns)
        ready = any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        if p.status.phase in phases and (p.status.phase != "Running" or ready):
            return p
        if time.monotonic() > deadline:
            pytest.fail(f"pod {ns}/{name} not {phases} after {secs}s: {p.status}")
        time.sleep(0.5)


def test_agnhost_of_the_release_runs_under_upstreams_name(core: Any, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod("netexec", ["netexec", "--http-port=8080"]))
    wait_phase(core, namespace, "netexec", {"Running"})
    logs = ""
    for _ in range(20):  # the log line may trail Ready by a moment
        logs = core.read_namespaced_pod_log("netexec", namespace)
        if "Started HTTP server on port 8080" in logs:
            break
        time.sleep(0.5)
    assert "Started HTTP server on port 8080" in logs

    # The version of test/images/agnhost/VERSION, and what the specs exec in the image.
    script = "/agnhost --version; which sh curl nsenter"
    core.create_namespaced_pod(
        namespace, pod("tools", ["-c", script], command=["sh"], restartPolicy="Never")
    )
    done = wait_phase(core, namespace, "tools", {"Succeeded", "Failed"})
    out = core.read_namespaced_pod_log("tools", namespace)
    assert done.status.phase == "Succeeded", out
    assert out.split() == [
        "app",
        "version",
        "2.63.0",
        "/bin/sh",
        "/usr/bin/curl",
        "/usr/bin/nsenter",
    ]


def test_the_netpol_record_tells_the_truth(core: Any, namespace: str) -> None:
    record = NETPOL_RECORD.read_text().strip() if NETPOL_RECORD.is_file() else ""
    if not record:
        pytest.skip(
            f"{NETPOL_RECORD} absent: a cluster not started by this checkout's make cluster"
        )
    state = record.split()[0]
    assert state in {"enforced", "unenforced"}, record
    if state == "unenforced":
        assert len(record.split()) > 1, "an unenforced record must say why"

    core.create_namespaced_pod(namespace, pod("server", ["netexec", "--http-port=8080"]))
    server = wait_phase(core, namespace, "server", {"Running"})
    networking: Any = k8s.NetworkingV1Api(core.api_client)
    networking.create_namespaced_network_policy(
        namespace,
        {
            "metadata": {"name": "default-deny"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        },
    )
    time.sleep(2)  # the policy reaches the enforcer (when there is one)
    url = f"http://{server.status.pod_ip}:8080/hostname"
    core.create_namespaced_pod(
        namespace,
        pod("client", ["-s", "--max-time", "5", url], command=["curl"], restartPolicy="Never"),
    )
    done = wait_phase(core, namespace, "client", {"Succeeded", "Failed"})
    answer = core.read_namespaced_pod_log("client", namespace).strip()
    if state == "enforced":
        assert done.status.phase == "Failed" and answer == "", (
            f"default-deny did not block: {answer!r}"
        )
    else:
        # Nothing enforces the policy: the connection goes through, as the record says.
        assert done.status.phase == "Succeeded" and answer == "server", (done.status, answer)
