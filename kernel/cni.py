"""Which CNI runs a cluster: the one table, shared by the battery, the lab and ingest.

Django-free. Input is what the Kubernetes API (or a Sonobuoy tarball's
``resources/ns/<ns>/apps_v1_daemonsets.json`` and ``core_v1_configmaps.json``,
``resources/cluster/core_v1_nodes.json``) gives: plain dicts. Output says who does the pod
network, who enforces NetworkPolicy (the pair when they differ, e.g. flannel + Calico for
policy only), who programs Services when it is not kube-proxy (a kube-proxy replacement:
Cilium's, Calico eBPF, Antrea ``proxyAll``, OVN-Kubernetes load balancers, kube-router's IPVS,
GKE Dataplane V2), and the evidence for each conclusion.

Names, namespaces, labels and images are those of each plugin's own manifests (or, for the
cloud plugins, of the platform's system DaemonSets): ``kube-system/aws-node`` (Amazon VPC CNI),
``kube-system/azure-cns`` and ``azure-npm`` (Azure CNI and its Network Policy Manager),
``kube-system/anetd`` (GKE Dataplane V2, Cilium-based: its pods carry ``k8s-app: cilium``),
k3s's flannel built into the k3s binary (no DaemonSet: its nodes carry the
``k3s.io/node-args`` and ``flannel.alpha.coreos.com/*`` annotations).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# --- the table ----------------------------------------------------------------------------

NETWORK, POLICY, BOTH = "network", "policy", "both"


@dataclass(frozen=True)
class CniPlugin:
    """One plugin as its DaemonSet shows it."""

    slug: str
    name: str  # human name, as the plugin's project calls itself
    role: str  # what its DaemonSet does by default: network | policy | both
    daemonsets: tuple[str, ...]  # DaemonSet names (pod names are NAME-xxxxx)
    labels: tuple[tuple[str, str], ...] = ()  # a pod-template label that names it
    images: tuple[str, ...] = ()  # image repository fragments (no tag)
    implements_network_policy: bool = True
    in_tree: bool = False
    # Where and how its manifests run it (the lab emulates these): namespace, first
    # DaemonSet name above, pod labels = ``labels``, and this image with {v} the version.
    namespace: str = "kube-system"
    image: str = ""


# Order matters only where one DaemonSet could match two rows by label or image: GKE
# Dataplane V2's anetd carries Cilium's k8s-app label and image name, so it comes first.
PLUGINS: tuple[CniPlugin, ...] = (
    CniPlugin(
        "gke-dataplane-v2",
        "GKE Dataplane V2",
        BOTH,
        ("anetd",),
        (),
        ("gke.gcr.io/cilium/", "gke.gcr.io/anetd"),
        namespace="kube-system",
        image="gke.gcr.io/cilium/cilium:v{v}-gke.1",
    ),
    CniPlugin(
        "amazon-vpc-cni",
        "Amazon VPC CNI",
        NETWORK,  # NetworkPolicy only with the network policy agent enabled (v1.14+)
        ("aws-node",),
        (("k8s-app", "aws-node"),),
        ("/amazon-k8s-cni", "amazon/amazon-k8s-cni"),
        namespace="kube-system",
        image="602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v{v}",
    ),
    CniPlugin(
        "azure-cni",
        "Azure CNI",
        NETWORK,
        ("azure-cns",),
        (("k8s-app", "azure-cns"),),
        ("/containernetworking/azure-cns",),
        namespace="kube-system",
        image="mcr.microsoft.com/containernetworking/azure-cns:v{v}",
    ),
    CniPlugin(
        "azure-npm",  # Azure Network Policy Manager: reported as azure-cni enforcing policy
        "Azure Network Policy Manager",
        POLICY,
        ("azure-npm", "azure-npm-deamon", "azure-npm-win"),
        (("k8s-app", "azure-npm"),),
        ("/containernetworking/azure-npm",),
        namespace="kube-system",
        image="mcr.microsoft.com/containernetworking/azure-npm:v{v}",
    ),
    CniPlugin(
        "canal",  # flannel for the network + Calico for policy, in one DaemonSet
        "Canal",
        BOTH,
        ("canal", "rke2-canal"),
        (("k8s-app", "canal"),),
        (),
        namespace="kube-system",
        image="docker.io/calico/node:v{v}",
    ),
    CniPlugin(
        "calico",
        "Calico",
        BOTH,
        ("calico-node",),
        (("k8s-app", "calico-node"),),
        ("calico/node",),
        namespace="calico-system",
        image="docker.io/calico/node:v{v}",
    ),
    CniPlugin(
        "cilium",
        "Cilium",
        BOTH,
        ("cilium",),
        (("k8s-app", "cilium"),),
        ("cilium/cilium",),
        namespace="kube-system",
        image="quay.io/cilium/cilium:v{v}",
    ),
    CniPlugin(
        "flannel",
        "Flannel",
        NETWORK,
        ("kube-flannel-ds", "flannel", "kube-flannel"),
        (("app", "flannel"), ("k8s-app", "flannel")),
        ("flannel/flannel", "coreos/flannel", "flannel-io/flannel"),
        implements_network_policy=False,
        namespace="kube-flannel",
        image="docker.io/flannel/flannel:v{v}",
    ),
    CniPlugin(
        "ovn-kubernetes",
        "OVN-Kubernetes",
        BOTH,
        ("ovnkube-node",),
        (("name", "ovnkube-node"), ("app", "ovnkube-node")),
        ("ovn-kubernetes/ovn-kube",),
        namespace="ovn-kubernetes",
        image="ghcr.io/ovn-org/ovn-kubernetes/ovn-kube-ubuntu:v{v}",
    ),
    CniPlugin(
        "antrea",
        "Antrea",
        BOTH,
        ("antrea-agent",),
        (("component", "antrea-agent"),),
        ("antrea/antrea-agent", "antrea/antrea-ubuntu"),
        namespace="kube-system",
        image="antrea/antrea-agent-ubuntu:v{v}",
    ),
    CniPlugin(
        "kube-router",
        "kube-router",
        BOTH,
        ("kube-router",),
        (("k8s-app", "kube-router"),),
        ("cloudnativelabs/kube-router",),
        namespace="kube-system",
        image="docker.io/cloudnativelabs/kube-router:v{v}",
    ),
    CniPlugin(
        "weave",
        "Weave Net",
        BOTH,
        ("weave-net",),
        (("name", "weave-net"),),
        ("weaveworks/weave",),
        namespace="kube-system",
        image="docker.io/weaveworks/weave-kube:{v}",
    ),
    CniPlugin(
        "kindnet",
        "kindnet",
        NETWORK,
        ("kindnet",),
        (("app", "kindnet"), ("k8s-app", "kindnet")),
        ("kindest/kindnetd",),
        implements_network_policy=False,
        namespace="kube-system",
        image="docker.io/kindest/kindnetd:v{v}",
    ),
)
BY_SLUG = {p.slug: p for p in PLUGINS}

# Plugins that only do the pod network (cloud VPC plugins, flannel, kindnet): a full plugin
# running beside one of them does policy (and maybe Services) on top, not the pod network.
UNDERLAYS = frozenset({"amazon-vpc-cni", "azure-cni", "flannel", "kindnet"})

# What to seed as plugins vendors and maintainers can register (contract: plugins).
CLOUD_PLUGINS = ("amazon-vpc-cni", "azure-cni", "gke-dataplane-v2")

# DaemonSet name -> slug, for readers that only see names (pod log directories, streamed
# resource files). Canal counts as calico there (its policy side is the plugin under test).
DAEMONSET_SLUGS: dict[str, str] = {
    name: ("calico" if p.slug == "canal" else "azure-cni" if p.slug == "azure-npm" else p.slug)
    for p in PLUGINS
    for name in p.daemonsets
}
_POD_NAME = re.compile(
    r"^("
    + "|".join(sorted(map(re.escape, DAEMONSET_SLUGS), key=len, reverse=True))
    + r")-[a-z0-9]{5}$"
)

# ConfigMaps that reveal a mode: (namespace or None for any, name or name prefix).
MODE_CONFIGMAPS = (
    "cilium-config",  # kube-proxy-replacement, cni-chaining-mode
    "calico-config",  # calico_backend: none (policy only)
    "canal-config",
    "antrea-config",  # antrea-agent.conf: antreaProxy.proxyAll (older names carry a hash suffix)
    "amazon-vpc-cni",  # enable-network-policy-controller
    "kube-proxy",  # config.conf: mode (kube-proxy's configured mode, never credited alone)
)


def slug_for_pod_name(pod: str) -> str | None:
    """The plugin whose DaemonSet runs a pod of this name (``calico-node-x7k2p``), if any."""
    match = _POD_NAME.match(pod)
    return DAEMONSET_SLUGS[match.group(1)] if match else None


def items_of(document: Any) -> list[dict[str, Any]]:
    """The objects of a list answer: ``{"items": [...]}`` (the API) or ``[...]`` (Sonobuoy)."""
    if isinstance(document, Mapping):
        items = document.get("items")
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    if isinstance(document, list):
        return [i for i in document if isinstance(i, dict)]
    return []


# --- detection ----------------------------------------------------------------------------


@dataclass
class Detection:
    network: str | None = None  # slug of the plugin giving pods their network
    policy: str | None = None  # slug of the plugin enforcing NetworkPolicy
    # Who programs Services when not kube-proxy: "ebpf (cilium)", "ebpf (calico)",
    # "antrea-proxy (antrea)", "ovn (ovn-kubernetes)", "ipvs (kube-router)",
    # "ebpf (gke-dataplane-v2)"; None: kube-proxy (or nothing says otherwise).
    service_dataplane: str | None = None
    kube_proxy_mode_configured: str | None = None  # kube-proxy's ConfigMap says (not credited)
    evidence: list[str] = field(default_factory=list)
    daemonsets: list[str] = field(default_factory=list)  # namespace/name of the CNI's

    @property
    def label(self) -> str | None:
        """One string for the fingerprint: ``calico``, or the pair ``flannel+calico``
        (network first), or ``calico (policy only)`` when the pod network is unknown."""
        if self.network and self.policy and self.policy != self.network:
            return f"{self.network}+{self.policy}"
        if self.network:
            return self.network
        if self.policy:
            return f"{self.policy} (policy only)"
        return None

    def slugs(self) -> set[str]:
        return {s for s in (self.network, self.policy) if s}

    def as_dict(self) -> dict[str, Any]:
        return {
            "network": self.network,
            "policy": self.policy,
            "service_dataplane": self.service_dataplane,
            "kube_proxy_mode_configured": self.kube_proxy_mode_configured,
            "label": self.label,
            "daemonsets": list(self.daemonsets),
            "evidence": list(self.evidence),
        }


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _where(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or '-'}/{meta.get('name') or '?'}"


def _containers(ds: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    out: list[Mapping[str, Any]] = []
    for key in ("containers", "initContainers"):
        out.extend(c for c in spec.get(key) or [] if isinstance(c, Mapping))
    return out


def _template_labels(ds: Mapping[str, Any]) -> dict[str, str]:
    labels = dict(_meta(ds).get("labels") or {})
    template = ((ds.get("spec") or {}).get("template") or {}).get("metadata") or {}
    labels.update(template.get("labels") or {})
    return {str(k): str(v) for k, v in labels.items()}


def match_daemonset(ds: Mapping[str, Any]) -> CniPlugin | None:
    """The table's row for a DaemonSet: by name, else pod label, else image."""
    name = str(_meta(ds).get("name") or "")
    for plugin in PLUGINS:
        if name in plugin.daemonsets:
            return plugin
    # Names with a suffix (kube-flannel-ds-amd64, azure-npm-win) still name the plugin.
    for plugin in PLUGINS:
        if any(name.startswith(f"{n}-") for n in plugin.daemonsets if len(n) > 6):
            return plugin
    labels = _template_labels(ds)
    images = [str(c.get("image") or "") for c in _containers(ds)]
    for plugin in PLUGINS:  # images first: anetd's image names GKE, its label says cilium
        if any(frag in image for frag in plugin.images for image in images):
            return plugin
    for plugin in PLUGINS:
        if any(labels.get(k) == v for k, v in plugin.labels):
            return plugin
    return None


def _env(ds: Mapping[str, Any], name: str) -> str | None:
    for container in _containers(ds):
        for var in container.get("env") or []:
            if isinstance(var, Mapping) and var.get("name") == name and "value" in var:
                return str(var.get("value"))
    return None


def _args(ds: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for container in _containers(ds):
        out += [str(a) for a in container.get("command") or []]
        out += [str(a) for a in container.get("args") or []]
    return out


def _flag(args: list[str], flag: str, default: bool) -> bool:
    """A boolean command-line flag's value (``--flag``, ``--flag=false``), else default."""
    value = default
    for arg in args:
        if arg == f"--{flag}":
            value = True
        elif arg.startswith(f"--{flag}="):
            value = arg.split("=", 1)[1].strip().lower() in ("true", "1", "yes")
    return value


def _truthy(value: Any) -> bool:
    return str(value).strip().strip('"').lower() in ("true", "1", "yes", "strict", "enabled")


def _configmap(
    configmaps: list[Mapping[str, Any]], name: str, namespace: str | None = None
) -> Mapping[str, Any] | None:
    """A ConfigMap by name (or ``name-<hash>``, as Antrea's older manifests name theirs)."""
    for cm in configmaps:
        meta = _meta(cm)
        cm_name = str(meta.get("name") or "")
        if namespace is not None and meta.get("namespace") != namespace:
            continue
        if cm_name == name or re.fullmatch(re.escape(name) + r"-[a-z0-9]{6,12}", cm_name):
            return cm
    return None


def _data(cm: Mapping[str, Any] | None) -> dict[str, str]:
    data = (cm or {}).get("data") or {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, Mapping) else {}


def _yaml_value(text: str, *path: str) -> str | None:
    """A nested value from a small YAML document (Antrea's, kube-proxy's config files),
    read with the YAML parser when it is there, else line by line."""
    try:
        import yaml  # PyYAML: a project dependency, but keep this module importable without

        doc: Any = yaml.safe_load(text)
        for key in path:
            if not isinstance(doc, Mapping) or key not in doc:
                return None
            doc = doc[key]
        return None if doc is None or isinstance(doc, Mapping | list) else str(doc).lower()
    except ImportError:  # pragma: no cover - PyYAML is installed with the project
        pass
    except Exception:
        return None
    indent_of: dict[int, int] = {}
    depth = 0
    for line in text.splitlines():
        stripped = line.split("#", 1)[0].rstrip()
        if not stripped.strip():
            continue
        indent = len(stripped) - len(stripped.lstrip())
        key, _, value = stripped.strip().partition(":")
        while depth and indent <= indent_of.get(depth - 1, -1):
            depth -= 1
        if depth < len(path) and key == path[depth]:
            if depth == len(path) - 1:
                return value.strip().strip('"').lower() or None
            indent_of[depth] = indent
            depth += 1
    return None


def detect(
    daemonsets: Iterable[Mapping[str, Any]],
    configmaps: Iterable[Mapping[str, Any]] = (),
    nodes: Iterable[Mapping[str, Any]] = (),
) -> Detection:
    """Who does the pod network, who does policy, who programs Services, and why."""
    dss = [d for d in daemonsets if isinstance(d, Mapping)]
    cms = [c for c in configmaps if isinstance(c, Mapping)]
    node_list = [n for n in nodes if isinstance(n, Mapping)]
    out = Detection()
    matched: list[tuple[CniPlugin, Mapping[str, Any]]] = []
    for ds in dss:
        plugin = match_daemonset(ds)
        if plugin is not None:
            matched.append((plugin, ds))
            out.daemonsets.append(_where(ds))
    found = {p.slug: ds for p, ds in matched}

    network: list[str] = []
    policy: list[str] = []
    for plugin, ds in matched:
        where = f"DaemonSet {_where(ds)}"
        slug = plugin.slug
        if slug == "canal":
            network.append("flannel")
            policy.append("calico")
            out.evidence.append(f"{where}: canal (flannel for the network, Calico for policy)")
            continue
        if slug == "azure-npm":
            policy.append("azure-cni")
            out.evidence.append(f"{where}: Azure Network Policy Manager enforces NetworkPolicy")
            continue
        if slug == "amazon-vpc-cni":
            network.append(slug)
            cm = _data(_configmap(cms, "amazon-vpc-cni"))
            args = _args(ds)
            if _truthy(cm.get("enable-network-policy-controller", "false")) or _flag(
                args, "enable-network-policy", False
            ):
                policy.append(slug)
                out.evidence.append(
                    f"{where}: Amazon VPC CNI with its network policy agent enabled"
                )
            else:
                out.evidence.append(f"{where}: Amazon VPC CNI (network policy agent not enabled)")
            continue
        if slug == "kube-router":
            args = _args(ds)
            roles = []
            if _flag(args, "run-router", True):
                network.append(slug)
                roles.append("pod network")
            if _flag(args, "run-firewall", True):
                policy.append(slug)
                roles.append("NetworkPolicy")
            if _flag(args, "run-service-proxy", True):
                out.service_dataplane = "ipvs (kube-router)"
                roles.append("Services (its own IPVS, --run-service-proxy)")
            out.evidence.append(f"{where}: kube-router runs {', '.join(roles) or 'nothing'}")
            continue
        if plugin.role in (NETWORK, BOTH):
            network.append(slug)
        if plugin.role in (POLICY, BOTH) and plugin.implements_network_policy:
            policy.append(slug)
        out.evidence.append(f"{where}: {plugin.name}")

    # k3s: flannel and a network policy controller (kube-router's) built into the binary.
    k3s_args = _k3s_node_args(node_list)
    if k3s_args is not None and not network:
        backend = _arg_value(k3s_args, "--flannel-backend")
        if backend != "none":
            network.append("flannel")
            out.evidence.append(
                "nodes carry k3s.io/node-args: flannel built into k3s "
                f"(backend {backend or _flannel_backend(node_list) or 'vxlan'})"
            )
        if "--disable-network-policy" not in k3s_args:
            policy.append("kube-router")
            out.evidence.append(
                "k3s's embedded network policy controller (kube-router's) enforces NetworkPolicy"
            )

    # Calico policy-only: told by its own backend setting, or by an underlay beside it.
    if "calico" in network and "calico" in found:
        backend = _env(found["calico"], "CALICO_NETWORKING_BACKEND")
        cm_backend = _data(_configmap(cms, "calico-config")).get("calico_backend")
        if (backend or cm_backend or "").strip().lower() == "none" or UNDERLAYS & set(network):
            network.remove("calico")
            why = (
                "CALICO_NETWORKING_BACKEND=none"
                if (backend or "").lower() == "none"
                else "calico-config calico_backend: none"
                if (cm_backend or "").lower() == "none"
                else f"{', '.join(sorted(UNDERLAYS & set(network)))} does the pod network"
            )
            out.evidence.append(f"Calico enforces policy only ({why})")

    cilium_cm = _data(_configmap(cms, "cilium-config"))
    if "cilium" in network:
        chaining = cilium_cm.get("cni-chaining-mode", "none").strip().lower()
        others = (set(network) - {"cilium"}) & (UNDERLAYS | {"calico"})
        if chaining not in ("", "none") or others:
            network.remove("cilium")
            why = f"cni-chaining-mode {chaining}" if chaining not in ("", "none") else ""
            why = why or f"{', '.join(sorted(others))} does the pod network"
            out.evidence.append(f"Cilium enforces policy on top of another CNI ({why})")

    # Who programs Services instead of kube-proxy.
    replacements = []
    if "gke-dataplane-v2" in found:
        replacements.append(("ebpf (gke-dataplane-v2)", "GKE Dataplane V2 runs without kube-proxy"))
    if "cilium" in found:
        kpr = cilium_cm.get("kube-proxy-replacement", "").strip().lower()
        sock = any(
            _truthy(cilium_cm.get(k, "false"))
            for k in ("enable-socket-lb", "bpf-lb-sock", "enable-host-reachable-services")
        )
        if kpr in ("true", "strict", "probe") or (kpr == "partial" and sock):
            replacements.append(
                ("ebpf (cilium)", f"cilium-config kube-proxy-replacement: {kpr or '?'}")
            )
        elif not cilium_cm:
            out.evidence.append("cilium-config not read: Cilium's kube-proxy replacement unknown")
    if "calico" in found:
        ds = found["calico"]
        felix = _env(ds, "FELIX_BPFENABLED")
        if felix is not None and _truthy(felix):
            replacements.append(("ebpf (calico)", "calico-node FELIX_BPFENABLED=true (bpfEnabled)"))
    if "antrea" in found:
        conf = _data(_configmap(cms, "antrea-config")).get("antrea-agent.conf", "")
        proxy_all = _yaml_value(conf, "antreaProxy", "proxyAll")
        enabled = _yaml_value(conf, "antreaProxy", "enable")
        gate = _yaml_value(conf, "featureGates", "AntreaProxy")
        if proxy_all == "true" and enabled != "false" and gate != "false":
            replacements.append(("antrea-proxy (antrea)", "antrea-agent.conf antreaProxy.proxyAll"))
    if "ovn-kubernetes" in found:
        replacements.append(
            ("ovn (ovn-kubernetes)", "OVN-Kubernetes implements Services as OVN load balancers")
        )
    if out.service_dataplane is None and replacements:
        out.service_dataplane = replacements[0][0]
    out.evidence.extend(f"Services by {name}: {why}" for name, why in replacements)

    kube_proxy = _data(_configmap(cms, "kube-proxy", "kube-system")).get("config.conf", "")
    mode = _yaml_value(kube_proxy, "mode") if kube_proxy else None
    if kube_proxy:
        out.kube_proxy_mode_configured = mode or "iptables"  # an empty mode is iptables

    out.network = _first(network)
    out.policy = _first(policy)
    return out


def _first(slugs: list[str]) -> str | None:
    seen = list(dict.fromkeys(slugs))
    return seen[0] if seen else None


def _annotations(node: Mapping[str, Any]) -> Mapping[str, Any]:
    return _meta(node).get("annotations") or {}


def _k3s_node_args(nodes: list[Mapping[str, Any]]) -> list[str] | None:
    for node in nodes:
        raw = _annotations(node).get("k3s.io/node-args")
        if raw is None:
            continue
        try:
            args = json.loads(str(raw))
        except ValueError:
            return []
        return [str(a) for a in args] if isinstance(args, list) else []
    return None


def _flannel_backend(nodes: list[Mapping[str, Any]]) -> str | None:
    for node in nodes:
        backend = _annotations(node).get("flannel.alpha.coreos.com/backend-type")
        if backend:
            return str(backend)
    return None


def _arg_value(args: list[str], flag: str) -> str | None:
    for i, arg in enumerate(args):
        if arg.startswith(f"{flag}="):
            return arg.split("=", 1)[1]
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
    return None
