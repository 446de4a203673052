"""The real `kubernetes` client sends objects a real API server refuses; the lab refuses them
with the same status code, reason, message and causes.

Each case names the upstream rule it comes from (Kubernetes, Apache-2.0):
- apimachinery `pkg/util/validation/validation.go` (name, port and env var formats),
- apimachinery `pkg/api/validation/objectmeta.go` (ValidateObjectMeta),
- `pkg/apis/core/validation/validation.go` (pods, services),
- `pkg/apis/networking/validation/validation.go` (network policies),
- apimachinery `pkg/api/errors/errors.go` (NewInvalid: "Kind \"name\" is invalid: " and the
  aggregate of "field: body" strings, bracketed when more than one; NewAlreadyExists,
  NewNotFound, NewForbidden),
- apimachinery `pkg/util/validation/field/errors.go` (ErrorBody: a string value is %q, a
  number %v, a struct %#v; NotSupported lists "supported values" quoted).
The expected texts are written out in full here, as a real server prints them.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from tests.lab.kube import Kube, namespace

IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.53"
RFC1123_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
    "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
    "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
RFC1123_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character "
    "(e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035_LABEL = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
    "with an alphabetic character, and end with an alphanumeric character (e.g. "
    "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
PORT_RANGE = "must be between 1 and 65535, inclusive"


def refusal(call: Any, *args: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as caught:
        call(*args)
    assert caught.value.body is not None, "an API error without a body"
    return caught.value.status, json.loads(caught.value.body)


def pod_body(pod_name: str = "p", **container: Any) -> dict[str, Any]:
    ctr = {"name": "c", "image": IMAGE, "args": ["pause"], **container}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod_name},
        "spec": {"containers": [ctr]},
    }


def svc_body(
    name: str = "s", ports: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "selector": {"app": "x"},
            "ports": ports if ports is not None else [{"port": 5060, "protocol": "SCTP"}],
            **spec,
        },
    }


def assert_invalid(
    status: int,
    body: dict[str, Any],
    kind: str,
    name: str,
    causes: list[tuple[str, str, str]],
    group: str = "",
) -> None:
    """A 422 exactly as NewInvalid builds it."""
    parts = [f"{field}: {message}" for field, _reason, message in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    qualified = f"{kind}.{group}" if group else kind
    assert status == 422
    assert body["kind"] == "Status" and body["status"] == "Failure"
    assert body["reason"] == "Invalid" and body["code"] == 422
    assert body["message"] == f'{qualified} "{name}" is invalid: {summary}'
    details = {
        "name": name,
        "kind": kind,
        "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes],
    }
    if group:
        details["group"] = group
    assert body["details"] == details


# ---------------------------------------------------------------- services


SERVICE_CASES = [
    pytest.param(  # validateServicePort: IsValidPortNum(sp.Port)
        svc_body(ports=[{"port": 0, "protocol": "SCTP", "targetPort": 8082}]),
        [("spec.ports[0].port", "FieldValueInvalid", f"Invalid value: 0: {PORT_RANGE}")],
        id="port-0",
    ),
    pytest.param(  # v1 SetDefaults_Service copies port into an unset targetPort, so both fail
        svc_body(ports=[{"port": 70000, "protocol": "SCTP"}]),
        [
            ("spec.ports[0].port", "FieldValueInvalid", f"Invalid value: 70000: {PORT_RANGE}"),
            (
                "spec.ports[0].targetPort",
                "FieldValueInvalid",
                f"Invalid value: 70000: {PORT_RANGE}",
            ),
        ],
        id="port-70000-defaulted-target",
    ),
    pytest.param(  # validateServicePort: supportedPortProtocols, listed with sets.List (sorted)
        svc_body(ports=[{"port": 5060, "protocol": "sctp"}]),
        [
            (
                "spec.ports[0].protocol",
                "FieldValueNotSupported",
                'Unsupported value: "sctp": supported values: "SCTP", "TCP", "UDP"',
            )
        ],
        id="protocol-lowercase",
    ),
    pytest.param(  # ValidateService: duplicate (protocol, port) pairs -> field.Duplicate(portPath, key)
        svc_body(
            ports=[
                {"name": "a", "port": 5060, "protocol": "SCTP"},
                {"name": "b", "port": 5060, "protocol": "SCTP", "targetPort": 5061},
            ]
        ),
        [
            (
                "spec.ports[1]",
                "FieldValueDuplicate",
                (
                    'Duplicate value: core.ServicePort{Name:"", Protocol:"SCTP", AppProtocol:(*string)(nil), '
                    'Port:5060, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}'
                ),
            )
        ],
        id="duplicate-port",
    ),
    pytest.param(  # validateServicePort: requireName when len(ports) > 1; names are unique
        svc_body(
            ports=[
                {"name": "sctp", "port": 5060, "protocol": "SCTP"},
                {"port": 5061, "protocol": "SCTP"},
                {"name": "sctp", "port": 5062, "protocol": "SCTP"},
            ]
        ),
        [
            ("spec.ports[1].name", "FieldValueRequired", "Required value"),
            ("spec.ports[2].name", "FieldValueDuplicate", 'Duplicate value: "sctp"'),
        ],
        id="port-names",
    ),
    pytest.param(  # validateServicePort: ValidatePortNumOrName(targetPort) -> IsValidPortName
        svc_body(ports=[{"port": 95, "protocol": "SCTP", "targetPort": "Sctp--server-port"}]),
        [
            (
                "spec.ports[0].targetPort",
                "FieldValueInvalid",
                'Invalid value: "Sctp--server-port": ' + m,
            )
            for m in (
                "must be no more than 15 characters",
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "must not contain consecutive hyphens",
            )
        ],
        id="named-target-port",
    ),
    pytest.param(  # ValidateService: nodePort on a ClusterIP service is Forbidden
        svc_body(ports=[{"port": 5060, "protocol": "SCTP", "nodePort": 30060}]),
        [
            (
                "spec.ports[0].nodePort",
                "FieldValueForbidden",
                "Forbidden: may not be used when `type` is 'ClusterIP'",
            )
        ],
        id="node-port-on-cluster-ip",
    ),
    pytest.param(  # ValidateService: supportedServiceType (sorted)
        svc_body(type="Nodeport"),
        [
            (
                "spec.type",
                "FieldValueNotSupported",
                (
                    'Unsupported value: "Nodeport": supported values: "ClusterIP", "ExternalName", '
                    '"LoadBalancer", "NodePort"'
                ),
            )
        ],
        id="type",
    ),
    pytest.param(  # ValidateObjectMeta + ValidateServiceName = NameIsDNS1035Label
        svc_body(name="95-sctp"),
        [("metadata.name", "FieldValueInvalid", f'Invalid value: "95-sctp": {DNS1035_LABEL}')],
        id="name-dns1035",
    ),
    pytest.param(  # every invalid field gets its own cause, in validation order
        svc_body(name="multi", ports=[{"port": 0, "protocol": "ICMP", "targetPort": 8082}]),
        [
            ("spec.ports[0].port", "FieldValueInvalid", f"Invalid value: 0: {PORT_RANGE}"),
            (
                "spec.ports[0].protocol",
                "FieldValueNotSupported",
                'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
            ),
        ],
        id="several-causes",
    ),
]


@pytest.mark.parametrize(("body", "causes"), SERVICE_CASES)
def test_an_invalid_service_is_refused_as_a_real_server_does(
    kube: Kube, body: dict[str, Any], causes: list[tuple[str, str, str]]
) -> None:
    ns = namespace(kube, "v")
    status, answer = refusal(kube.core.create_namespaced_service, ns, body)
    assert_invalid(status, answer, "Service", body["metadata"]["name"], causes)
    assert kube.core.list_namespaced_service(ns).items == []  # a refused request stores nothing


def test_the_issue_example_message_is_exact(kube: Kube) -> None:
    ns = namespace(kube, "v")
    _status, answer = refusal(
        kube.core.create_namespaced_service,
        ns,
        svc_body("x", ports=[{"port": 0, "protocol": "SCTP", "targetPort": 8082}]),
    )
    assert answer["message"] == (
        'Service "x" is invalid: spec.ports[0].port: Invalid value: 0: '
        "must be between 1 and 65535, inclusive"
    )


def test_a_service_without_ports_requires_them(kube: Kube) -> None:
    # ValidateService: len(ports) == 0 on a non-headless, non-ExternalName service.
    ns = namespace(kube, "v")
    status, answer = refusal(kube.core.create_namespaced_service, ns, svc_body(ports=[]))
    assert_invalid(
        status, answer, "Service", "s", [("spec.ports", "FieldValueRequired", "Required value")]
    )


def test_a_headless_service_needs_no_ports(kube: Kube) -> None:
    ns = namespace(kube, "v")
    created = kube.core.create_namespaced_service(ns, svc_body(ports=[], clusterIP="None"))
    assert created.spec.cluster_ip == "None"


def test_a_missing_name_is_required(kube: Kube) -> None:
    # ValidateObjectMeta: name or generateName is required.
    ns = namespace(kube, "v")
    body = svc_body()
    body["metadata"] = {}
    status, answer = refusal(kube.core.create_namespaced_service, ns, body)
    assert_invalid(
        status,
        answer,
        "Service",
        "",
        [
            (
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            )
        ],
    )


def test_allocator_refusals_come_after_validation(kube: Kube) -> None:
    # registry/core/service: the ClusterIP and NodePort allocators answer their own 422.
    ns = namespace(kube, "v")
    kube.core.create_namespaced_service(ns, svc_body("a", clusterIP="10.96.50.50"))
    status, answer = refusal(
        kube.core.create_namespaced_service, ns, svc_body("b", clusterIP="10.96.50.50")
    )
    assert_invalid(
        status,
        answer,
        "Service",
        "b",
        [
            (
                "spec.clusterIPs",
                "FieldValueInvalid",
                'Invalid value: []string{"10.96.50.50"}: failed to allocate IP 10.96.50.50: provided IP is already allocated',
            )
        ],
    )
    status, answer = refusal(
        kube.core.create_namespaced_service,
        ns,
        svc_body(
            "c", type="NodePort", ports=[{"port": 5060, "protocol": "SCTP", "nodePort": 8080}]
        ),
    )
    assert_invalid(
        status,
        answer,
        "Service",
        "c",
        [
            (
                "spec.ports[0].nodePort",
                "FieldValueInvalid",
                "Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767",
            )
        ],
    )


def test_a_duplicate_name_is_already_exists_after_validation(kube: Kube) -> None:
    # NewAlreadyExists(qualifiedResource, name): 409 with the resource, not the kind.
    ns = namespace(kube, "v")
    kube.core.create_namespaced_service(ns, svc_body("dup"))
    status, answer = refusal(kube.core.create_namespaced_service, ns, svc_body("dup"))
    assert status == 409
    assert (answer["reason"], answer["message"]) == (
        "AlreadyExists",
        'services "dup" already exists',
    )
    assert answer["details"] == {"name": "dup", "kind": "services"}
    # Validation runs before storage: an invalid duplicate is Invalid, not AlreadyExists.
    status, _answer = refusal(
        kube.core.create_namespaced_service,
        ns,
        svc_body("dup", ports=[{"port": 0, "protocol": "SCTP"}]),
    )
    assert status == 422


# ---------------------------------------------------------------- pods


POD_CASES = [
    pytest.param(  # validateContainerCommon: len(ctr.Image) == 0 -> Required
        pod_body(image=""),
        [("spec.containers[0].image", "FieldValueRequired", "Required value")],
        id="image-required",
    ),
    pytest.param(  # validateContainerPorts: IsValidPortNum(containerPort), Required when 0
        pod_body(ports=[{"containerPort": 70000, "protocol": "SCTP"}, {"containerPort": 0}]),
        [
            (
                "spec.containers[0].ports[0].containerPort",
                "FieldValueInvalid",
                f"Invalid value: 70000: {PORT_RANGE}",
            ),
            ("spec.containers[0].ports[1].containerPort", "FieldValueRequired", "Required value"),
        ],
        id="container-port-range",
    ),
    pytest.param(  # validateContainerPorts: IsValidPortName, then unique names
        pod_body(
            ports=[
                {"name": "-sctp", "containerPort": 5060, "protocol": "SCTP"},
                {"name": "sctp", "containerPort": 5061, "protocol": "SCTP"},
                {"name": "sctp", "containerPort": 5062, "protocol": "SCTP"},
            ]
        ),
        [
            (
                "spec.containers[0].ports[0].name",
                "FieldValueInvalid",
                'Invalid value: "-sctp": must not begin or end with a hyphen',
            ),
            ("spec.containers[0].ports[2].name", "FieldValueDuplicate", 'Duplicate value: "sctp"'),
        ],
        id="named-ports",
    ),
    pytest.param(  # validateContainerPorts: supportedPortProtocols (sorted)
        pod_body(ports=[{"containerPort": 5060, "protocol": "STCP"}]),
        [
            (
                "spec.containers[0].ports[0].protocol",
                "FieldValueNotSupported",
                'Unsupported value: "STCP": supported values: "SCTP", "TCP", "UDP"',
            )
        ],
        id="protocol",
    ),
    pytest.param(  # validateContainerCommon: ValidateDNS1123Label(ctr.Name)
        pod_body("p", name="Agnhost"),
        [
            (
                "spec.containers[0].name",
                "FieldValueInvalid",
                f'Invalid value: "Agnhost": {RFC1123_LABEL}',
            )
        ],
        id="container-name",
    ),
    pytest.param(  # ValidatePodName = NameIsDNSSubdomain
        pod_body("sctp_server"),
        [
            (
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "sctp_server": {RFC1123_SUBDOMAIN}',
            )
        ],
        id="pod-name",
    ),
    pytest.param(  # ValidateEnv: IsEnvVarName
        pod_body(env=[{"name": "1SERVE", "value": "foo"}]),
        [
            (
                "spec.containers[0].env[0].name",
                "FieldValueInvalid",
                (
                    'Invalid value: "1SERVE": a valid environment variable name must consist of alphabetic '
                    "characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  "
                    "or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
                ),
            )
        ],
        id="env-name",
    ),
    pytest.param(  # ValidateVolumeMounts: the mount's volume must exist
        pod_body(volumeMounts=[{"name": "rootfs", "mountPath": "/rootfs"}]),
        [("spec.containers[0].volumeMounts[0].name", "FieldValueNotFound", 'Not found: "rootfs"')],
        id="volume-mount",
    ),
    pytest.param(  # several invalid fields: one cause each, the message bracketed
        pod_body(image="", ports=[{"containerPort": 0, "protocol": "sctp"}]),
        [
            ("spec.containers[0].image", "FieldValueRequired", "Required value"),
            ("spec.containers[0].ports[0].containerPort", "FieldValueRequired", "Required value"),
            (
                "spec.containers[0].ports[0].protocol",
                "FieldValueNotSupported",
                'Unsupported value: "sctp": supported values: "SCTP", "TCP", "UDP"',
            ),
        ],
        id="several-causes",
    ),
]


@pytest.mark.parametrize(("body", "causes"), POD_CASES)
def test_an_invalid_pod_is_refused_as_a_real_server_does(
    kube: Kube, body: dict[str, Any], causes: list[tuple[str, str, str]]
) -> None:
    ns = namespace(kube, "v")
    status, answer = refusal(kube.core.create_namespaced_pod, ns, body)
    assert_invalid(status, answer, "Pod", body["metadata"]["name"], causes)
    assert kube.core.list_namespaced_pod(ns).items == []


def test_a_host_network_pod_needs_host_port_equal_to_container_port(kube: Kube) -> None:
    # validatePodHostNetworkDeps (a zero hostPort is defaulted to containerPort first).
    ns = namespace(kube, "v")
    body = pod_body(ports=[{"containerPort": 5060, "hostPort": 5061, "protocol": "SCTP"}])
    body["spec"]["hostNetwork"] = True
    status, answer = refusal(kube.core.create_namespaced_pod, ns, body)
    assert_invalid(
        status,
        answer,
        "Pod",
        "p",
        [
            (
                "spec.containers[0].ports[0].hostPort",
                "FieldValueInvalid",
                "Invalid value: 5061: must match `containerPort` when `hostNetwork` is true",
            )
        ],
    )
    body = pod_body(ports=[{"containerPort": 5060, "protocol": "SCTP"}])
    body["spec"]["hostNetwork"] = True
    created = kube.core.create_namespaced_pod(ns, body)
    assert created.spec.containers[0].ports[0].host_port == 5060


def test_a_pod_bound_to_an_absent_node_is_accepted_and_stays_pending(kube: Kube) -> None:
    # ValidatePodSpec only checks nodeName's format; no kubelet ever runs the pod.
    ns = namespace(kube, "v")
    body = pod_body()
    body["spec"]["nodeName"] = "no-such-node"
    created = kube.core.create_namespaced_pod(ns, body)
    assert created.spec.node_name == "no-such-node"
    for _ in range(3):
        got = kube.core.read_namespaced_pod("p", ns)
        assert got.status.phase == "Pending"
        assert got.status.pod_ip is None and got.status.host_ip is None


def test_a_duplicate_container_name_is_a_duplicate_value(kube: Kube) -> None:
    # validateContainers: allNames.Has(ctr.Name) -> field.Duplicate.
    ns = namespace(kube, "v")
    body = pod_body()
    body["spec"]["containers"].append(dict(body["spec"]["containers"][0]))
    status, answer = refusal(kube.core.create_namespaced_pod, ns, body)
    assert_invalid(
        status,
        answer,
        "Pod",
        "p",
        [("spec.containers[1].name", "FieldValueDuplicate", 'Duplicate value: "c"')],
    )


def test_a_pod_without_containers_requires_them(kube: Kube) -> None:
    ns = namespace(kube, "v")
    body = pod_body()
    body["spec"]["containers"] = []
    status, answer = refusal(kube.core.create_namespaced_pod, ns, body)
    assert_invalid(
        status, answer, "Pod", "p", [("spec.containers", "FieldValueRequired", "Required value")]
    )


# ---------------------------------------------------------------- namespaces, policies, other reasons


def test_an_invalid_namespace_name_is_refused(kube: Kube) -> None:
    # ValidateNamespaceName = NameIsDNSLabel; a namespace is not namespaced itself.
    status, answer = refusal(
        kube.core.create_namespace,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "SCTP-ns"}},
    )
    assert_invalid(
        status,
        answer,
        "Namespace",
        "SCTP-ns",
        [("metadata.name", "FieldValueInvalid", f'Invalid value: "SCTP-ns": {RFC1123_LABEL}')],
    )


def test_a_namespace_name_with_dots_says_so(kube: Kube) -> None:
    # IsDNS1123Label: a valid subdomain that is not a label "must not contain dots".
    status, answer = refusal(kube.core.create_namespace, {"metadata": {"name": "sctp.test"}})
    assert_invalid(
        status,
        answer,
        "Namespace",
        "sctp.test",
        [
            (
                "metadata.name",
                "FieldValueInvalid",
                'Invalid value: "sctp.test": must not contain dots',
            )
        ],
    )


def test_an_invalid_label_value_is_refused(kube: Kube) -> None:
    # ValidateLabels: IsValidLabelValue.
    status, answer = refusal(
        kube.core.create_namespace, {"metadata": {"name": "ok", "labels": {"app": "not ok"}}}
    )
    assert_invalid(
        status,
        answer,
        "Namespace",
        "ok",
        [
            (
                "metadata.labels",
                "FieldValueInvalid",
                (
                    'Invalid value: "not ok": a valid label must be an empty string or consist of alphanumeric '
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                    "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
                ),
            )
        ],
    )


NETPOL_CASES = [
    pytest.param(  # ValidateNetworkPolicyPort: the protocols listed by hand, TCP, UDP, SCTP
        {"protocol": "ICMP", "port": 8082},
        [
            (
                "spec.ingress[0].ports[0].protocol",
                "FieldValueNotSupported",
                'Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"',
            )
        ],
        id="protocol-order",
    ),
    pytest.param(  # ValidateNetworkPolicyPort: IsValidPortNum on a numeric port
        {"protocol": "SCTP", "port": 0},
        [("spec.ingress[0].ports[0].port", "FieldValueInvalid", f"Invalid value: 0: {PORT_RANGE}")],
        id="port-0",
    ),
    pytest.param(  # ValidateNetworkPolicyPort: IsValidPortName on a named port
        {"protocol": "SCTP", "port": "SCTP"},
        [
            ("spec.ingress[0].ports[0].port", "FieldValueInvalid", 'Invalid value: "SCTP": ' + m)
            for m in (
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "must contain at least one letter (a-z)",
            )
        ],
        id="port-name",
    ),
]


@pytest.mark.parametrize(("port", "causes"), NETPOL_CASES)
def test_an_invalid_network_policy_is_refused(
    kube: Kube, port: dict[str, Any], causes: list[tuple[str, str, str]]
) -> None:
    ns = namespace(kube, "v")
    body = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "np"},
        "spec": {"podSelector": {}, "ingress": [{"ports": [port]}]},
    }
    status, answer = refusal(kube.net.create_namespaced_network_policy, ns, body)
    assert_invalid(status, answer, "NetworkPolicy", "np", causes, group="networking.k8s.io")
    assert kube.net.list_namespaced_network_policy(ns).items == []


def test_a_network_policy_peer_must_name_something(kube: Kube) -> None:
    # validateNetworkPolicyPeer: at least one of podSelector, namespaceSelector, ipBlock.
    ns = namespace(kube, "v")
    body = {"metadata": {"name": "np"}, "spec": {"podSelector": {}, "ingress": [{"from": [{}]}]}}
    status, answer = refusal(kube.net.create_namespaced_network_policy, ns, body)
    assert_invalid(
        status,
        answer,
        "NetworkPolicy",
        "np",
        [("spec.ingress[0].from[0]", "FieldValueRequired", "Required value: must specify a peer")],
        group="networking.k8s.io",
    )


def test_not_found_and_forbidden_are_worded_as_upstream(kube: Kube) -> None:
    # NewNotFound(qualifiedResource, name) and NewForbidden(qualifiedResource, name, err).
    status, answer = refusal(kube.core.read_namespaced_pod, "nope", "default")
    assert (status, answer["reason"], answer["message"]) == (
        404,
        "NotFound",
        'pods "nope" not found',
    )
    assert answer["details"] == {"name": "nope", "kind": "pods"}
    status, answer = refusal(kube.core.delete_namespace, "default")
    assert (status, answer["reason"]) == (403, "Forbidden")
    assert (
        answer["message"] == 'namespaces "default" is forbidden: this namespace may not be deleted'
    )
    assert answer["details"] == {"name": "default", "kind": "namespaces"}


def test_valid_objects_the_battery_sends_are_still_accepted(kube: Kube) -> None:
    ns = namespace(kube, "ok")
    kube.core.create_namespaced_pod(
        ns,
        pod_body(
            "srv",
            ports=[{"name": "sctp", "containerPort": 5060, "protocol": "SCTP"}],
            env=[{"name": "SERVE_SCTP_PORT_5060", "value": "foo"}],
        ),
    )
    svc = kube.core.create_namespaced_service(
        ns,
        svc_body(
            "svc",
            type="NodePort",
            ports=[
                {"name": "sctp", "port": 95, "targetPort": "sctp", "protocol": "SCTP"},
                {"name": "tcp", "port": 95, "targetPort": 8080, "protocol": "TCP"},
            ],
        ),
    )
    assert svc.spec.ports[0].node_port and svc.spec.ports[1].node_port


def test_a_namespace_on_a_namespace_object_is_cleared(kube: Kube) -> None:
    # rest.BeforeCreate -> EnsureObjectNamespaceMatchesRequestNamespace: cluster-scoped objects
    # have their namespace cleared rather than refused.
    created = kube.core.create_namespace({"metadata": {"name": "scoped", "namespace": "default"}})
    assert created.metadata.name == "scoped" and created.metadata.namespace is None


def test_a_body_of_the_wrong_shape_is_a_bad_request(kube: Kube) -> None:
    # The client's models refuse it before sending, so send it as raw HTTP, as kubectl could.
    ns = namespace(kube, "v")
    token = kube.lab.cluster(kube.name).profile["token"]
    request = urllib.request.Request(
        f"{kube.lab.cluster_url(kube.name)}/api/v1/namespaces/{ns}/pods",
        method="POST",
        data=json.dumps({"metadata": {"name": "p"}, "spec": {"containers": ["agnhost"]}}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5, context=kube.lab.client_context())
    answer = json.loads(caught.value.read())
    assert (caught.value.code, answer["kind"], answer["reason"]) == (400, "Status", "BadRequest")
    assert kube.core.list_namespaced_pod(ns).items == []
