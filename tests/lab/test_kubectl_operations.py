"""The real kubectl's everyday operations on a lab cluster, beyond the issue's list: cordon,
taint and label nodes, scale a Deployment, read events (`get events`, `describe pod`), the
`default` ServiceAccount every namespace has and `create token` for it, and the tables of the
kinds the lab derives (DaemonSets, ConfigMaps, ServiceAccounts)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.lab.kube import profile
from tests.lab.test_kubeapi import Raw
from tests.lab.test_kubectl import Kubectl, kubectl_on

NAME = "ops"
WORKERS = [f"{NAME}-worker", f"{NAME}-worker2"]
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.47"


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    prof = profile(NAME, nodes=3, kubernetes_version="1.32.3", faults={"pod_start_delay_s": 0})
    with kubectl_on([prof], tmp_path_factory.mktemp("ops")) as tool:
        yield tool


def _json(kubectl: Kubectl, *args: str) -> Any:
    return json.loads(kubectl(NAME, *args, "-o", "json").stdout)


def _until(what: str, check: Callable[[], Any], seconds: float = 20.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_cordon_taint_and_label_nodes_and_the_scheduler_follows(kubectl: Kubectl) -> None:
    ns = "cordon"
    kubectl(NAME, "create", "namespace", ns)
    for node in WORKERS:
        assert f"node/{node} cordoned" in kubectl(NAME, "cordon", node).stdout
    nodes = {
        line.split()[0]: line.split()[1]
        for line in kubectl(NAME, "get", "nodes").stdout.splitlines()[1:]
    }
    assert nodes == {
        f"{NAME}-control-plane": "Ready",
        **dict.fromkeys(WORKERS, "Ready,SchedulingDisabled"),
    }
    spec = _json(kubectl, "get", "node", WORKERS[0])["spec"]
    assert spec["unschedulable"] is True
    assert [t["key"] for t in spec["taints"]] == ["node.kubernetes.io/unschedulable"]

    # No node takes the pod (the control plane is tainted): Pending, and the scheduler says why.
    kubectl(NAME, "run", "waits", "-n", ns, f"--image={AGNHOST}")
    pod = _json(kubectl, "get", "pod", "waits", "-n", ns)
    assert pod["status"]["phase"] == "Pending" and "nodeName" not in pod["spec"]
    why = (
        "0/3 nodes are available: 1 node(s) had untolerated taint "
        "{node-role.kubernetes.io/control-plane: }, 2 node(s) were unschedulable."
    )
    assert why in pod["status"]["conditions"][0]["message"]
    events = kubectl(NAME, "get", "events", "-n", ns).stdout
    assert "Warning   FailedScheduling   pod/waits" in events and why in events
    assert "FailedScheduling" in kubectl(NAME, "describe", "pod", "waits", "-n", ns).stdout

    # Uncordoned, the node takes the waiting pod; the kubelet's events follow.
    assert "uncordoned" in kubectl(NAME, "uncordon", WORKERS[1]).stdout
    kubectl(NAME, "wait", "--for=condition=Ready", "pod/waits", "-n", ns, "--timeout=20s")
    assert _json(kubectl, "get", "pod", "waits", "-n", ns)["spec"]["nodeName"] == WORKERS[1]
    assert "taints" not in _json(kubectl, "get", "node", WORKERS[1])["spec"]
    described = kubectl(NAME, "describe", "pod", "waits", "-n", ns).stdout
    for reason, words in (
        ("Scheduled", f"Successfully assigned {ns}/waits to {WORKERS[1]}"),
        ("Pulled", f'Container image "{AGNHOST}" already present on machine'),
        ("Created", "Created container waits"),
        ("Started", "Started container waits"),
    ):
        assert reason in described and words in described, (reason, described)
    selected = kubectl(
        NAME,
        "get",
        "events",
        "-n",
        ns,
        "--field-selector",
        "reason=Started,involvedObject.name=waits",
    ).stdout
    assert "Started container waits" in selected and "Pulled" not in selected
    refused = kubectl(NAME, "get", "events", "-n", ns, "--field-selector", "colour=red", ok=False)
    assert refused.returncode != 0 and "field label not supported: colour" in refused.stderr

    # A NoSchedule taint keeps pods off as a cordon does; labels come and go.
    kubectl(NAME, "taint", "node", WORKERS[1], "dedicated=sctp:NoSchedule")
    assert _json(kubectl, "get", "node", WORKERS[1])["spec"]["taints"] == [
        {"key": "dedicated", "value": "sctp", "effect": "NoSchedule"}
    ]
    kubectl(NAME, "run", "kept-off", "-n", ns, f"--image={AGNHOST}")
    assert "nodeName" not in _json(kubectl, "get", "pod", "kept-off", "-n", ns)["spec"]
    kubectl(NAME, "taint", "node", WORKERS[1], "dedicated=sctp:NoSchedule-")
    kubectl(NAME, "wait", "--for=condition=Ready", "pod/kept-off", "-n", ns, "--timeout=20s")
    kubectl(NAME, "label", "node", WORKERS[0], "zone=a")
    assert "zone=a" in kubectl(NAME, "get", "node", WORKERS[0], "--show-labels").stdout
    kubectl(NAME, "label", "node", WORKERS[0], "zone-")
    assert "zone" not in _json(kubectl, "get", "node", WORKERS[0])["metadata"]["labels"]
    kubectl(NAME, "uncordon", WORKERS[0])
    assert "SchedulingDisabled" not in kubectl(NAME, "get", "nodes").stdout


def test_a_watch_of_the_nodes_sees_a_cordon(kubectl: Kubectl) -> None:
    node = f"{NAME}-control-plane"
    with subprocess.Popen(
        kubectl.argv(NAME, "get", "nodes", "-w", "--request-timeout=20s"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kubectl.env(),
    ) as watching:
        assert watching.stdout is not None
        seen = [watching.stdout.readline() for _ in range(4)]  # the header and three nodes
        assert seen[0].split()[:2] == ["NAME", "STATUS"] and len(seen) == 4, seen
        kubectl(NAME, "cordon", node)
        changed = watching.stdout.readline().split()
        watching.terminate()
    assert changed[:2] == [node, "Ready,SchedulingDisabled"], changed
    kubectl(NAME, "uncordon", node)


def test_scale_a_deployment_through_its_scale_subresource(kubectl: Kubectl) -> None:
    ns = "scaled"
    kubectl(NAME, "create", "namespace", ns)
    kubectl(NAME, "create", "deployment", "web", "-n", ns, f"--image={AGNHOST}", "--replicas=2")
    kubectl(NAME, "rollout", "status", "deployment/web", "-n", ns, "--timeout=20s")
    assert (
        "deployment.apps/web scaled"
        in kubectl(NAME, "scale", "deployment", "web", "-n", ns, "--replicas=3").stdout
    )
    _until(
        "three ready replicas",
        lambda: (
            _json(kubectl, "get", "deployment", "web", "-n", ns)["status"].get("readyReplicas") == 3
        ),
    )
    assert len(_json(kubectl, "get", "pods", "-n", ns, "-l", "app=web")["items"]) == 3
    # --current-replicas reads the Scale first (GET .../scale), through discovery.
    wrong = kubectl(
        NAME,
        "scale",
        "deployment",
        "web",
        "-n",
        ns,
        "--replicas=1",
        "--current-replicas=5",
        ok=False,
    )
    assert wrong.returncode != 0 and "Expected replicas to be 5, was 3" in wrong.stderr
    kubectl(NAME, "scale", "deployment", "web", "-n", ns, "--replicas=1", "--current-replicas=3")
    _until(
        "one pod left",
        lambda: len(_json(kubectl, "get", "pods", "-n", ns, "-l", "app=web")["items"]) == 1,
    )


def test_replicasets_carry_a_deployments_revisions_and_rollout_undo_goes_back(
    kubectl: Kubectl,
) -> None:
    ns = "rollouts"
    old, new = AGNHOST, AGNHOST.replace("2.47", "2.48")
    kubectl(NAME, "create", "namespace", ns)
    kubectl(NAME, "create", "deployment", "web", "-n", ns, f"--image={old}", "--replicas=2")
    kubectl(NAME, "rollout", "status", "deployment/web", "-n", ns, "--timeout=20s")
    kubectl(NAME, "set", "image", "deployment/web", f"agnhost={new}", "-n", ns)
    kubectl(NAME, "rollout", "status", "deployment/web", "-n", ns, "--timeout=20s")

    def sets() -> dict[str, tuple[str, int, str]]:
        items = _json(kubectl, "get", "replicasets", "-n", ns)["items"]
        return {
            rs["metadata"]["name"]: (
                rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
                rs["spec"]["replicas"],
                rs["spec"]["template"]["spec"]["containers"][0]["image"],
            )
            for rs in items
        }

    first = sets()
    assert sorted(first.values()) == [("1", 0, old), ("2", 2, new)], first
    deployment = _json(kubectl, "get", "deployment", "web", "-n", ns)
    for rs in _json(kubectl, "get", "replicasets", "-n", ns)["items"]:
        (owner,) = rs["metadata"]["ownerReferences"]
        assert owner["uid"] == deployment["metadata"]["uid"] and owner["controller"] is True
        digest = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["metadata"]["name"] == f"web-{digest}"
    history = kubectl(NAME, "rollout", "history", "deployment/web", "-n", ns).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    described = kubectl(NAME, "describe", "deployment", "web", "-n", ns).stdout
    (current,) = [name for name, (_r, replicas, _i) in first.items() if replicas == 2]
    assert f"NewReplicaSet:   {current} (2/2 replicas created)" in described, described

    # Undo: the revision-1 template again, in its own ReplicaSet (not a new one), at revision 3.
    assert "rolled back" in kubectl(NAME, "rollout", "undo", "deployment/web", "-n", ns).stdout
    kubectl(NAME, "rollout", "status", "deployment/web", "-n", ns, "--timeout=20s")
    after = sets()
    assert set(after) == set(first), (first, after)
    assert sorted(after.values()) == [("2", 0, new), ("3", 2, old)], after
    pods = _json(kubectl, "get", "pods", "-n", ns, "-l", "app=web")["items"]
    assert [p["spec"]["containers"][0]["image"] for p in pods] == [old, old]
    kubectl(NAME, "delete", "deployment", "web", "-n", ns, "--wait")
    assert _json(kubectl, "get", "replicasets", "-n", ns)["items"] == []


def test_the_scale_subresource_refuses_as_upstream(kubectl: Kubectl) -> None:
    ns = "scale-raw"
    kubectl(NAME, "create", "namespace", ns)
    kubectl(NAME, "create", "deployment", "web", "-n", ns, f"--image={AGNHOST}")
    raw = Raw(kubectl.lab, NAME)
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web/scale"
    code, scale, _ = raw("GET", path)
    assert code == 200 and scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 1} and scale["status"]["selector"] == "app=web"
    code, body, _ = raw(
        "PATCH", path, {"spec": {"replicas": -1}}, content_type="application/merge-patch+json"
    )
    assert code == 422, body
    assert body["message"] == (
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: '
        "must be greater than or equal to 0"
    )
    stale = {**scale, "spec": {"replicas": 2}}
    stale["metadata"] = {**scale["metadata"], "resourceVersion": "1"}
    code, body, _ = raw("PUT", path, stale)
    assert code == 409, body
    code, body, _ = raw("GET", "/apis/apps/v1/namespaces/scale-raw/deployments/none/scale")
    assert code == 404


def test_every_namespace_has_its_default_service_account_and_kubectl_makes_tokens_for_it(
    kubectl: Kubectl,
) -> None:
    listed = kubectl(NAME, "get", "serviceaccounts", "-A").stdout
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert any(line.split()[:2] == [ns, "default"] for line in listed.splitlines()), listed
    assert listed.splitlines()[0].split() == ["NAMESPACE", "NAME", "SECRETS", "AGE"]
    kubectl(NAME, "create", "namespace", "tokens")
    token = kubectl(NAME, "create", "token", "default", "-n", "tokens").stdout.strip()
    assert token.count(".") == 2  # a JWT, made without --duration (the default hour)
    kubectl(NAME, "delete", "serviceaccount", "default", "-n", "tokens")
    # The serviceaccount controller makes it again.
    assert "default" in kubectl(NAME, "get", "serviceaccounts", "-n", "tokens").stdout
    kubectl(NAME, "delete", "namespace", "tokens", "--wait")
    assert "tokens" not in kubectl(NAME, "get", "serviceaccounts", "-A").stdout


def test_the_derived_kinds_print_upstreams_columns(kubectl: Kubectl) -> None:
    daemonsets = kubectl(NAME, "get", "daemonsets", "-A", "-o", "wide").stdout.splitlines()
    assert daemonsets[0].split() == [
        "NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE",
        "NODE", "SELECTOR", "AGE", "CONTAINERS", "IMAGES", "SELECTOR",
    ]  # fmt: skip
    proxy = next(line.split() for line in daemonsets if line.split()[1] == "kube-proxy")
    assert proxy[2:7] == ["3"] * 5
    configmaps = kubectl(NAME, "get", "configmaps", "-n", "kube-system").stdout.splitlines()
    assert configmaps[0].split() == ["NAME", "DATA", "AGE"]
    assert configmaps[1].split()[:2] == ["kube-proxy", "1"]


def test_derived_lists_are_watched_event_by_event(kubectl: Kubectl) -> None:
    ns = "watched"
    kubectl(NAME, "create", "namespace", ns)
    watchers = {
        resource: subprocess.Popen(
            kubectl.argv(NAME, "get", resource, "-n", ns, "-w", "--request-timeout=30s"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=kubectl.env(),
        )
        for resource in ("events", "replicasets")
    }
    try:
        time.sleep(1.0)  # both watches open (an empty namespace: nothing listed first)
        kubectl(NAME, "create", "deployment", "web", "-n", ns, f"--image={AGNHOST}")
        kubectl(NAME, "rollout", "status", "deployment/web", "-n", ns, "--timeout=20s")
        events, sets = watchers["events"], watchers["replicasets"]
        assert events.stdout is not None and sets.stdout is not None
        lines = [events.stdout.readline().split() for _ in range(5)]  # a header, four events
        assert [line[2] for line in lines[1:]] == ["Scheduled", "Pulled", "Created", "Started"]
        rows = [sets.stdout.readline().split() for _ in range(2)]
        assert rows[0][:2] == ["NAME", "DESIRED"] and rows[1][0].startswith("web-"), rows
    finally:
        for watcher in watchers.values():
            watcher.terminate()
            watcher.communicate(timeout=10)
