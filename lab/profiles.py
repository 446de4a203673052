"""Lab profiles: one YAML file per emulated cluster (format in docs/contract.md)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from kernel.vocabulary import PROXIERS

KUBE_PROXY_MODES = (*PROXIERS, "none")  # none: no kube-proxy (a replacement such as Cilium's)
# deny-all (an extension of the contract): a plugin that over-blocks, every policy in a
# namespace denies all ingress to all its pods, so only a positive control tells it apart.
NETWORK_POLICY_MODES = ("none", "full", "sctp-as-tcp", "no-sctp", "deny-all")
ENDPOINTS_REACHABLE = ("all", "one")
IP_FAMILIES = (("IPv4",), ("IPv6",), ("IPv4", "IPv6"), ("IPv6", "IPv4"))
# Who really programs Services: kube-proxy, or a replacement that carries the traffic even
# while kube-proxy runs beside it (and its rules sit unused in the node's tables).
SERVICE_DATAPLANES = (
    "kube-proxy",
    "cilium-ebpf",
    "calico-ebpf",
    "antrea-proxy",
    "ovn",
    "kube-router-ipvs",
)
# The CNI that implies a replacement when kube-proxy is absent, and the one each replacement
# belongs to (a replacement needs its CNI).
REPLACEMENT_OF_CNI = {
    "cilium": "cilium-ebpf",
    "gke-dataplane-v2": "cilium-ebpf",
    "calico": "calico-ebpf",
    "antrea": "antrea-proxy",
    "ovn-kubernetes": "ovn",
    "kube-router": "kube-router-ipvs",
}
FLAVORS = ("eks", "aks", "gke-dpv2", "k3s")
# A platform's own CNI (its system DaemonSets), used when the profile names no `cni`.
FLAVOR_CNI = {
    "eks": "amazon-vpc-cni",
    "aks": "azure-cni",
    "gke-dpv2": "gke-dataplane-v2",
    "k3s": "flannel",
}
PRIVILEGED_PODS = ("allow", "forbid", "webhook-deny")

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# The release of a profile that names none (and of lab/openapi.py's schemas outside a request).
DEFAULT_KUBERNETES_VERSION = "1.31.2"
_VERSION_RE = re.compile(r"^\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.-]+)?$")

# field -> (type check name, default). A default of None for `name` means "the file stem".
_TOP: dict[str, tuple[str, Any]] = {
    "name": ("str", None),
    "plugin": ("str", None),
    "plugin_version": ("str", ""),
    "kubernetes_version": ("str", DEFAULT_KUBERNETES_VERSION),
    "proxier": ("str", "iptables"),
    "nodes": ("int", 2),
    "sctp_feature_gate": ("bool", True),
    "node_access": ("bool", True),
    "kubenet": ("bool", False),
    "load_balancer": ("bool", False),
    "sctp_module_loaded_at_start": ("bool", False),
    "dataplane": ("dict", None),
    "admission": ("dict", None),
    "cni": ("str", None),  # the CNI DaemonSet the cluster runs; default: plugin
    "kube_proxy": ("str", None),  # the mode kube-proxy really runs; default: proxier
    "faults": ("dict", None),
    "token": ("str", None),
    "seed": ("int", None),
    "description": ("str", ""),
    "rbac": ("str", None),  # a role file (lab/rbac.py); relative to the profile's directory
    "ip_families": ("list", None),  # default [IPv4]
    "service_dataplane": ("str", None),  # default: kube-proxy, or the CNI's replacement
    "policy_by": ("str", None),  # a second plugin enforcing NetworkPolicy on top of `cni`
    "shared_kernel": ("bool", False),  # nodes are containers on one host kernel (kind)
    "flavor": ("str", None),  # eks | aks | gke-dpv2 | k3s
}
_DATAPLANE: dict[str, tuple[str, Any]] = {
    "pod_to_pod": ("bool", True),
    "via_service": ("bool", True),
    "via_load_balancer": ("bool", True),
    "network_policy": ("str", "full"),
    "via_node_port": ("bool", True),
    "endpoints_reachable": ("str", "all"),
    "namespace_selector": ("bool", True),
    "hairpin": ("bool", True),  # an endpoint pod reaches itself through its Service
    "secondary_family": ("bool", True),  # SCTP through a dual-stack Service's second family
}
_ADMISSION: dict[str, tuple[str, Any]] = {
    "privileged_pods": ("str", "allow"),
}
_FAULTS: dict[str, tuple[str, Any]] = {
    "api_error_rate": ("number", 0.0),
    "pod_start_delay_s": ("number", 0.05),
    "stuck_pending": ("bool", False),
    "basic_loads_module": ("bool", False),
    "api_timeout": ("bool", False),
    # How long `api_timeout` hangs a request; 30 s like the protocol says, shorter in tests.
    "api_timeout_s": ("number", 30.0),
    # An SCTP hostPort pod loads sctp.ko on its node (a kubelet or portmap that opens the port).
    "hostport_loads_module": ("bool", False),
    # The endpoints controller never removes a deleted pod from Endpoints/EndpointSlices.
    "endpoints_never_removed": ("bool", False),
    # kube-proxy programs a Service's rules this long after its creation: until then its
    # ClusterIP and NodePort drop packets (slow endpoint programming on a loaded cluster).
    "service_programming_delay_s": ("number", 0.0),
    # lsmod exits 1 on every node (a node image without /proc/modules readable).
    "lsmod_fails": ("bool", False),
    # A CNI slow to learn new pods: for S seconds after a pod starts (Running), NetworkPolicy
    # peers (podSelector/namespaceSelector) do not match it as a source yet, so traffic from it
    # that only a peer rule allows is dropped; traffic no policy isolates is unaffected.
    "cni_pod_learn_delay_s": ("number", 0.0),
    # Every node also reports an ExternalIP (198.51.100.N, first in its addresses) that nothing
    # answers: a cloud firewall in front of the nodes' public addresses.
    "external_ip_unreachable": ("bool", False),
    # The nodes' kernels have no SCTP sockets (no sctp.ko, as the real cluster's host):
    # every SCTP socket a pod opens fails with `protocol not supported` (EPROTONOSUPPORT).
    "no_kernel_sctp": ("bool", False),
    # A node that refuses a privileged pod its PID 1's mount namespace (the real cluster's host:
    # its root lacks ptrace access to PID 1): `nsenter --mount=/rootfs/proc/1/ns/mnt` exits 1
    # with `nsenter: can't open '/rootfs/proc/1/ns/mnt': Permission denied`; chroot works.
    "nsenter_refused": ("bool", False),
}


def _type_ok(kind: str, value: Any) -> bool:
    # bool is an int in Python; YAML `yes`/`true` must not pass as a node count.
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "dict":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    raise AssertionError(kind)


_TYPE_WORDS = {
    "bool": "a boolean",
    "int": "an integer",
    "number": "a number",
    "str": "a string (quote versions)",
    "dict": "a mapping",
    "list": "a list",
}


def _fill(
    section: dict[str, Any], spec: dict[str, tuple[str, Any]], prefix: str, source: str, what: str
) -> dict[str, Any]:
    unknown = sorted(set(section) - set(spec))
    if unknown:
        raise ValueError(
            f"{source}: unknown {what} {prefix}{unknown[0]!s} (known: {', '.join(sorted(spec))})"
        )
    out: dict[str, Any] = {}
    for field, (kind, default) in spec.items():
        if field in section and section[field] is not None:
            value = section[field]
            if not _type_ok(kind, value):
                raise ValueError(
                    f"{source}: field {prefix}{field} must be {_TYPE_WORDS[kind]}, got {value!r}"
                )
            out[field] = value
        else:
            out[field] = copy.deepcopy(default)
    return out


def _choice(value: str, choices: tuple[str, ...], field: str, source: str) -> None:
    if value not in choices:
        raise ValueError(
            f"{source}: field {field} must be one of {', '.join(choices)}, got {value!r}"
        )


def validate_profile(data: Any, source: str = "<profile>") -> dict[str, Any]:
    """Return the profile with every optional field filled in; ValueError names source and field."""
    if not isinstance(data, dict):
        raise ValueError(f"{source}: a profile must be a YAML mapping, got {type(data).__name__}")
    profile = _fill(data, _TOP, "", source, "field")
    if profile["name"] is None:
        stem = Path(source).stem
        profile["name"] = stem
    if not _NAME_RE.match(profile["name"]) or len(profile["name"]) > 63:
        raise ValueError(
            f"{source}: field name {profile['name']!r} must be a DNS label "
            "(lowercase letters, digits and '-')"
        )
    if profile["plugin"] is None:
        raise ValueError(f"{source}: field plugin is required")
    if not _VERSION_RE.match(profile["kubernetes_version"].lstrip("v")):
        raise ValueError(
            f"{source}: field kubernetes_version {profile['kubernetes_version']!r} "
            'is not a version like "1.31.2"'
        )
    profile["kubernetes_version"] = profile["kubernetes_version"].lstrip("v")
    if profile["proxier"] not in PROXIERS:
        raise ValueError(
            f"{source}: field proxier must be one of {', '.join(PROXIERS)}, "
            f"got {profile['proxier']!r}"
        )
    if profile["nodes"] < 1:
        raise ValueError(f"{source}: field nodes must be at least 1, got {profile['nodes']}")
    if profile["nodes"] > 250:
        raise ValueError(f"{source}: field nodes must be at most 250, got {profile['nodes']}")
    profile["dataplane"] = _fill(
        profile["dataplane"] or {}, _DATAPLANE, "dataplane.", source, "field"
    )
    mode = profile["dataplane"]["network_policy"]
    if mode not in NETWORK_POLICY_MODES:
        raise ValueError(
            f"{source}: field dataplane.network_policy must be one of "
            f"{', '.join(NETWORK_POLICY_MODES)}, got {mode!r}"
        )
    _choice(
        profile["dataplane"]["endpoints_reachable"],
        ENDPOINTS_REACHABLE,
        "dataplane.endpoints_reachable",
        source,
    )
    profile["admission"] = _fill(
        profile["admission"] or {}, _ADMISSION, "admission.", source, "field"
    )
    _choice(
        profile["admission"]["privileged_pods"],
        PRIVILEGED_PODS,
        "admission.privileged_pods",
        source,
    )
    # node_access: false is the older spelling of privileged_pods: forbid. The reverse is not
    # implied: `lab --register` declares node_access, and a cluster declared with node access
    # is sent the privileged pod, so the battery meets (and quotes) the refusal itself.
    if not profile["node_access"] and profile["admission"]["privileged_pods"] == "allow":
        profile["admission"]["privileged_pods"] = "forbid"
    flavor = profile["flavor"]
    if flavor is not None:
        _choice(flavor, FLAVORS, "flavor", source)
    if profile["cni"] is None:
        cloud = FLAVOR_CNI.get(flavor or "")
        # On a platform, its own CNI runs unless the plugin under test replaces it; a plugin
        # that only enforces policy there (Calico on EKS) is given as policy_by.
        profile["cni"] = cloud if cloud and profile["plugin"] in (cloud, "kubenet") else None
        profile["cni"] = profile["cni"] or profile["plugin"]
    if profile["kube_proxy"] is None:
        profile["kube_proxy"] = "none" if flavor == "gke-dpv2" else profile["proxier"]
    _choice(profile["kube_proxy"], KUBE_PROXY_MODES, "kube_proxy", source)
    families = profile["ip_families"] or ["IPv4"]
    if tuple(families) not in IP_FAMILIES:
        raise ValueError(
            f"{source}: field ip_families must be one of "
            f"{', '.join('[' + ', '.join(f) + ']' for f in IP_FAMILIES)}, got {families!r}"
        )
    profile["ip_families"] = list(families)
    if profile["service_dataplane"] is None:
        implied = REPLACEMENT_OF_CNI.get(profile["cni"])
        if flavor == "gke-dpv2":  # Dataplane V2 runs without kube-proxy (anetd, eBPF)
            profile["service_dataplane"] = "cilium-ebpf"
        elif profile["cni"] == "ovn-kubernetes":  # OVN load balancers, always
            profile["service_dataplane"] = "ovn"
        elif profile["kube_proxy"] == "none" and implied:
            profile["service_dataplane"] = implied
        else:
            profile["service_dataplane"] = "kube-proxy"
    _choice(profile["service_dataplane"], SERVICE_DATAPLANES, "service_dataplane", source)
    profile["faults"] = _fill(profile["faults"] or {}, _FAULTS, "faults.", source, "fault")
    faults = profile["faults"]
    if not 0.0 <= faults["api_error_rate"] <= 1.0:
        raise ValueError(
            f"{source}: field faults.api_error_rate must be between 0 and 1, "
            f"got {faults['api_error_rate']}"
        )
    for field in (
        "pod_start_delay_s",
        "api_timeout_s",
        "service_programming_delay_s",
        "cni_pod_learn_delay_s",
    ):
        if faults[field] < 0:
            raise ValueError(f"{source}: field faults.{field} must not be negative")
    if profile["token"] is None:
        profile["token"] = f"lab-{profile['name']}-token"
    return profile


def load_profile(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML: {exc}") from exc
    profile = validate_profile(data, str(path))
    if profile["rbac"] and not Path(profile["rbac"]).is_absolute():
        # Relative to the profile's directory, else to the working directory (the repository).
        beside = path.parent / profile["rbac"]
        if beside.exists() or not Path(profile["rbac"]).exists():
            profile["rbac"] = str(beside)
    return profile


def load_profiles(directory: str | Path) -> list[dict[str, Any]]:
    """Every `*.yaml`/`*.yml` in `directory`, sorted by file name; names must be unique."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"{directory}: not a directory")
    paths = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    profiles: list[dict[str, Any]] = []
    seen: dict[str, Path] = {}
    for path in paths:
        profile = load_profile(path)
        if profile["name"] in seen:
            raise ValueError(
                f"{path}: field name {profile['name']!r} is already used by {seen[profile['name']]}"
            )
        seen[profile["name"]] = path
        profiles.append(profile)
    return profiles
