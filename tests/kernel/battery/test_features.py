"""The `upstream` battery's decision (kernel.battery.features): which of upstream's feature
labels a cluster lacks, asked with the battery's own checks against the lab, and the command
line that leaves them out."""

from __future__ import annotations

import re
from pathlib import Path

from dashboard.domain.ingest.upstream_names import RELEASE_NAMES
from kernel import upstream as e2e
from kernel.battery import features
from tests.battery_specs import spec_for


def test_a_cluster_with_every_feature_leaves_nothing_out_and_cleans_up(start_lab):
    lab = start_lab(ip_families=["IPv4", "IPv6"])
    left = features.survey(lab.api, spec_for(lab.profile), "feat-1")
    assert left.features == {} and left.errors == []
    assert features.skip_regex(left.features) == ""
    assert any("its kernel has SCTP sockets" in e for e in left.evidence)
    assert "a RequireDualStack Service got two ClusterIPs" in left.evidence
    assert lab.battery_namespaces() == []


def test_the_decisions_are_the_batterys_own_skips_in_its_own_words(start_lab):
    lab = start_lab(faults={"no_kernel_sctp": True}, dataplane={"network_policy": "none"})
    spec = spec_for(lab.profile)
    left = features.survey(lab.api, spec, "feat-2")
    assert list(left.features) == [
        features.NETWORK_POLICY,
        features.SCTP_CONNECTIVITY,
        features.DUAL_STACK,
    ]
    assert re.fullmatch(
        r"not a dual-stack cluster: a RequireDualStack Service got one ClusterIP \(10\.[0-9.]+\)",
        left.features[features.DUAL_STACK],
    )
    assert lab.battery_namespaces() == []
    # Our battery on the same cluster skips with the same words.
    report = lab.run("all", run_id="feat-3")
    netpol = report.results["netpol-sctp-blocks-tcp-udp"]
    assert (netpol.outcome, netpol.reason) == ("skipped", left.features[features.NETWORK_POLICY])
    pod = report.results["pod-to-pod"]
    assert pod.outcome == "skipped"
    assert pod.reason.split("; besides, ")[0] == left.features[features.SCTP_CONNECTIVITY]


def test_the_dual_stack_decision_follows_the_clusters_families(start_lab):
    lab = start_lab(ip_families=["IPv4", "IPv6"], dataplane={"network_policy": "none"})
    left = features.survey(lab.api, spec_for(lab.profile), "feat-4")
    assert list(left.features) == [features.NETWORK_POLICY]


def test_the_skip_selects_exactly_the_labelled_specs_of_every_release() -> None:
    every = features.skip_regex(features.FEATURES)
    assert (
        every == r"\[Feature:SCTPConnectivity\]|\[Feature:NetworkPolicy\]|\[Feature:IPv6DualStack\]"
    )
    for release in ("v1.34", "v1.35", "v1.36", "v1.37"):
        names = RELEASE_NAMES[release]
        for labels in (
            [features.SCTP_CONNECTIVITY],
            [features.NETWORK_POLICY],
            list(features.FEATURES),
        ):
            skip = re.compile(features.skip_regex(labels))
            left = {n for n in names if skip.search(n)}
            assert left == {n for n in names if features.labels_of(n, labels)}, (release, labels)
        # Only the two basic specs carry none of the labels.
        assert sum(1 for n in names if not features.labels_of(n, features.FEATURES)) == 2


def test_the_command_carries_the_skip_only_when_something_is_left_out(tmp_path: Path) -> None:
    base = (Path("/e2e.test"), tmp_path / "kubeconfig", "(a|b)", tmp_path, 60)
    plain = e2e.command(*base)
    assert not any(arg.startswith("--ginkgo.skip") for arg in plain)
    skip = features.skip_regex([features.NETWORK_POLICY])
    argv = e2e.command(*base, skip=skip)
    assert argv[:4] == [
        "/e2e.test",
        f"--kubeconfig={tmp_path / 'kubeconfig'}",
        "--ginkgo.focus=(a|b)",
        r"--ginkgo.skip=\[Feature:NetworkPolicy\]",
    ]
    assert argv[4:] == plain[3:]
