"""The one CNI table (kernel/cni.py): DaemonSets and ConfigMaps as the API gives them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel import cni

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sonobuoy"


def ds(name, namespace="kube-system", labels=None, image="example.com/x:v1", env=None, args=None):
    container = {"name": name, "image": image}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if args:
        container["args"] = list(args)
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "template": {"metadata": {"labels": labels or {}}, "spec": {"containers": [container]}}
        },
    }


def cm(name, data, namespace="kube-system"):
    return {"metadata": {"name": name, "namespace": namespace}, "data": data}


KUBE_PROXY = ds(
    "kube-proxy", labels={"k8s-app": "kube-proxy"}, image="registry.k8s.io/kube-proxy:v1.31.2"
)
CALICO = ds(
    "calico-node", "calico-system", {"k8s-app": "calico-node"}, "docker.io/calico/node:v3.28.0"
)
AWS_NODE = ds(
    "aws-node",
    labels={"k8s-app": "aws-node"},
    image="602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.0-eksbuild.1",
)
CILIUM = ds("cilium", labels={"k8s-app": "cilium"}, image="quay.io/cilium/cilium:v1.16.3")


def test_a_real_sonobuoy_resources_file_names_kindnet():
    document = json.loads((FIXTURES / "kind-kube-system-apps_v1_daemonsets.json").read_text())
    found = cni.detect(cni.items_of(document))
    assert (found.network, found.policy, found.service_dataplane) == ("kindnet", None, None)
    assert found.label == "kindnet"
    assert found.daemonsets == ["kube-system/kindnet"]
    # the API's List object gives the same
    assert cni.detect(cni.items_of({"items": document})).label == "kindnet"


def test_calico_alone_does_network_and_policy():
    found = cni.detect([CALICO, KUBE_PROXY])
    assert (found.network, found.policy, found.label) == ("calico", "calico", "calico")
    assert found.service_dataplane is None


def test_calico_for_policy_only_on_the_amazon_vpc_cni_is_reported_as_the_pair():
    found = cni.detect([AWS_NODE, CALICO, KUBE_PROXY])
    assert (found.network, found.policy) == ("amazon-vpc-cni", "calico")
    assert found.label == "amazon-vpc-cni+calico"
    assert any("policy only" in e for e in found.evidence)


def test_calico_policy_only_by_its_backend_setting():
    policy_only = ds(
        "calico-node",
        labels={"k8s-app": "calico-node"},
        image="calico/node:v3.28.0",
        env={"CALICO_NETWORKING_BACKEND": "none"},
    )
    found = cni.detect([policy_only])
    assert (found.network, found.policy, found.label) == (None, "calico", "calico (policy only)")
    found = cni.detect([CALICO], [cm("calico-config", {"calico_backend": "none"}, "calico-system")])
    assert found.network is None and found.policy == "calico"


def test_canal_is_flannel_with_calico_policy():
    found = cni.detect([ds("canal", labels={"k8s-app": "canal"}, image="calico/node:v3.28.0")])
    assert found.label == "flannel+calico"


def test_amazon_vpc_cni_does_policy_only_with_its_agent_enabled():
    assert cni.detect([AWS_NODE]).label == "amazon-vpc-cni"
    assert cni.detect([AWS_NODE]).policy is None
    on = cni.detect(
        [AWS_NODE], [cm("amazon-vpc-cni", {"enable-network-policy-controller": "true"})]
    )
    assert (on.network, on.policy) == ("amazon-vpc-cni", "amazon-vpc-cni")


def test_aks_azure_cni_with_cilium_as_dataplane():
    cns = ds(
        "azure-cns",
        labels={"k8s-app": "azure-cns"},
        image="mcr.microsoft.com/containernetworking/azure-cns:v1.6.5",
    )
    found = cni.detect(
        [cns, CILIUM],
        [cm("cilium-config", {"kube-proxy-replacement": "true", "ipam": "delegated-plugin"})],
    )
    assert (found.network, found.policy) == ("azure-cni", "cilium")
    assert found.service_dataplane == "ebpf (cilium)"
    npm = ds(
        "azure-npm",
        labels={"k8s-app": "azure-npm"},
        image="mcr.microsoft.com/containernetworking/azure-npm:v1.5",
    )
    found = cni.detect([cns, npm, KUBE_PROXY])
    assert (found.network, found.policy, found.label) == ("azure-cni", "azure-cni", "azure-cni")


def test_gke_dataplane_v2_is_not_taken_for_cilium():
    anetd = ds(
        "anetd", labels={"k8s-app": "cilium"}, image="gke.gcr.io/cilium/cilium:v1.14.4-gke.1"
    )
    found = cni.detect([anetd], [cm("cilium-config", {"kube-proxy-replacement": "strict"})])
    assert found.label == "gke-dataplane-v2"
    assert found.service_dataplane == "ebpf (gke-dataplane-v2)"


def test_k3s_builtin_flannel_from_node_annotations():
    node = {
        "metadata": {
            "name": "k3s-server",
            "annotations": {
                "k3s.io/node-args": '["server","--tls-san","x"]',
                "flannel.alpha.coreos.com/backend-type": "vxlan",
            },
        }
    }
    found = cni.detect([], [], [node])
    assert (found.network, found.policy) == ("flannel", "kube-router")
    assert any("built into k3s" in e for e in found.evidence)
    node["metadata"]["annotations"]["k3s.io/node-args"] = (
        '["server","--flannel-backend","none","--disable-network-policy"]'
    )
    found = cni.detect([CALICO], [], [node])
    assert found.label == "calico"


@pytest.mark.parametrize(
    "kpr,replaced", [("true", True), ("strict", True), ("false", False), ("disabled", False)]
)
def test_cilium_kube_proxy_replacement(kpr, replaced):
    found = cni.detect([CILIUM, KUBE_PROXY], [cm("cilium-config", {"kube-proxy-replacement": kpr})])
    assert found.label == "cilium"
    assert found.service_dataplane == ("ebpf (cilium)" if replaced else None)


def test_calico_ebpf_antrea_proxy_all_ovn_and_kube_router():
    bpf = ds("calico-node", labels={"k8s-app": "calico-node"}, env={"FELIX_BPFENABLED": "true"})
    assert cni.detect([bpf]).service_dataplane == "ebpf (calico)"
    antrea = ds("antrea-agent", labels={"component": "antrea-agent"})
    conf = "featureGates:\n  AntreaProxy: true\nantreaProxy:\n  proxyAll: true\n"
    assert (
        cni.detect(
            [antrea], [cm("antrea-config-4k2h6t8c9b", {"antrea-agent.conf": conf})]
        ).service_dataplane
        == "antrea-proxy (antrea)"
    )
    conf = "antreaProxy:\n  # proxyAll: true\n  proxyAll: false\n"
    assert (
        cni.detect([antrea], [cm("antrea-config", {"antrea-agent.conf": conf})]).service_dataplane
        is None
    )
    ovn = ds("ovnkube-node", "ovn-kubernetes", {"name": "ovnkube-node"})
    assert cni.detect([ovn]).service_dataplane == "ovn (ovn-kubernetes)"
    router = ds("kube-router", labels={"k8s-app": "kube-router"}, args=["--run-router=true"])
    assert cni.detect([router]).service_dataplane == "ipvs (kube-router)"
    router = ds(
        "kube-router", labels={"k8s-app": "kube-router"}, args=["--run-service-proxy=false"]
    )
    found = cni.detect([router])
    assert found.service_dataplane is None and found.label == "kube-router"


def test_kube_proxy_configured_mode_is_read_never_credited_here():
    conf = cm("kube-proxy", {"config.conf": 'kind: KubeProxyConfiguration\nmode: "ipvs"\n'})
    assert cni.detect([KUBE_PROXY], [conf]).kube_proxy_mode_configured == "ipvs"
    conf = cm("kube-proxy", {"config.conf": 'mode: ""\n'})
    assert cni.detect([KUBE_PROXY], [conf]).kube_proxy_mode_configured == "iptables"


def test_names_only_readers():
    assert cni.slug_for_pod_name("calico-node-x7k2p") == "calico"
    assert cni.slug_for_pod_name("aws-node-8f9zq") == "amazon-vpc-cni"
    assert cni.slug_for_pod_name("anetd-2bx4c") == "gke-dataplane-v2"
    assert cni.slug_for_pod_name("kube-proxy-abcde") is None
    assert cni.match_daemonset(ds("kube-flannel-ds-amd64")).slug == "flannel"
    assert cni.match_daemonset(ds("something", labels={"app": "nginx"})) is None
    assert set(cni.CLOUD_PLUGINS) <= set(cni.BY_SLUG)
