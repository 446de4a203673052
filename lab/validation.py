"""Object validation as kube-apiserver does it, with upstream's exact messages.

Each function returns field errors in the order upstream appends them, as
`(field, cause type, message body)` triples: `lab.errors.invalid` turns them into the 422
`Status` (`details.causes`, and the aggregated message). The rules and texts come from
upstream Kubernetes (Apache-2.0):

- `staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go` (IsDNS1123Label,
  IsDNS1123Subdomain, IsDNS1035Label, IsValidPortNum, IsValidPortName, IsEnvVarName,
  RegexError, MaxLenError) and `.../util/validation/field/errors.go` (ErrorBody: how a bad
  value is printed; NotSupported's "supported values: …").
- `staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go` (ValidateObjectMeta) and
  `.../apis/meta/v1/validation` (ValidateLabels, IsQualifiedName, IsValidLabelValue).
- `pkg/apis/core/validation/validation.go` (ValidatePodSpec, validateContainers,
  validateContainerPorts, validatePodHostNetworkDeps, ValidateService, validateServicePort,
  ValidateEndpoints) and `pkg/apis/networking/validation/validation.go` (ValidateNetworkPolicy).

Only what the battery (and a careless manifest) can send is covered; a field the lab does not
model is not validated rather than validated wrongly.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

FieldError = tuple[str, str, str]

REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
DUPLICATE = "FieldValueDuplicate"
FORBIDDEN = "FieldValueForbidden"
NOT_FOUND = "FieldValueNotFound"

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"

# Upstream's supportedPortProtocols is a set listed with sets.List, i.e. sorted.
PORT_PROTOCOLS = ["SCTP", "TCP", "UDP"]
# pkg/apis/networking/validation lists them by hand, in this order.
NETPOL_PROTOCOLS = ["TCP", "UDP", "SCTP"]
SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
SESSION_AFFINITIES = ["ClientIP", "None"]
TRAFFIC_POLICIES = ["Cluster", "Local"]
RESTART_POLICIES = ["Always", "OnFailure", "Never"]
DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
TERMINATION_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
POLICY_TYPES = ["Ingress", "Egress"]
KUBELET_PORT = 10250


# ---------------------------------------------------------------- messages (apimachinery)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """RegexError: the examples are joined with "', or '" (the double space is upstream's)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    msg += " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += f"'{example}', "
    return msg + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _full(fmt: str, value: str) -> bool:
    return re.fullmatch(fmt, value) is not None


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _full(_DNS1123_LABEL_FMT, value):
        if _full(_DNS1123_SUBDOMAIN_FMT, value):
            errs.append("must not contain dots")
        else:
            errs.append(
                regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                    "or '-', and must start and end with an alphanumeric character",
                    _DNS1123_LABEL_FMT,
                    "my-name",
                    "123-abc",
                )
            )
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _full(_DNS1123_SUBDOMAIN_FMT, value):
        errs.append(
            regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _full(_DNS1035_LABEL_FMT, value):
        errs.append(
            regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                "with an alphabetic character, and end with an alphanumeric character",
                _DNS1035_LABEL_FMT,
                "my-name",
                "abc-123",
            )
        )
    return errs


def is_valid_port_num(port: Any) -> list[str]:
    if isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535:
        return []
    return ["must be between 1 and 65535, inclusive"]


def is_valid_port_name(port: str) -> list[str]:
    errs = []
    if len(port) > 15:
        errs.append(max_len_error(15))
    if not _full("[-a-z0-9]+", port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_qualified_name(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return [
            "a qualified name "
            + regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character",
                _QUALIFIED_NAME_FMT,
                "MyName",
                "my.name",
                "123-abc",
            )
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if not _full(_QUALIFIED_NAME_FMT, name):
        errs.append(
            "name part "
            + regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character",
                _QUALIFIED_NAME_FMT,
                "MyName",
                "my.name",
                "123-abc",
            )
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _full(_LABEL_VALUE_FMT, value):
        errs.append(
            regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', "
                "'_' or '.', and must start and end with an alphanumeric character",
                _LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs


def is_env_var_name(value: str) -> list[str]:
    errs = []
    if not _full(_ENV_VAR_NAME_FMT, value):
        errs.append(
            regex_error(
                "a valid environment variable name must consist of alphabetic characters, digits, "
                "'_', '-', or '.', and must not start with a digit",
                _ENV_VAR_NAME_FMT,
                "my.env-name",
                "MY_ENV.NAME",
                "MyEnvName1",
            )
        )
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


# ---------------------------------------------------------------- field errors (field/errors.go)


def go_value(value: Any) -> str:
    """A bad value as ErrorBody prints it: %v for numbers and bools, %q for strings."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v) for v in value) + "}"
    return json.dumps(value)


def required(field: str, detail: str = "") -> FieldError:
    return (field, REQUIRED, "Required value" + (f": {detail}" if detail else ""))


def forbidden(field: str, detail: str) -> FieldError:
    return (field, FORBIDDEN, "Forbidden" + (f": {detail}" if detail else ""))


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return (field, INVALID, f"Invalid value: {go_value(value)}" + (f": {detail}" if detail else ""))


def duplicate(field: str, value: Any, rendered: str | None = None) -> FieldError:
    return (field, DUPLICATE, f"Duplicate value: {rendered or go_value(value)}")


def not_found(field: str, value: Any) -> FieldError:
    return (field, NOT_FOUND, f"Not found: {go_value(value)}")


def not_supported(field: str, value: Any, valid: list[str]) -> FieldError:
    supported = ", ".join(json.dumps(v) for v in valid)
    return (
        field,
        NOT_SUPPORTED,
        f"Unsupported value: {go_value(value)}"
        + (f": supported values: {supported}" if valid else ""),
    )


# ---------------------------------------------------------------- object meta


def _mask_trailing_dash(name: str) -> str:
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


NAME_RULES = {
    "Namespace": is_dns1123_label,  # ValidateNamespaceName = NameIsDNSLabel
    "Pod": is_dns1123_subdomain,  # ValidatePodName = NameIsDNSSubdomain
    "Service": is_dns1035_label,  # ValidateServiceName = NameIsDNS1035Label
    "Endpoints": is_dns1123_subdomain,
    "NetworkPolicy": is_dns1123_subdomain,
}


def name_errors(kind: str, name: str, prefix: bool = False) -> list[str]:
    return NAME_RULES[kind](_mask_trailing_dash(name) if prefix else name)


def validate_labels(labels: Any, field: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(labels, dict):
        return errs
    for key in sorted(labels):
        errs += [invalid(field, key, m) for m in is_qualified_name(str(key))]
        value = labels[key]
        errs += [
            invalid(field, value, m)
            for m in is_valid_label_value(str(value if value is not None else ""))
        ]
    return errs


def validate_object_meta(kind: str, meta: dict[str, Any], namespaced: bool) -> list[FieldError]:
    """ValidateObjectMeta, once the name has been generated from generateName."""
    errs: list[FieldError] = []
    generate = meta.get("generateName") or ""
    if generate:
        errs += [
            invalid("metadata.generateName", generate, m)
            for m in name_errors(kind, generate, prefix=True)
        ]
    name = meta.get("name") or ""
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs += [invalid("metadata.name", name, m) for m in name_errors(kind, name)]
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            errs.append(required("metadata.namespace"))
        else:
            errs += [
                invalid("metadata.namespace", namespace, m) for m in is_dns1123_label(namespace)
            ]
    elif namespace:
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    errs += validate_labels(meta.get("labels"), "metadata.labels")
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for key in sorted(annotations):
            errs += [
                invalid("metadata.annotations", key, m) for m in is_qualified_name(str(key).lower())
            ]
    return errs


# ---------------------------------------------------------------- pods


def _protocol_errors(protocol: Any, field: str, valid: list[str]) -> list[FieldError]:
    if not protocol:
        return [required(field)]
    if protocol not in valid:
        return [not_supported(field, protocol, valid)]
    return []


def pod_protocols(sctp: bool) -> list[str]:
    # Before SCTPSupport was on everywhere, a gate-off server only knew TCP and UDP.
    return PORT_PROTOCOLS if sctp else ["TCP", "UDP"]


def validate_container_ports(ports: Any, path: str, protocols: list[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in enumerate(ports or []):
        idx = f"{path}[{i}]"
        name = port.get("name") or ""
        if name:
            msgs = is_valid_port_name(name)
            if msgs:
                errs += [invalid(f"{idx}.name", name, m) for m in msgs]
            elif name in names:
                errs.append(duplicate(f"{idx}.name", name))
            else:
                names.add(name)
        container_port = port.get("containerPort")
        if not container_port:
            errs.append(required(f"{idx}.containerPort"))
        else:
            errs += [
                invalid(f"{idx}.containerPort", container_port, m)
                for m in is_valid_port_num(container_port)
            ]
        host_port = port.get("hostPort")
        if host_port:
            errs += [invalid(f"{idx}.hostPort", host_port, m) for m in is_valid_port_num(host_port)]
        errs += _protocol_errors(port.get("protocol"), f"{idx}.protocol", protocols)
    return errs


def validate_env(env: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, var in enumerate(env or []):
        idx = f"{path}[{i}]"
        name = var.get("name") or ""
        if not name:
            errs.append(required(f"{idx}.name"))
        else:
            errs += [invalid(f"{idx}.name", name, m) for m in is_env_var_name(name)]
    return errs


def _volume_names(volumes: Any) -> set[str]:
    return {v.get("name") for v in volumes or [] if v.get("name")}


def validate_volumes(volumes: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, vol in enumerate(volumes or []):
        idx = f"{path}[{i}]"
        name = vol.get("name") or ""
        if not name:
            errs.append(required(f"{idx}.name"))
        else:
            errs += [invalid(f"{idx}.name", name, m) for m in is_dns1123_label(name)]
            if name in seen:
                errs.append(duplicate(f"{idx}.name", name))
            seen.add(name)
        sources = [k for k in vol if k != "name"]
        if not sources:
            errs.append(required(idx, "must specify a volume type"))
        elif len(sources) > 1:
            errs.append(forbidden(f"{idx}.{sources[1]}", "may not specify more than 1 volume type"))
        if "hostPath" in vol and not (vol["hostPath"] or {}).get("path"):
            errs.append(required(f"{idx}.hostPath.path"))
    return errs


def validate_volume_mounts(mounts: Any, volumes: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, mount in enumerate(mounts or []):
        idx = f"{path}[{i}]"
        name = mount.get("name") or ""
        if not name:
            errs.append(required(f"{idx}.name"))
        elif name not in volumes:
            errs.append(not_found(f"{idx}.name", name))
        if not mount.get("mountPath"):
            errs.append(required(f"{idx}.mountPath"))
    return errs


def validate_containers(
    containers: Any, volumes: set[str], path: str, protocols: list[str]
) -> list[FieldError]:
    if not containers:
        return [required(path)]
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, ctr in enumerate(containers):
        idx = f"{path}[{i}]"
        name = ctr.get("name") or ""
        # validateContainerCommon
        if not name:
            errs.append(required(f"{idx}.name"))
        else:
            errs += [invalid(f"{idx}.name", name, m) for m in is_dns1123_label(name)]
        if not ctr.get("image"):
            errs.append(required(f"{idx}.image"))
        policy = ctr.get("terminationMessagePolicy")
        if not policy:
            errs.append(required(f"{idx}.terminationMessagePolicy"))
        elif policy not in TERMINATION_MESSAGE_POLICIES:
            errs.append(
                not_supported(
                    f"{idx}.terminationMessagePolicy", policy, TERMINATION_MESSAGE_POLICIES
                )
            )
        errs += validate_container_ports(ctr.get("ports"), f"{idx}.ports", protocols)
        errs += validate_env(ctr.get("env"), f"{idx}.env")
        errs += validate_volume_mounts(ctr.get("volumeMounts"), volumes, f"{idx}.volumeMounts")
        pull = ctr.get("imagePullPolicy")
        if not pull:
            errs.append(required(f"{idx}.imagePullPolicy"))
        elif pull not in PULL_POLICIES:
            errs.append(not_supported(f"{idx}.imagePullPolicy", pull, PULL_POLICIES))
        # validateContainers: names unique among the regular containers
        if name in names:
            errs.append(duplicate(f"{idx}.name", name))
        names.add(name)
    # checkHostPortConflicts, across all containers
    seen: set[str] = set()
    for i, ctr in enumerate(containers):
        for pi, port in enumerate(ctr.get("ports") or []):
            host_port = port.get("hostPort")
            if not host_port:
                continue
            key = f"{port.get('hostIP', '')}/{port.get('protocol', '')}/{host_port}"
            if key in seen:
                errs.append(duplicate(f"{path}[{i}].ports[{pi}].hostPort", key))
            seen.add(key)
    return errs


def validate_pod(meta: dict[str, Any], spec: dict[str, Any], *, sctp: bool) -> list[FieldError]:
    """ValidatePodCreate for a defaulted pod (`default_pod` ran first), in upstream's order."""
    protocols = pod_protocols(sctp)
    errs = validate_object_meta("Pod", meta, namespaced=True)
    errs += validate_volumes(spec.get("volumes"), "spec.volumes")
    volumes = _volume_names(spec.get("volumes"))
    errs += validate_containers(spec.get("containers"), volumes, "spec.containers", protocols)
    if spec.get("initContainers"):
        errs += validate_containers(
            spec["initContainers"], volumes, "spec.initContainers", protocols
        )
    if spec.get("hostNetwork"):
        # validatePodHostNetworkDeps: defaulting made a zero hostPort equal to containerPort.
        for ci, ctr in enumerate(spec.get("containers") or []):
            for pi, port in enumerate(ctr.get("ports") or []):
                if port.get("hostPort") != port.get("containerPort"):
                    errs.append(
                        invalid(
                            f"spec.containers[{ci}].ports[{pi}].hostPort",
                            port.get("hostPort"),
                            "must match `containerPort` when `hostNetwork` is true",
                        )
                    )
    restart = spec.get("restartPolicy")
    if not restart:
        errs.append(required("spec.restartPolicy"))
    elif restart not in RESTART_POLICIES:
        errs.append(not_supported("spec.restartPolicy", restart, RESTART_POLICIES))
    dns = spec.get("dnsPolicy")
    if not dns:
        errs.append(required("spec.dnsPolicy"))
    elif dns not in DNS_POLICIES:
        errs.append(not_supported("spec.dnsPolicy", dns, DNS_POLICIES))
    errs += validate_labels(spec.get("nodeSelector"), "spec.nodeSelector")
    account = spec.get("serviceAccountName")
    if account:
        errs += [
            invalid("spec.serviceAccountName", account, m) for m in is_dns1123_subdomain(account)
        ]
    node = spec.get("nodeName")
    if node:
        # ValidateNodeName: a name only; an absent node is accepted (the pod stays Pending).
        errs += [invalid("spec.nodeName", node, m) for m in is_dns1123_subdomain(node)]
    return errs


def default_pod(spec: dict[str, Any]) -> None:
    """The v1 defaults (pkg/apis/core/v1/defaults.go) that validation depends on."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    for key in ("containers", "initContainers"):
        for ctr in spec.get(key) or []:
            if not isinstance(ctr, dict):
                continue
            image = str(ctr.get("image") or "")
            tag = image.rsplit("/", 1)[-1]
            latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
            ctr.setdefault("imagePullPolicy", "Always" if latest and image else "IfNotPresent")
            ctr.setdefault("terminationMessagePath", "/dev/termination-log")
            ctr.setdefault("terminationMessagePolicy", "File")
            for port in ctr.get("ports") or []:
                port.setdefault("protocol", "TCP")
                if spec.get("hostNetwork") and not port.get("hostPort"):
                    port["hostPort"] = port.get("containerPort")


# ---------------------------------------------------------------- services


def _int_or_string_go(value: Any) -> str:
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{json.dumps(value)}}}"
    return f'intstr.IntOrString{{Type:0, IntVal:{value or 0}, StrVal:""}}'


def _service_port_go(protocol: str, port: Any) -> str:
    # The duplicate check's key: core.ServicePort{Protocol, Port} printed with %#v.
    return (
        f'core.ServicePort{{Name:"", Protocol:{json.dumps(protocol)}, AppProtocol:(*string)(nil), '
        f"Port:{port}, TargetPort:{_int_or_string_go(None)}, NodePort:0}}"
    )


def validate_port_num_or_name(value: Any, field: str) -> list[FieldError]:
    if isinstance(value, int) and not isinstance(value, bool):
        return [invalid(field, value, m) for m in is_valid_port_num(value)]
    if isinstance(value, str):
        return [invalid(field, value, m) for m in is_valid_port_name(value)]
    return []


def validate_service(meta: dict[str, Any], spec: dict[str, Any], *, sctp: bool) -> list[FieldError]:
    """ValidateService for a defaulted service, in upstream's order."""
    protocols = pod_protocols(sctp)
    errs = validate_object_meta("Service", meta, namespaced=True)
    ports = spec.get("ports") or []
    svc_type = spec.get("type")
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and svc_type != "ExternalName":
        errs.append(required("spec.ports"))
    ip = spec.get("clusterIP")
    if ip and ip != "None" and svc_type != "ExternalName":
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            errs.append(
                invalid(
                    "spec.clusterIPs[0]",
                    ip,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )
            )
    if svc_type == "LoadBalancer":
        if headless:
            errs.append(
                invalid(
                    "spec.clusterIPs[0]",
                    "None",
                    "may not be set to 'None' for LoadBalancer services",
                )
            )
        for i, port in enumerate(ports):
            if port.get("port") == KUBELET_PORT:
                errs.append(
                    invalid(
                        f"spec.ports[{i}]",
                        KUBELET_PORT,
                        f"may not expose port {KUBELET_PORT} externally since it is used by kubelet",
                    )
                )
    elif svc_type == "NodePort" and headless:
        errs.append(
            invalid("spec.clusterIPs[0]", "None", "may not be set to 'None' for NodePort services")
        )
    elif svc_type == "ExternalName":
        if spec.get("clusterIP"):
            errs.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        cname = str(spec.get("externalName") or "").removesuffix(".")
        if cname:
            errs += [invalid("spec.externalName", cname, m) for m in is_dns1123_subdomain(cname)]
        else:
            errs.append(required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        idx = f"spec.ports[{i}]"
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            errs.append(required(f"{idx}.name"))
        elif name:
            errs += [invalid(f"{idx}.name", name, m) for m in is_dns1123_label(name)]
            if name in names:
                errs.append(duplicate(f"{idx}.name", name))
            names.add(name)
        errs += [
            invalid(f"{idx}.port", port.get("port", 0), m)
            for m in is_valid_port_num(port.get("port", 0))
        ]
        errs += _protocol_errors(port.get("protocol"), f"{idx}.protocol", protocols)
        errs += validate_port_num_or_name(port.get("targetPort"), f"{idx}.targetPort")
    if spec.get("selector") is not None:
        errs += validate_labels(spec.get("selector"), "spec.selector")
    affinity = spec.get("sessionAffinity")
    if not affinity:
        errs.append(required("spec.sessionAffinity"))
    elif affinity not in SESSION_AFFINITIES:
        errs.append(not_supported("spec.sessionAffinity", affinity, SESSION_AFFINITIES))
    if not svc_type:
        errs.append(required("spec.type"))
    elif svc_type not in SERVICE_TYPES:
        errs.append(not_supported("spec.type", svc_type, SERVICE_TYPES))
    if svc_type == "ClusterIP":
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                errs.append(
                    forbidden(
                        f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"
                    )
                )
    seen_node: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        node_port = port.get("nodePort")
        if not node_port:
            continue
        key = (port.get("protocol"), node_port)
        if key in seen_node:
            errs.append(duplicate(f"spec.ports[{i}]", node_port))
        seen_node.add(key)
    seen: set[tuple[str, Any]] = set()
    for i, port in enumerate(ports):
        key = (port.get("protocol"), port.get("port"))
        if key in seen:
            errs.append(duplicate(f"spec.ports[{i}]", None, _service_port_go(*key)))
        seen.add(key)
    etp = spec.get("externalTrafficPolicy")
    if svc_type in ("NodePort", "LoadBalancer"):
        if etp and etp not in TRAFFIC_POLICIES:
            errs.append(not_supported("spec.externalTrafficPolicy", etp, TRAFFIC_POLICIES))
    elif etp:
        errs.append(
            invalid(
                "spec.externalTrafficPolicy",
                etp,
                "may only be set when `type` is 'NodePort' or 'LoadBalancer'",
            )
        )
    itp = spec.get("internalTrafficPolicy")
    if svc_type != "ExternalName" and itp and itp not in TRAFFIC_POLICIES:
        errs.append(not_supported("spec.internalTrafficPolicy", itp, TRAFFIC_POLICIES))
    return errs


def default_service(spec: dict[str, Any]) -> None:
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")


# ---------------------------------------------------------------- network policies


def netpol_protocols(sctp: bool) -> list[str]:
    return NETPOL_PROTOCOLS if sctp else ["TCP", "UDP"]


def _validate_selector(selector: Any, field: str) -> list[FieldError]:
    if not isinstance(selector, dict):
        return []
    errs = validate_labels(selector.get("matchLabels"), f"{field}.matchLabels")
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        idx = f"{field}.matchExpressions[{i}]"
        op = expr.get("operator")
        values = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(
                    required(
                        f"{idx}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    forbidden(
                        f"{idx}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errs.append(invalid(f"{idx}.operator", op, "not a valid selector operator"))
        errs += [
            invalid(f"{idx}.key", expr.get("key"), m)
            for m in is_qualified_name(str(expr.get("key") or ""))
        ]
    return errs


def validate_network_policy(
    meta: dict[str, Any], spec: dict[str, Any], *, sctp: bool
) -> list[FieldError]:
    """ValidateNetworkPolicy (pkg/apis/networking/validation), in upstream's order."""
    protocols = netpol_protocols(sctp)
    errs = validate_object_meta("NetworkPolicy", meta, namespaced=True)
    errs += _validate_selector(spec.get("podSelector"), "spec.podSelector")
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for ri, rule in enumerate(spec.get(direction) or []):
            base = f"spec.{direction}[{ri}]"
            for pi, port in enumerate(rule.get("ports") or []):
                idx = f"{base}.ports[{pi}]"
                protocol = port.get("protocol")
                if protocol is not None and protocol not in protocols:
                    errs.append(not_supported(f"{idx}.protocol", protocol, protocols))
                value = port.get("port")
                if value is not None:
                    if isinstance(value, int):
                        errs += [invalid(f"{idx}.port", value, m) for m in is_valid_port_num(value)]
                        end = port.get("endPort")
                        if end is not None:
                            if end < value:
                                errs.append(
                                    invalid(
                                        f"{idx}.endPort",
                                        value,
                                        "must be greater than or equal to `port`",
                                    )
                                )
                            errs += [
                                invalid(f"{idx}.endPort", end, m) for m in is_valid_port_num(end)
                            ]
                    else:
                        if port.get("endPort") is not None:
                            errs.append(
                                invalid(
                                    f"{idx}.endPort",
                                    port["endPort"],
                                    "may not be specified when `port` is non-numeric",
                                )
                            )
                        errs += [
                            invalid(f"{idx}.port", value, m) for m in is_valid_port_name(str(value))
                        ]
                elif port.get("endPort") is not None:
                    errs.append(
                        invalid(
                            f"{idx}.endPort",
                            port["endPort"],
                            "may not be specified when `port` is not specified",
                        )
                    )
            for pi, peer in enumerate(rule.get(peers_key) or []):
                idx = f"{base}.{peers_key}[{pi}]"
                kinds = [
                    k
                    for k in ("podSelector", "namespaceSelector", "ipBlock")
                    if peer.get(k) is not None
                ]
                if not kinds:
                    errs.append(required(idx, "must specify a peer"))
                elif "ipBlock" in kinds and len(kinds) > 1:
                    errs.append(forbidden(idx, "may not specify more than 1 peer type"))
                errs += _validate_selector(peer.get("podSelector"), f"{idx}.podSelector")
                errs += _validate_selector(
                    peer.get("namespaceSelector"), f"{idx}.namespaceSelector"
                )
                block = peer.get("ipBlock")
                if block is not None:
                    errs += _validate_ip_block(block, f"{idx}.ipBlock")
    types = spec.get("policyTypes") or []
    for i, value in enumerate(types):
        if value not in POLICY_TYPES:
            errs.append(not_supported(f"spec.policyTypes[{i}]", value, POLICY_TYPES))
    if len(types) > len(POLICY_TYPES):
        errs.append(invalid("spec.policyTypes", types, "may not specify more than two policyTypes"))
    return errs


def _validate_ip_block(block: dict[str, Any], field: str) -> list[FieldError]:
    cidr = block.get("cidr") or ""
    if not cidr:
        return [required(f"{field}.cidr")]
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return [
            invalid(
                f"{field}.cidr",
                cidr,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            )
        ]
    errs: list[FieldError] = []
    for i, exc in enumerate(block.get("except") or []):
        try:
            inner = ipaddress.ip_network(exc, strict=False)
        except ValueError:
            errs.append(
                invalid(
                    f"{field}.except[{i}]",
                    exc,
                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                )
            )
            continue
        if inner.version != network.version or not inner.subnet_of(network) or inner == network:  # type: ignore[arg-type]
            errs.append(invalid(f"{field}.except[{i}]", exc, "must be a strict subset of `cidr`"))
    return errs


# ---------------------------------------------------------------- namespaces


def validate_namespace(meta: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta("Namespace", meta, namespaced=False)
