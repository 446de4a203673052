"""The real `kubectl` against every lab profile, over TLS with the lab's CA.

kubectl is a client nobody here wrote: discovery, OpenAPI, tables, strategic merge patches,
watches and upstream's refusal messages all have to be right for these commands to work.
One lab process serves every profile of lab/profiles/ (module-scoped, for speed); each
profile is one test that runs the whole sequence on its own cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.profiles import load_profiles
from lab.server import LabServer
from tests.need import unavailable

ROOT = Path(__file__).resolve().parents[2]
PROFILES = {p["name"]: p for p in load_profiles(ROOT / "lab" / "profiles")}
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"


def manifest(port: int = 5060, protocol: str = "SCTP") -> str:
    """An SCTP Service, the Deployment behind it and a NetworkPolicy letting SCTP in."""
    return f"""
apiVersion: v1
kind: Service
metadata:
  name: sctp-echo
  labels: {{app: sctp-echo}}
spec:
  selector: {{app: sctp-echo}}
  ports:
  - name: sctp
    port: {port}
    protocol: {protocol}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: sctp-echo
spec:
  replicas: 2
  selector:
    matchLabels: {{app: sctp-echo}}
  template:
    metadata:
      labels: {{app: sctp-echo}}
    spec:
      containers:
      - name: echo
        image: {AGNHOST}
        args: [porter]
        env:
        - {{name: SERVE_SCTP_PORT_5060, value: foo}}
        ports:
        - {{containerPort: 5060, protocol: {protocol}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: allow-sctp
spec:
  podSelector:
    matchLabels: {{app: sctp-echo}}
  ingress:
  - ports:
    - {{port: {port}, protocol: {protocol}}}
"""


INVALID = {
    # protocol in lower case: upstream's Unsupported value, word for word
    "lowercase-protocol": (
        (
            "apiVersion: v1\nkind: Service\nmetadata: {name: bad-proto}\n"
            "spec:\n  ports:\n  - {port: 5060, protocol: sctp}\n"
        ),
        (
            'The Service "bad-proto" is invalid: spec.ports[0].protocol: Unsupported value: '
            '"sctp": supported values: "SCTP", "TCP", "UDP"'
        ),
    ),
    "port-out-of-range": (
        (
            "apiVersion: v1\nkind: Service\nmetadata: {name: bad-port}\n"
            "spec:\n  ports:\n  - {port: 70000, protocol: SCTP}\n"
        ),
        # kubectl lists several causes one a line, as upstream's server sends them (targetPort
        # defaults to port, so it is out of range too)
        (
            'The Service "bad-port" is invalid: \n'
            "* spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive\n"
            "* spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, "
            "inclusive"
        ),
    ),
    "name-not-a-dns-label": (
        (
            "apiVersion: v1\nkind: Service\nmetadata: {name: Bad_Name}\n"
            "spec:\n  ports:\n  - {port: 5060, protocol: SCTP}\n"
        ),
        (
            'The Service "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-'"
        ),
    ),
    "unknown-field": (
        (
            "apiVersion: v1\nkind: Service\nmetadata: {name: bad-field}\n"
            "spec:\n  portz: []\n  ports:\n  - {port: 5060, protocol: SCTP}\n"
        ),
        (
            'Service in version "v1" cannot be handled as a Service: '
            'strict decoding error: unknown field "spec.portz"'
        ),
    ),
    "unknown-pod-field": (
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: bad-pod-field}\n"
            f"spec:\n  containers:\n  - {{name: c, image: {AGNHOST}, imagePullPolcy: Always}}\n"
        ),
        (
            'Pod in version "v1" cannot be handled as a Pod: '
            'strict decoding error: unknown field "spec.containers[0].imagePullPolcy"'
        ),
    ),
}


class Kubectl:
    def __init__(
        self, binary: str, kubeconfig: Path, cache: Path, lab: LabServer | None = None
    ) -> None:
        self.binary, self.kubeconfig, self.cache = binary, kubeconfig, cache
        self._lab = lab

    @property
    def lab(self) -> LabServer:
        """The lab kubectl talks to (for the raw calls a test makes beside kubectl)."""
        assert self._lab is not None
        return self._lab

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "HOME": str(self.cache),
            "KUBECTL_KUBERC": "false",
        }

    def argv(self, context: str, *args: str) -> list[str]:
        return [self.binary, "--context", context, "--cache-dir", str(self.cache / "c"), *args]

    def __call__(
        self, context: str, *args: str, stdin: str | None = None, ok: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.argv(context, *args),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            env=self.env(),
        )
        if ok:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done


@contextmanager
def kubectl_on(profiles: list[dict[str, Any]], tmp: Path) -> Iterator[Kubectl]:
    """The real kubectl pointed at a lab serving `profiles` (the lab's kubeconfig, a context per
    cluster); the test is unavailable when kubectl is not installed."""
    binary = shutil.which("kubectl")
    if binary is None:
        unavailable("kubectl is not installed (Debian: apt-get install -y kubernetes-client)")
        raise AssertionError("unreachable")
    lab = LabServer(profiles, state_dir=tmp / "state").start()
    try:
        yield Kubectl(binary, lab.write_kubeconfig(tmp / "kubeconfig"), tmp, lab)
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    profiles = []
    for prof in PROFILES.values():
        # Pods start quickly; everything else as the profile says.
        faults = {**prof.get("faults", {}), "pod_start_delay_s": 0.2}
        profiles.append({**prof, "faults": faults})
    with kubectl_on(profiles, tmp_path_factory.mktemp("kubectl")) as tool:
        yield tool


def _subset(wanted: Any, got: Any) -> bool:
    if isinstance(wanted, dict):
        return isinstance(got, dict) and all(_subset(v, got.get(k)) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(got, list)
            and len(wanted) == len(got)
            and all(_subset(w, g) for w, g in zip(wanted, got, strict=True))
        )
    return bool(wanted == got)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_kubectl_works_against_every_lab_profile(kubectl: Kubectl, name: str) -> None:
    prof = PROFILES[name]
    k = lambda *a, **kw: kubectl(name, *a, **kw)  # noqa: E731
    ns = "kubectl-e2e"

    # version: the profile's release, and the lab says it is an emulator
    version = json.loads(k("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"] == f"v{prof['kubernetes_version']}"
    assert version["serverVersion"]["platform"] == "linux/amd64"

    # api-resources: discovery of every group the lab serves
    resources = k("api-resources").stdout
    for line in ("pods ", "services ", "deployments ", "networkpolicies ", "nodes "):
        assert line in resources, resources
    assert "netpol" in resources and "deploy" in resources

    # get nodes -o wide: the server's Table with the wide columns
    nodes = k("get", "nodes", "-o", "wide").stdout.splitlines()
    assert nodes[0].split()[:6] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP"]
    assert len(nodes) == 1 + prof["nodes"]
    assert all(" Ready " in row for row in nodes[1:]), nodes

    k("create", "namespace", ns)
    sctp = bool(prof["sctp_feature_gate"])
    protocol = "SCTP" if sctp else "TCP"
    if not sctp:
        # SCTPSupport off: upstream's refusal through kubectl, then the same with TCP
        refused = k("apply", "-n", ns, "-f", "-", stdin=manifest(), ok=False)
        assert refused.returncode != 0
        for words in (
            (
                'Service "sctp-echo" is invalid: spec.ports[0].protocol: Unsupported value: '
                '"SCTP": supported values: "TCP", "UDP"'
            ),
            (
                'Deployment.apps "sctp-echo" is invalid: spec.template.spec.containers[0].ports[0]'
                '.protocol: Unsupported value: "SCTP": supported values: "TCP", "UDP"'
            ),
            (
                'NetworkPolicy.networking.k8s.io "allow-sctp" is invalid: spec.ingress[0].ports[0]'
                '.protocol: Unsupported value: "SCTP": supported values: "TCP", "UDP"'
            ),
        ):
            assert words in refused.stderr, refused.stderr

    # apply, then apply again with a changed port (a strategic merge patch)
    first = k("apply", "-n", ns, "-f", "-", stdin=manifest(protocol=protocol)).stdout
    assert "service/sctp-echo created" in first and "deployment.apps/sctp-echo created" in first
    assert "networkpolicy.networking.k8s.io/allow-sctp created" in first
    second = k("apply", "-n", ns, "-f", "-", stdin=manifest(5061, protocol)).stdout
    assert "service/sctp-echo configured" in second, second
    assert "deployment.apps/sctp-echo unchanged" in second, second
    ports = json.loads(
        k("get", "svc", "sctp-echo", "-n", ns, "-o", "jsonpath={.spec.ports}").stdout
    )
    assert [(p["port"], p["protocol"]) for p in ports] == [(5061, protocol)]

    # apply --server-side: the object is created, then a changed port is merged in
    ssa = manifest(protocol=protocol).split("---")[0].replace("sctp-echo", "sctp-ssa", 1)
    out = k("apply", "--server-side", "-n", ns, "-f", "-", stdin=ssa).stdout
    assert "service/sctp-ssa serverside-applied" in out, out
    out = k("apply", "--server-side", "-n", ns, "-f", "-", stdin=ssa.replace("5060", "5062")).stdout
    assert "service/sctp-ssa serverside-applied" in out, out
    ports = json.loads(k("get", "svc", "sctp-ssa", "-n", ns, "-o", "jsonpath={.spec.ports}").stdout)
    assert [(p["port"], p["protocol"]) for p in ports] == [(5062, protocol)]

    def as_ops(manifest: str, *flags: str, ok: bool = True) -> Any:
        """A server-side apply by a second field manager, "ops"."""
        return k(
            "apply",
            "--server-side",
            "--field-manager=ops",
            *flags,
            "-n",
            ns,
            "-f",
            "-",
            stdin=manifest,
            ok=ok,
        )

    def conflict_then_force(manifest: str, conflict: str, name: str) -> None:
        """The apply is refused with upstream's words; --force-conflicts takes the field over."""
        refused = as_ops(manifest, ok=False)
        assert refused.returncode != 0
        assert f"Apply failed with 1 conflict: {conflict}" in refused.stderr, refused.stderr
        taken = as_ops(manifest, "--force-conflicts").stdout
        assert f"service/{name} serverside-applied" in taken, taken

    # another field manager that changes a field kubectl applied: upstream's conflict, then
    # --force-conflicts takes the field over
    other = ssa.replace("5060", "5062").replace("- name: sctp\n", "- name: sctp-main\n")
    conflict_then_force(
        other,
        f'conflict with "kubectl": .spec.ports[port=5062,protocol="{protocol}"].name',
        "sctp-ssa",
    )
    shown = k("get", "svc", "sctp-ssa", "-n", ns, "-o", "yaml", "--show-managed-fields").stdout
    got = yaml.safe_load(shown)
    assert got["spec"]["ports"][0]["name"] == "sctp-main"
    assert {e["manager"] for e in got["metadata"]["managedFields"]} == {"kubectl", "ops"}

    # kubectl create records an Update entry for kubectl-create: an applier changing one of
    # its fields meets upstream's conflict, naming the manager with its apiVersion
    made = ssa.replace("sctp-ssa", "sctp-made", 1)
    assert "service/sctp-made created" in k("create", "-n", ns, "-f", "-", stdin=made).stdout
    shown = k("get", "svc", "sctp-made", "-n", ns, "-o", "yaml", "--show-managed-fields").stdout
    (entry,) = yaml.safe_load(shown)["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == (
        "kubectl-create",
        "Update",
        "v1",
    )
    # its fields are the body's as decoded with defaulting, before the registry allocated the
    # cluster IP (upstream's create handler runs the field manager in between)
    shown = k("get", "svc", "sctp-made", "-n", ns, "-o", "json", "--show-managed-fields").stdout
    (entry,) = json.loads(shown)["metadata"]["managedFields"]
    assert {"f:type", "f:sessionAffinity"} <= set(entry["fieldsV1"]["f:spec"]), entry
    assert "f:clusterIP" not in entry["fieldsV1"]["f:spec"], entry
    renamed = made.replace("- name: sctp\n", "- name: sctp-main\n")
    conflict_then_force(
        renamed,
        'conflict with "kubectl-create" using v1: '
        f'.spec.ports[port=5060,protocol="{protocol}"].name',
        "sctp-made",
    )
    shown = k("get", "svc", "sctp-made", "-n", ns, "-o", "yaml", "--show-managed-fields").stdout
    owners = {
        e["manager"]: e["fieldsV1"] for e in yaml.safe_load(shown)["metadata"]["managedFields"]
    }
    port = f'k:{{"port":5060,"protocol":"{protocol}"}}'
    assert "f:name" in owners["ops"]["f:spec"]["f:ports"][port]
    assert "f:name" not in owners["kubectl-create"]["f:spec"]["f:ports"][port]

    # get -o yaml: what was applied comes back, plus the server's fields; replace takes it
    got = yaml.safe_load(k("get", "svc", "sctp-echo", "-n", ns, "-o", "yaml").stdout)
    applied = yaml.safe_load(manifest(5061, protocol).split("---")[0])
    assert _subset(applied["spec"]["selector"], got["spec"]["selector"])
    assert got["spec"]["ports"][0] == {
        "name": "sctp",
        "port": 5061,
        "protocol": protocol,
        "targetPort": 5061,
    }
    assert got["metadata"]["uid"] and got["metadata"]["resourceVersion"]
    assert got["spec"]["clusterIP"].startswith("10.96.")
    k("replace", "-f", "-", stdin=yaml.safe_dump(got))
    again = yaml.safe_load(k("get", "svc", "sctp-echo", "-n", ns, "-o", "yaml").stdout)
    assert again["spec"] == got["spec"]
    assert again["metadata"]["uid"] == got["metadata"]["uid"]

    # wait: the Deployment's pods become Ready
    waited = k(
        "wait", "--for=condition=Ready", "pod", "-l", "app=sctp-echo", "-n", ns, "--timeout=30s"
    )
    assert waited.stdout.count("condition met") == 2, waited.stdout
    # the kubelet that started them wrote their status: its entry, through /status
    started = json.loads(
        k(
            "get", "pods", "-l", "app=sctp-echo", "-n", ns, "-o", "json", "--show-managed-fields"
        ).stdout
    )["items"][0]
    (kubelet,) = [e for e in started["metadata"]["managedFields"] if e["manager"] == "kubelet"]
    # (ManagedFieldsEntry.subresource came with v1.22: an older release does not show it)
    minor = int(PROFILES[name]["kubernetes_version"].split(".")[1])
    assert (kubelet["operation"], kubelet.get("subresource")) == (
        "Update",
        "status" if minor >= 22 else None,
    ), kubelet
    assert "f:podIP" in kubelet["fieldsV1"]["f:status"], kubelet
    deploy = json.loads(k("get", "deploy", "sctp-echo", "-n", ns, "-o", "json").stdout)
    assert deploy["status"]["readyReplicas"] == 2

    # logs: a one-shot pod's output
    k(
        "run",
        "probe",
        "-n",
        ns,
        f"--image={AGNHOST}",
        "--restart=Never",
        "--",
        "connect",
        "10.96.0.1:1",
        "--protocol=tcp",
        "--timeout=1s",
    )
    k("wait", "--for=jsonpath={.status.phase}=Failed", "pod/probe", "-n", ns, "--timeout=30s")
    logs = k("logs", "probe", "-n", ns).stdout
    assert logs.strip(), "the probe pod printed nothing"

    # get -w: sees the change another client makes
    watch = subprocess.Popen(
        kubectl.argv(name, "get", "svc", "sctp-echo", "-n", ns, "-w", "--output-watch-events"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kubectl.env(),
    )
    try:
        assert watch.stdout is not None
        header, first_line = watch.stdout.readline(), watch.stdout.readline()
        assert header.split()[:2] == ["EVENT", "NAME"], header
        assert first_line.split()[:2] == ["ADDED", "sctp-echo"], first_line
        k("label", "svc", "sctp-echo", "-n", ns, "watched=yes")
        deadline, seen = time.monotonic() + 20, ""
        while time.monotonic() < deadline and "MODIFIED" not in seen:
            seen += watch.stdout.readline()
        assert "MODIFIED" in seen and "sctp-echo" in seen, seen
    finally:
        watch.terminate()
        watch.wait(timeout=10)
    assert (
        k("get", "svc", "sctp-echo", "-n", ns, "-o", "jsonpath={.metadata.labels.watched}").stdout
        == "yes"
    )

    # auth can-i: answered by SelfSubjectAccessReview
    assert k("auth", "can-i", "create", "deployments", "-n", ns).stdout.strip() == "yes"

    # explain: the upstream schema, from OpenAPI v3
    explained = k("explain", "service.spec.ports.protocol").stdout
    assert "FIELD: protocol <string>" in explained
    assert 'Supports "TCP", "UDP", and "SCTP"' in explained
    explained = k("explain", "networkpolicy.spec.ingress.ports.protocol").stdout
    # (the profile's release's words: "The protocol ..." before v1.27's "protocol represents ...")
    assert "protocol (TCP, UDP, or SCTP) which traffic must" in explained, explained
    explained = k("explain", "pods.spec.containers").stdout
    assert "FIELD: containers <[]Container>" in explained
    assert "imagePullPolicy\t<string>" in explained, explained
    for path, field in (
        ("deployments.spec.strategy", "FIELD: strategy <DeploymentStrategy>"),
        ("nodes.status.nodeInfo", "FIELD: nodeInfo <NodeSystemInfo>"),
        ("endpointslices.endpoints", "FIELD: endpoints <[]Endpoint>"),
        ("namespaces.spec", "FIELD: spec <NamespaceSpec>"),
    ):
        if path.split(".")[0] in resources:  # EndpointSlices from 1.21 on
            assert field in k("explain", path).stdout, path

    # invalid manifests: upstream's messages through kubectl
    for case, (text, words) in INVALID.items():
        if not sctp and "SCTP" in text and case != "lowercase-protocol":
            text = text.replace("SCTP", "TCP")
        if not sctp and case == "lowercase-protocol":
            words = words.replace('"SCTP", "TCP", "UDP"', '"TCP", "UDP"')
        done = k("apply", "-n", ns, "-f", "-", stdin=text, ok=False)
        assert done.returncode != 0, case
        assert words in done.stderr, (case, done.stderr)

    # delete --wait: everything goes, the Deployment's pods with it
    deleted = k(
        "delete", "-n", ns, "-f", "-", "--wait", "--timeout=30s", stdin=manifest(5061, protocol)
    )
    assert 'deployment.apps "sctp-echo" deleted' in deleted.stdout, deleted.stdout
    left = k("get", "pods", "-n", ns, "-l", "app=sctp-echo", "-o", "name").stdout
    assert left.strip() == "", left
    gone = k("get", "deploy", "sctp-echo", "-n", ns, ok=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    k("delete", "namespace", ns, "--wait", "--timeout=30s")
