"""What a Sonobuoy archive's cluster resources say: the CNI, kube-proxy's mode, the hosts.

Real Sonobuoy layouts, read from real tarballs (tests/fixtures/sonobuoy):

- 0.20 on: ``resources/ns/<ns>/apps_v1_daemonsets.json``, ``core_v1_pods.json``,
  ``core_v1_configmaps.json``, ``resources/cluster/core_v1_nodes.json``,
  ``core_v1_namespaces.json``: a JSON list of objects, keys sorted (so ``metadata.name``
  is nowhere near the top of an object);
- 0.10 to 0.1x: ``resources/ns/<ns>/DaemonSets.json``, ``Pods.json``, ``ConfigMaps.json``,
  ``resources/cluster/Nodes.json`` (the same objects, Go's field order);
- ``hosts/<node>/`` and ``podlogs/<ns>/<pod>/`` directories name nodes and pods.

A CNI is recognised by its DaemonSet (name, or its ``k8s-app``/``app`` label) or a pod that
DaemonSet owns, through the one CNI table the battery uses too (``kernel.cni``).
kube-proxy's mode comes from its ConfigMap (``mode:`` in ``config.conf``; an empty mode
is "not stated", it depends on flags) and from its pods' logs ("Using ipvs Proxier").
Files are parsed as JSON up to a bound; past it, owner references are found by pattern.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from kernel import cni as shared_cni


def cni_for(name: str, labels: dict[str, str]) -> str | None:
    """The plugin a DaemonSet of this name (or with these labels) runs, from the one CNI
    table (kernel.cni), as readers that only see a name need it (pod logs, e2e.log)."""
    if name in shared_cni.DAEMONSET_SLUGS:
        return shared_cni.DAEMONSET_SLUGS[name]
    plugin = shared_cni.match_daemonset({"metadata": {"name": name, "labels": labels}})
    return plugin.slug if plugin else None


def known_slugs() -> set[str]:
    return set(shared_cni.BY_SLUG) | set(shared_cni.DAEMONSET_SLUGS.values())


_NS_RESOURCE = re.compile(
    r"^(?:[^/]+/)?resources/ns/([^/]+)/"
    r"(apps_v1_daemonsets|extensions_v1beta1_daemonsets|DaemonSets|daemonsets"
    r"|core_v1_pods|Pods|pods|core_v1_configmaps|ConfigMaps)\.json$"
)
_CLUSTER_RESOURCE = re.compile(
    r"^(?:[^/]+/)?resources/cluster/(core_v1_nodes|Nodes|core_v1_namespaces|Namespaces)\.json$"
)
_HOST_DIR = re.compile(r"^(?:[^/]+/)?hosts/([^/]+)(?:/|$)")
JSON_BOUND = 4 * 1024 * 1024  # resource files parsed as JSON up to this size
OWNER = re.compile(rb'"kind"\s*:\s*"DaemonSet"\s*,\s*"name"\s*:\s*"([^"]{1,253})"')
_MODE = re.compile(r"^mode:\s*[\"']?([A-Za-z]*)[\"']?\s*$", re.M)
_MAX_NODES = 5000
_MAX_OBJECTS = 500
_DAEMON_POD = re.compile(r"^(.+)-[a-z0-9]{5}$")  # a DaemonSet's pod: its name and 5 characters


@dataclass
class ClusterFacts:
    cnis: dict[str, str] = field(default_factory=dict)  # slug -> where it was seen
    proxier_modes: dict[str, str] = field(default_factory=dict)  # mode -> where
    nodes: set[str] = field(default_factory=set)
    node_uids: set[str] = field(default_factory=set)
    cluster_uid: str | None = None  # the kube-system namespace's uid
    daemonsets: list[dict[str, Any]] = field(default_factory=list)  # for kernel.cni.detect
    configmaps: list[dict[str, Any]] = field(default_factory=list)  # the mode ConfigMaps
    node_objects: list[dict[str, Any]] = field(default_factory=list)  # annotations only
    service_dataplane: str | None = None  # who programs Services instead of kube-proxy

    def detect(self) -> None:
        """Run the shared CNI detection over what the archive held (once, at the end)."""
        if not (self.daemonsets or self.node_objects):
            return
        found = shared_cni.detect(self.daemonsets, self.configmaps, self.node_objects)
        where = "; ".join(found.evidence[:3]) or "the archive's DaemonSets"
        for slug in sorted(found.slugs()):
            self.cnis.setdefault(slug, where)
        self.service_dataplane = found.service_dataplane

    def host_facts(self) -> list[str]:
        facts = [f"node:{n}" for n in sorted(self.nodes)[:_MAX_NODES]]
        facts += [f"uid:{u}" for u in sorted(self.node_uids)[:_MAX_NODES]]
        if self.cluster_uid:
            facts.append(f"cluster:{self.cluster_uid}")
        return facts


def wanted(path: str) -> bool:
    return bool(_NS_RESOURCE.match(path) or _CLUSTER_RESOURCE.match(path))


def path_only(facts: ClusterFacts, path: str) -> None:
    if (host := _HOST_DIR.match(path)) and len(facts.nodes) < _MAX_NODES:
        facts.nodes.add(host.group(1)[:253])


def read(facts: ClusterFacts, path: str, data: bytes) -> None:
    """One resources/*.json member's bytes (at most the member bound)."""
    if match := _NS_RESOURCE.match(path):
        namespace, kind = match.group(1), match.group(2).lower()
        if "daemonsets" in kind:
            for obj in _objects(data, path) or []:
                _daemonset(facts, namespace, obj)
        elif "pods" in kind:
            objects = _objects(data, path)
            if objects is None:
                for owner in OWNER.findall(data):
                    _owner(facts, namespace, owner.decode("utf-8", "replace"), path)
            for obj in objects or []:
                _pod(facts, namespace, obj, path)
        else:
            for obj in _objects(data, path) or []:
                _configmap(facts, obj, namespace)
    elif match := _CLUSTER_RESOURCE.match(path):
        objects = _objects(data, path) or []
        if "odes" in match.group(1):
            for obj in objects[:_MAX_NODES]:
                meta = _meta(obj)
                if isinstance(meta.get("name"), str):
                    facts.nodes.add(meta["name"][:253])
                if isinstance(meta.get("uid"), str):
                    facts.node_uids.add(meta["uid"][:64])
                if len(facts.node_objects) < _MAX_OBJECTS:
                    facts.node_objects.append(
                        {"metadata": {"annotations": meta.get("annotations") or {}}}
                    )
        else:
            for obj in objects:
                meta = _meta(obj)
                if meta.get("name") == "kube-system" and isinstance(meta.get("uid"), str):
                    facts.cluster_uid = meta["uid"][:64]


def is_pods(path: str) -> bool:
    match = _NS_RESOURCE.match(path)
    return bool(match and "pods" in match.group(2).lower())


def read_owners(facts: ClusterFacts, path: str, owners: set[bytes]) -> None:
    """The DaemonSet owners found by pattern in a pods file too large to parse."""
    match = _NS_RESOURCE.match(path)
    namespace = match.group(1) if match else "?"
    for owner in sorted(owners)[:_MAX_OBJECTS]:
        _owner(facts, namespace, owner.decode("utf-8", "replace"), path)


def _objects(data: bytes, path: str) -> list[dict[str, Any]] | None:
    """The objects of a Sonobuoy resource file: a JSON list, or a List with ``items``."""
    if len(data) > JSON_BOUND:
        return None
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return []
    if isinstance(doc, dict):
        doc = doc.get("items")
    if not isinstance(doc, list):
        return []
    return [obj for obj in doc if isinstance(obj, dict)]


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _labels(meta: dict[str, Any]) -> dict[str, str]:
    labels = meta.get("labels")
    return (
        {k: v for k, v in labels.items() if isinstance(v, str)} if isinstance(labels, dict) else {}
    )


def _daemonset(facts: ClusterFacts, namespace: str, obj: dict[str, Any]) -> None:
    if len(facts.daemonsets) < _MAX_OBJECTS:
        meta = dict(_meta(obj))
        meta.setdefault("namespace", namespace)
        facts.daemonsets.append({**obj, "metadata": meta})


def _owner(facts: ClusterFacts, namespace: str, owner: str, path: str) -> None:
    slug = cni_for(owner, {})
    if slug:
        facts.cnis.setdefault(slug, f"pods of DaemonSet {namespace}/{owner}")


def _pod(facts: ClusterFacts, namespace: str, obj: dict[str, Any], path: str) -> None:
    meta = _meta(obj)
    owners = meta.get("ownerReferences")
    for ref in owners if isinstance(owners, list) else []:
        if isinstance(ref, dict) and ref.get("kind") == "DaemonSet":
            _owner(facts, namespace, str(ref.get("name") or ""), path)
    name = str(meta.get("name") or "")
    if (pod := _DAEMON_POD.match(name)) and (slug := cni_for(pod.group(1), _labels(meta))):
        facts.cnis.setdefault(slug, f"pod {namespace}/{name}")
    node = (obj.get("spec") or {}).get("nodeName") if isinstance(obj.get("spec"), dict) else None
    if isinstance(node, str) and node and len(facts.nodes) < _MAX_NODES:
        facts.nodes.add(node[:253])


def _configmap(facts: ClusterFacts, obj: dict[str, Any], namespace: str) -> None:
    meta = _meta(obj)
    name = str(meta.get("name") or "")
    if name.startswith(shared_cni.MODE_CONFIGMAPS) and len(facts.configmaps) < _MAX_OBJECTS:
        facts.configmaps.append({**obj, "metadata": {**meta, "namespace": namespace}})
    if name != "kube-proxy" or namespace != "kube-system":
        return
    data = obj.get("data")
    if not isinstance(data, dict):
        return
    for key, text in data.items():
        if isinstance(text, str) and (match := _MODE.search(text)):
            mode = match.group(1).lower()
            if mode:  # an empty mode depends on kube-proxy's flags: not stated here
                facts.proxier_modes.setdefault(
                    mode, f"the kube-proxy ConfigMap ({key}: mode {mode})"
                )
