"""Protobuf request bodies (issue 24): what client-go's typed clients send, decoded generically
from the message table (lab/protobuf_messages.txt) into the same dict as the JSON form."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab import protobuf
from lab.errors import ApiError
from lab.server import LabServer
from tests.lab.kube import profile
from tests.lab.test_kubeapi import Raw
from tests.lab.test_kubectl import Kubectl
from tests.need import unavailable


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def num(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def msg(number: int, *parts: bytes) -> bytes:
    body = b"".join(parts)
    return varint(number << 3 | 2) + varint(len(body)) + body


def text(number: int, value: str) -> bytes:
    return msg(number, value.encode())


def entry(number: int, key: str, value: str) -> bytes:
    return msg(number, text(1, key), text(2, value))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return protobuf.MAGIC + msg(1, text(1, api_version), text(2, kind)) + msg(2, raw)


def int_or_string(value: int | str) -> bytes:
    if isinstance(value, int):
        return num(1, 0) + num(2, value)
    return num(1, 1) + text(3, value)


# A Pod as Go's generated Marshal writes it: the empty strings of non-pointer fields and the
# empty messages are on the wire too.
POD = envelope(
    "v1",
    "Pod",
    msg(
        1,  # metadata
        text(1, "web"),
        text(2, ""),
        text(3, "default"),
        msg(8, num(1, 1_800_000_000), num(2, 0)),  # creationTimestamp
        entry(11, "app", "web"),
        entry(11, "tier", "front"),
        entry(12, "note", ""),
        text(14, "example.com/keep"),
    )
    + msg(
        2,  # spec
        msg(
            2,  # containers
            text(1, "c"),
            text(2, "nginx"),
            text(3, "sh"),
            text(3, "-c"),
            msg(6, text(1, "http"), num(2, 0), num(3, 8080), text(4, "TCP")),
            msg(7, text(1, "MODE"), text(2, "fast")),
            msg(8, msg(2, text(1, "cpu"), msg(2, text(1, "100m")))),  # resources.requests
            msg(10, msg(1, msg(2, text(1, "/healthz"), msg(2, int_or_string("http")))), num(3, 1)),
            num(18, 0),  # tty false
            msg(99, text(1, "a field this table does not know")),
        ),
        text(3, "Always"),
        num(4, 30),  # terminationGracePeriodSeconds
        num(11, 1),  # hostNetwork
        msg(14),  # securityContext {}
        num(25, 0),  # priority 0 (a pointer: kept)
        msg(22, text(1, "k"), text(2, "Exists"), num(5, (1 << 64) - 5)),  # -5 as int64
    )
    + msg(3),  # status {}
)

POD_JSON = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {
        "name": "web",
        "namespace": "default",
        "creationTimestamp": "2027-01-15T08:00:00Z",
        "labels": {"app": "web", "tier": "front"},
        "annotations": {"note": ""},
        "finalizers": ["example.com/keep"],
    },
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "command": ["sh", "-c"],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "fast"}],
                "resources": {"requests": {"cpu": "100m"}},
                "livenessProbe": {
                    "httpGet": {"path": "/healthz", "port": "http"},
                    "timeoutSeconds": 1,
                },
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "hostNetwork": True,
        "securityContext": {},
        "priority": 0,
        "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": -5}],
    },
    "status": {},
}


def service(target: int | str) -> bytes:
    port = text(1, "p") + text(2, "SCTP") + num(3, 80) + msg(4, int_or_string(target))
    spec = msg(1, port) + entry(2, "app", "web") + text(4, "ClusterIP") + msg(14)
    return envelope("v1", "Service", msg(1, text(1, "s"), msg(8)) + msg(2, spec))


def test_a_hand_built_pod_decodes_to_its_json_form() -> None:
    assert protobuf.decode(POD) == POD_JSON


def test_delete_options_decode_as_client_go_v0_36_sends_them() -> None:
    # e2e.test v1.36.3 deletes its hostexec pods with a protobuf DeleteOptions (gracePeriod 0):
    # the lab refused it with a 415 until the message was in the table (docs/lab-vs-e2e.md).
    body = envelope(
        "v1",
        "DeleteOptions",
        varint(1 << 3) + varint(0) + msg(2, text(1, "u-1")) + text(4, "Background"),
    )
    assert protobuf.decode(body) == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "u-1"},
        "propagationPolicy": "Background",
    }


@pytest.mark.parametrize("target", [8080, "http"])
def test_a_service_target_port_decodes_as_int_or_string(target: int | str) -> None:
    assert protobuf.decode(service(target)) == {
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": {"name": "s", "creationTimestamp": None},
        "spec": {
            "ports": [{"name": "p", "protocol": "SCTP", "port": 80, "targetPort": target}],
            "selector": {"app": "web"},
            "type": "ClusterIP",
            "sessionAffinityConfig": {},
        },
    }


def test_special_types_decode_to_their_json_forms() -> None:
    deployment = envelope(
        "apps/v1",
        "Deployment",
        msg(1, text(1, "d"))
        + msg(
            2,
            num(1, 0),  # replicas 0 (a pointer: kept)
            msg(4, text(1, "RollingUpdate"), msg(2, msg(1, int_or_string("25%")))),
        ),
    )
    assert protobuf.decode(deployment)["spec"] == {
        "replicas": 0,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}},
    }
    secret = envelope("v1", "Secret", msg(1, text(1, "s")) + entry(2, "k", "\x00\xff"))
    assert protobuf.decode(secret)["data"] == {"k": "AMO/"}
    managed = msg(
        17,
        text(1, "kubectl"),
        msg(4, num(1, 1_800_000_000)),
        text(6, "FieldsV1"),
        msg(7, text(1, json.dumps({"f:metadata": {}}))),
    )
    assert protobuf.message("ObjectMeta", managed)["managedFields"] == [
        {
            "manager": "kubectl",
            "time": "2027-01-15T08:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {}},
        }
    ]
    assert protobuf._special("MicroTime", num(1, 1_800_000_000) + num(2, 1500)) == (
        "2027-01-15T08:00:00.000001Z"
    )
    assert protobuf._special("Duration", num(1, 90 * 10**9)) == "1m30s"
    packed = msg(4, varint(1000) + varint(2000))  # supplementalGroups, packed
    assert protobuf.message("PodSecurityContext", packed) == {"supplementalGroups": [1000, 2000]}


def test_resource_attributes_selectors_decode_to_their_json_forms() -> None:
    # authorization/v1 ResourceAttributes: fieldSelector = 8 (FieldSelectorAttributes, whose
    # requirements are meta/v1 FieldSelectorRequirements) and labelSelector = 9
    # (LabelSelectorAttributes), both in upstream's generated.proto since 1.31.
    attributes = msg(
        1,  # resourceAttributes
        text(1, "default"),
        text(2, "list"),
        text(3, ""),
        text(4, ""),
        text(5, "pods"),
        text(6, ""),
        text(7, ""),
        msg(8, text(1, ""), msg(2, text(1, "spec.nodeName"), text(2, "In"), text(3, "n1"))),
        msg(9, text(1, "app=web")),
    )
    review = envelope(
        "authorization.k8s.io/v1", "SelfSubjectAccessReview", msg(1) + msg(2, attributes)
    )
    assert protobuf.decode(review) == {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {},
        "spec": {
            "resourceAttributes": {
                "namespace": "default",
                "verb": "list",
                "resource": "pods",
                "fieldSelector": {
                    "requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["n1"]}]
                },
                "labelSelector": {"rawSelector": "app=web"},
            }
        },
    }


@pytest.mark.parametrize(
    "body",
    [
        POD[:-3],  # cut short
        protobuf.MAGIC + msg(1, text(1, "v1"), text(2, "Pod")) + msg(2, text(1, "x"))[:-1],
        envelope("v1", "Pod", msg(1, num(1, 5))),  # metadata.name as a varint
        envelope("v1", "Pod", b"\x0f"),  # wire type 7
        envelope("v1", "Pod", msg(1, msg(1, b"\xff\xfe"))),  # a name that is not UTF-8
        b"not protobuf at all",
    ],
    ids=["cut-short", "raw-cut-short", "wrong-wire-type", "wire-type-7", "not-utf8", "no-magic"],
)
def test_a_malformed_body_is_a_400(body: bytes) -> None:
    with pytest.raises(ApiError) as caught:
        protobuf.decode(body)
    assert caught.value.code == 400, caught.value.message


def post(raw: Raw, path: str, body: bytes) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{raw.lab.cluster_url(raw.name)}{path}",
        method="POST",
        data=body,
        headers={
            "Authorization": f"Bearer {raw.token}",
            "Content-Type": protobuf.PROTOBUF,
            "Accept": f"{protobuf.PROTOBUF},application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10, context=raw.lab.client_context()) as a:
            return a.status, json.loads(a.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.fixture(scope="module")
def lab() -> Iterator[LabServer]:
    server = LabServer([profile("c1")]).start()
    yield server
    server.stop()


def test_the_server_creates_a_protobuf_pod_and_service_as_their_json(lab: LabServer) -> None:
    raw = Raw(lab, "c1")
    code, pod = post(raw, "/api/v1/namespaces/default/pods", POD)
    assert code == 201, pod
    assert pod["metadata"]["labels"] == {"app": "web", "tier": "front"}
    # hostNetwork: the hostPort defaulted to the containerPort, as for a JSON body
    assert pod["spec"]["containers"][0]["ports"] == [
        {"name": "http", "containerPort": 8080, "protocol": "TCP", "hostPort": 8080}
    ]
    assert pod["spec"]["dnsPolicy"] == "ClusterFirst"  # defaulted as a JSON body is
    assert pod["metadata"]["managedFields"][0]["operation"] == "Update"
    code, svc = post(raw, "/api/v1/namespaces/default/services", service("http"))
    assert code == 201, svc
    assert svc["spec"]["ports"][0]["targetPort"] == "http"
    assert svc["spec"]["ports"][0]["protocol"] == "SCTP"


def test_the_server_answers_a_malformed_protobuf_body_with_a_400(lab: LabServer) -> None:
    code, answer = post(Raw(lab, "c1"), "/api/v1/namespaces/default/pods", POD[:-3])
    assert code == 400, answer
    assert answer["kind"] == "Status" and answer["reason"] == "BadRequest"
    bad_name = envelope("v1", "Pod", msg(1, num(1, 5)))
    code, answer = post(Raw(lab, "c1"), "/api/v1/namespaces/default/pods", bad_name)
    assert (code, answer["message"]) == (
        400,
        'Pod in version "v1" cannot be handled as a Pod: proto: wrong wireType = 0 for field name',
    )


# kubectl 1.32 on sends protobuf from its typed clients; the kubectl on PATH picks its release
# by the server's, so the cluster is a 1.32 one.
@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kubectl, str]]:
    binary = shutil.which("kubectl")
    if binary is None:
        unavailable("kubectl is not installed (Debian: apt-get install -y kubernetes-client)")
        raise AssertionError("unreachable")
    tmp = tmp_path_factory.mktemp("kubectl-protobuf")
    server = LabServer([profile("pb", kubernetes_version="1.32.0")]).start()
    try:
        path = server.write_kubeconfig(Path(tmp) / "kubeconfig")
        yield Kubectl(binary, path, tmp), "pb"
    finally:
        server.stop()


def test_kubectl_typed_clients_create_through_protobuf(kubectl: tuple[Kubectl, str]) -> None:
    k, ctx = kubectl
    done = k(ctx, "-v=8", "create", "deployment", "web", "--image=nginx", "--port=8080")
    assert f"Content-Type: {protobuf.PROTOBUF}" in done.stderr  # it was sent as protobuf
    assert done.stdout.strip() == "deployment.apps/web created"
    got = json.loads(k(ctx, "get", "deployment", "web", "-o", "json").stdout)
    assert got["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    container = got["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert got["spec"]["replicas"] == 1

    done = k(ctx, "-v=8", "create", "service", "clusterip", "web", "--tcp=80:8080")
    assert f"Content-Type: {protobuf.PROTOBUF}" in done.stderr
    got = json.loads(k(ctx, "get", "service", "web", "-o", "json").stdout)
    assert got["spec"]["ports"] == [
        {"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}
    ]
    k(ctx, "create", "service", "nodeport", "named", "--tcp=80:http")
    got = json.loads(k(ctx, "get", "service", "named", "-o", "json").stdout)
    assert got["spec"]["ports"][0]["targetPort"] == "http"

    k(ctx, "run", "p1", "--image=nginx", "--labels=app=p1", "--port=80")
    k(ctx, "expose", "pod", "p1", "--port=5060", "--protocol=SCTP", "--name=sctp")
    got = json.loads(k(ctx, "get", "service", "sctp", "-o", "json").stdout)
    assert got["spec"]["ports"][0]["protocol"] == "SCTP"

    k(ctx, "create", "serviceaccount", "sa1")
    k(ctx, "create", "role", "r1", "--verb=get", "--resource=pods")
    k(ctx, "create", "rolebinding", "rb1", "--role=r1", "--serviceaccount=default:sa1")
    assert k(ctx, "auth", "can-i", "create", "deployments").stdout.strip() == "yes"
    k(ctx, "create", "namespace", "pb-ns")
