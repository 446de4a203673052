from __future__ import annotations

from pathlib import Path

import pytest

from lab.profiles import load_profile, load_profiles, validate_profile

SHIPPED = Path(__file__).resolve().parents[2] / "lab" / "profiles"


def write(tmp_path: Path, text: str, name: str = "bad.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_shipped_profile_loads_with_unique_names() -> None:
    profiles = load_profiles(SHIPPED)
    names = {p["name"] for p in profiles}
    assert {
        "calico-iptables",
        "calico-ipvs",
        "cilium-default",
        "cilium-sctp",
        "ovn-nftables",
        "flannel-iptables",
        "kubenet",
        "legacy-1-19-gate-off",
    } <= names
    assert len(names) == len(profiles)


def test_shipped_profiles_describe_the_plugins_as_documented() -> None:
    by_name = {p["name"]: p for p in load_profiles(SHIPPED)}
    assert by_name["cilium-default"]["dataplane"]["network_policy"] == "no-sctp"
    assert by_name["cilium-default"]["dataplane"]["pod_to_pod"] is False
    assert by_name["flannel-iptables"]["dataplane"]["network_policy"] == "none"
    assert by_name["kubenet"]["kubenet"] is True
    assert by_name["legacy-1-19-gate-off"]["sctp_feature_gate"] is False
    assert by_name["legacy-1-19-gate-off"]["kubernetes_version"].startswith("1.18.")
    assert by_name["ovn-nftables"]["proxier"] == "nftables"
    assert by_name["calico-ipvs"]["load_balancer"] is True
    assert sum(p["load_balancer"] for p in by_name.values()) <= 2


def test_a_minimal_profile_gets_every_default() -> None:
    got = validate_profile({"name": "x", "plugin": "calico"}, "x.yaml")
    assert got["proxier"] == "iptables"
    assert got["nodes"] == 2
    assert got["sctp_feature_gate"] is True and got["node_access"] is True
    assert got["kubenet"] is False and got["load_balancer"] is False
    assert got["dataplane"] == {
        "pod_to_pod": True,
        "via_service": True,
        "via_load_balancer": True,
        "network_policy": "full",
        "via_node_port": True,
        "endpoints_reachable": "all",
        "namespace_selector": True,
        "hairpin": True,
        "secondary_family": True,
    }
    assert got["ip_families"] == ["IPv4"] and got["service_dataplane"] == "kube-proxy"
    assert got["policy_by"] is None and got["shared_kernel"] is False and got["flavor"] is None
    assert got["admission"] == {"privileged_pods": "allow"}
    assert (got["cni"], got["kube_proxy"]) == ("calico", "iptables")
    assert got["faults"]["hostport_loads_module"] is False
    assert got["faults"]["pod_start_delay_s"] == 0.05
    assert got["faults"]["api_error_rate"] == 0.0
    assert got["token"] == "lab-x-token"


def test_the_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    path = write(tmp_path, "plugin: calico\n", "my-cluster.yaml")
    assert load_profile(path)["name"] == "my-cluster"


def test_validation_is_idempotent() -> None:
    once = validate_profile({"name": "x", "plugin": "calico", "faults": {"stuck_pending": True}})
    assert validate_profile(once) == once


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("plugin: calico\nproxier: userspace\n", "proxier"),
        ("plugin: calico\nnodes: 0\n", "nodes"),
        ("plugin: calico\nnodes: two\n", "nodes"),
        ("plugin: calico\nnodes: true\n", "nodes"),
        ("plugin: calico\ndataplane: {network_policy: partial}\n", "dataplane.network_policy"),
        ("plugin: calico\ndataplane: {pod_to_pod: 'yes'}\n", "dataplane.pod_to_pod"),
        ("plugin: calico\nfaults: {explode: true}\n", "faults.explode"),
        ("plugin: calico\nfaults: {api_error_rate: 2}\n", "faults.api_error_rate"),
        ("plugin: calico\nfaults: {pod_start_delay_s: -1}\n", "faults.pod_start_delay_s"),
        ("plugin: calico\nkubernetes_version: 1.31\n", "kubernetes_version"),
        ("plugin: calico\nsctp_feature_gate: maybe\n", "sctp_feature_gate"),
        ("plugin: calico\nload_balancers: true\n", "load_balancers"),
        ("name: calico-iptables\n", "plugin"),
        ("name: Not_A_Label\nplugin: calico\n", "name"),
        ("plugin: calico\nip_families: [IPv5]\n", "ip_families"),
        ("plugin: calico\nip_families: IPv4\n", "ip_families"),
        ("plugin: calico\nservice_dataplane: magic\n", "service_dataplane"),
        ("plugin: calico\nflavor: openshift\n", "flavor"),
        ("plugin: calico\nshared_kernel: 1\n", "shared_kernel"),
        ("plugin: calico\ndataplane: {hairpin: 'no'}\n", "dataplane.hairpin"),
    ],
)
def test_bad_input_names_the_file_and_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ValueError) as err:
        load_profile(path)
    assert str(path) in str(err.value)
    assert field in str(err.value)


def test_a_non_mapping_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"bad\.yaml.*mapping"):
        load_profile(write(tmp_path, "- a\n- b\n"))


def test_broken_yaml_is_refused_with_the_file_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"bad\.yaml.*not valid YAML"):
        load_profile(write(tmp_path, "plugin: [calico\n"))


def test_two_files_with_one_cluster_name_are_refused(tmp_path: Path) -> None:
    write(tmp_path, "name: same\nplugin: calico\n", "a.yaml")
    write(tmp_path, "name: same\nplugin: cilium\n", "b.yaml")
    with pytest.raises(ValueError, match=r"b\.yaml.*name"):
        load_profiles(tmp_path)


def test_node_access_false_and_privileged_pods_forbid_mean_the_same() -> None:
    old = validate_profile({"name": "x", "plugin": "calico", "node_access": False})
    assert old["admission"]["privileged_pods"] == "forbid"
    new = validate_profile(
        {"name": "x", "plugin": "calico", "admission": {"privileged_pods": "webhook-deny"}}
    )
    # Registered with node access, so the battery meets the webhook's refusal and quotes it.
    assert new["node_access"] is True


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (
            {"kube_proxy": "userspace"},
            "field kube_proxy must be one of iptables, ipvs, nftables, none",
        ),
        (
            {"dataplane": {"endpoints_reachable": "two"}},
            "field dataplane.endpoints_reachable must be one of all, one",
        ),
        (
            {"admission": {"privileged_pods": "deny"}},
            "field admission.privileged_pods must be one of allow, forbid, webhook-deny",
        ),
        ({"admission": {"pods": "allow"}}, "unknown field admission.pods"),
    ],
)
def test_the_new_keys_are_checked(data, words) -> None:
    with pytest.raises(ValueError, match=words):
        validate_profile({"name": "x", "plugin": "calico", **data}, "x.yaml")


def test_what_the_new_keys_imply() -> None:
    eks = validate_profile({"name": "x", "plugin": "amazon-vpc-cni", "flavor": "eks"})
    assert (eks["cni"], eks["service_dataplane"]) == ("amazon-vpc-cni", "kube-proxy")
    gke = validate_profile({"name": "x", "plugin": "gke-dataplane-v2", "flavor": "gke-dpv2"})
    assert (gke["cni"], gke["kube_proxy"], gke["service_dataplane"]) == (
        "gke-dataplane-v2",
        "none",
        "cilium-ebpf",
    )
    cilium = validate_profile({"name": "x", "plugin": "cilium", "kube_proxy": "none"})
    assert cilium["service_dataplane"] == "cilium-ebpf"
    ovn = validate_profile({"name": "x", "plugin": "ovn-kubernetes", "proxier": "nftables"})
    assert ovn["service_dataplane"] == "ovn"  # OVN load balancers, whatever kube-proxy runs
    up = validate_profile(
        {
            "name": "x",
            "plugin": "cilium",
            "kube_proxy": "iptables",
            "service_dataplane": "cilium-ebpf",
        }
    )
    assert (up["kube_proxy"], up["service_dataplane"]) == ("iptables", "cilium-ebpf")
