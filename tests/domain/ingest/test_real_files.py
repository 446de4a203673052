"""Issue 21: what a real result file proves is read from the file itself.

Real Sonobuoy tarballs (tests/fixtures/sonobuoy) and the real v1.30 JUnit, and copies of them
edited so that their SCTP tests read as passed (tests/domain/ingest/real_files.py). Each test here
failed on the code before the fix.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

import pytest

from dashboard.domain.ingest import IngestError, archives, ingest
from dashboard.domain.ingest.limits import Deadline, Limits
from dashboard.domain.ingest.upstream_names import CHECKED, RELEASE_NAMES, RELEASES

from . import real_files as rf
from .builders import junit_v2, real_v130, tar_gz, with_sctp_status

UPLOAD = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
V121_NAMES = list(RELEASE_NAMES["v1.21"])


def refused(data: bytes, **declared: str | None) -> IngestError:
    with pytest.raises(IngestError) as caught:
        ingest(
            data,
            received_at=UPLOAD,
            declared_kubernetes_version=declared.get("declared_kubernetes_version"),
            declared_proxier=declared.get("declared_proxier"),
            declared_plugin=declared.get("declared_plugin"),
        )
    return caught.value


# --- 2: the release the file states is the release ------------------------------------


def test_a_real_v1_21_tarball_declared_as_1_33_is_refused_naming_both():
    error = refused(rf.edited(rf.V121), declared_kubernetes_version="1.33.0")
    assert error.status == 422
    assert "v1.21.1" in error.message and "serverversion.json" in error.message
    assert "1.33.0" in error.message


def test_v1_21_names_without_e2e_log_declared_as_1_33_are_refused():
    # Before: accepted with no warning, counted as 1.33 once verified.
    document = junit_v2([(name, "passed") for name in V121_NAMES])
    error = refused(document, declared_kubernetes_version="1.33.0")
    assert error.status == 422 and "v1.21" in error.message and "1.33.0" in error.message
    report = ingest(document, declared_kubernetes_version="1.21.4", received_at=UPLOAD)
    assert report.provenance["release"]["source"].startswith("declared")


def test_names_of_the_newest_generation_fit_any_later_release():
    names = list(RELEASE_NAMES[RELEASES[-1]])
    report = ingest(junit_v2([(n, "passed") for n in names]), declared_kubernetes_version="1.38.0")
    assert [w for w in report.warnings if "newer than the releases" in w]


def test_the_real_v1_21_1_file_is_guessed_as_v1_21():
    # Before: its "SCTP [Feature:SCTP] [LinuxOnly]" names made the guess v1.20.
    report = ingest(rf.real(rf.V121), check_evidence=False)
    assert report.release == "v1.21"
    assert report.provenance["names_release"] == "v1.21"


def test_every_release_says_where_its_names_were_checked():
    assert set(CHECKED) == set(RELEASES)
    assert "v1.21.1" in CHECKED["v1.21"] and "v1.19.16" in CHECKED["v1.19"]
    v119 = RELEASE_NAMES["v1.19"]
    assert "netpol-allow-deny" not in v119.values()
    assert any("[Disruptive]" not in name and "pod-pod" in name for name in v119)


# --- 3: run time from the file's own record, never archive dates ---------------------------


def test_a_2021_run_repacked_today_keeps_its_2021_run_time():
    report = ingest(rf.edited(rf.V121), declared_plugin=None, received_at=UPLOAD)
    assert report.run_at == datetime(2021, 8, 17, 17, 4, 33, tzinfo=UTC)
    assert report.provenance["run_at"]["source"] == "from Sonobuoy meta/run.log"


def test_a_logfmt_run_log_is_read_too():
    files = rf.members(rf.real(rf.V121))
    files["meta/run.log"] = b'time="2021-08-17T18:00:00Z" level=info msg="Starting server"\n'
    report = ingest(rf.repack(files), check_evidence=False)
    assert report.run_at == datetime(2021, 8, 17, 18, tzinfo=UTC)


def test_without_run_log_or_log_times_the_repacked_tarball_has_no_run_time():
    data = rf.edited(rf.V121, **{"meta/run.log": None})
    report = ingest(data, received_at=UPLOAD)
    assert report.run_at is None and report.run_at_source == ""
    assert "not in the file" in report.provenance["run_at"]["source"]


def test_ginkgo_v2_report_entries_date_a_junit_without_timestamp():
    document = junit_v2([(V121_NAMES[8], "passed")], timestamp=None).replace(
        b"</testcase>",
        b"<system-err>STEP: Creating a kubernetes client @ 11/02/26 09:08:07.123</system-err>"
        b"</testcase>",
    )
    report = ingest(document, received_at=UPLOAD)
    assert report.run_at == datetime(2026, 11, 2, 9, 8, 7, tzinfo=UTC)
    assert "Ginkgo report entries" in report.provenance["run_at"]["source"]


# --- 4: plugin and proxier from real layouts, one CNI table --------------------------------


def test_the_real_kind_tarball_shows_kindnet_and_iptables():
    report = ingest(rf.real(rf.V121), check_evidence=False)
    assert report.cni_detected == "kindnet" and report.proxier_detected == "iptables"
    assert "kube-proxy ConfigMap" in report.provenance["proxier"]["source"]


def test_an_edited_kind_run_sent_as_calico_is_refused_naming_kindnet():
    error = refused(rf.edited(rf.V121), declared_plugin="calico", declared_proxier="iptables")
    assert error.status == 422 and "kindnet" in error.message and "calico" in error.message


def _flannel_resources() -> dict[str, bytes | None]:
    """The real archive's kube-system resources with kindnet replaced by flannel (sorted keys,
    as Sonobuoy writes them), flannel's pod logs left out."""
    files = rf.members(rf.real(rf.V121))
    out: dict[str, bytes | None] = {}
    for path in ("resources/ns/kube-system/apps_v1_daemonsets.json",):
        items = json.loads(files[path])
        for item in items:
            if item["metadata"]["name"] == "kindnet":
                item["metadata"]["name"] = "kube-flannel-ds"
                item["metadata"]["labels"] = {"app": "flannel", "tier": "node"}
        out[path] = json.dumps(items, sort_keys=True).encode()
    pods = json.loads(files["resources/ns/kube-system/core_v1_pods.json"])
    for pod in pods:
        for ref in pod["metadata"].get("ownerReferences", []):
            if ref["name"] == "kindnet":
                ref["name"] = "kube-flannel-ds"
                pod["metadata"]["name"] = "kube-flannel-ds-x7k2p"
    out["resources/ns/kube-system/core_v1_pods.json"] = json.dumps(pods, sort_keys=True).encode()
    return out


def test_a_flannel_run_sent_as_calico_without_flannels_pod_logs_is_refused():
    data = rf.edited(rf.V121, **_flannel_resources())
    error = refused(data, declared_plugin="calico", declared_kubernetes_version="1.21.1")
    assert error.status == 422 and "flannel" in error.message
    report = ingest(data, declared_plugin="flannel", received_at=UPLOAD)
    assert report.provenance["plugin"]["value"] == "flannel"


def test_the_2017_layout_shows_calico_from_its_daemonsets():
    report = ingest(rf.real(rf.V010), check_evidence=False)
    assert report.cni_detected == "calico"
    assert report.provenance["release"] == {"value": "v1.8.4", "source": "from serverversion.json"}


def test_e2e_log_daemonsets_name_the_cni():
    log = b"Aug 17 17:04:34.815: INFO: 3 / 3 pods ready in namespace 'kube-system' in daemonset 'cilium' (0 seconds elapsed)\n"
    data = tar_gz({"junit_01.xml": junit_v2([(V121_NAMES[8], "passed")]), "e2e.log": log})
    error = refused(data, declared_plugin="calico")
    assert "cilium" in error.message and "e2e.log" in error.message


def test_without_any_cni_evidence_the_report_says_not_detected():
    report = ingest(junit_v2([(V121_NAMES[8], "passed")]), declared_plugin="calico")
    assert report.provenance["plugin"] == {
        "value": "calico",
        "source": "declared; not detected in the file",
    }


def test_a_kube_proxy_configmap_in_ipvs_mode_refuses_a_declared_iptables():
    files = rf.members(rf.real(rf.V121))
    path = "resources/ns/kube-system/core_v1_configmaps.json"
    maps = json.loads(files[path])
    for cm in maps:
        if cm["metadata"]["name"] == "kube-proxy":
            cm["data"]["config.conf"] = cm["data"]["config.conf"].replace(
                "mode: iptables", "mode: ipvs"
            )
    data = rf.edited(rf.V121, **{path: json.dumps(maps, sort_keys=True).encode()})
    error = refused(data, declared_proxier="iptables", declared_plugin="kindnet")
    assert error.status == 422 and "ipvs" in error.message


# --- 5: dry runs ----------------------------------------------------------------------------


def test_the_real_dry_run_is_refused_as_a_dry_run():
    error = refused(rf.real(rf.DRY_RUN), declared_kubernetes_version="1.14.2")
    assert error.status == 422 and "dry run" in error.message


def test_a_dry_run_edited_to_pass_the_sctp_tests_is_refused():
    data = rf.edited(rf.DRY_RUN, add=V121_NAMES)
    error = refused(data, declared_kubernetes_version="1.14.2", declared_plugin="kindnet")
    assert error.status == 422 and "dry run" in error.message


def test_a_dry_run_without_its_plugin_definition_is_still_refused_by_its_e2e_log():
    data = rf.edited(rf.DRY_RUN, add=V121_NAMES, **{"plugins/e2e/defintion.json": None})
    error = refused(data, declared_kubernetes_version="1.14.2", declared_plugin="kindnet")
    assert '"0 Passed"' in error.message


def test_the_ginkgo_dry_run_property_refuses_the_file():
    document = with_sctp_status(real_v130(), "passed").replace(
        b'<property name="DryRun" value="false">', b'<property name="DryRun" value="true">'
    )
    error = refused(document)
    assert error.status == 422 and "DryRun" in error.message


def test_passes_with_no_plausible_duration_are_refused():
    # 17 specs "passed" in 3 ms in all, as the testsuite says (ginkgo writes its total time).
    document = (
        junit_v2([(name, "passed") for name in V121_NAMES])
        .replace(b'time="1"', b'time="0"')
        .replace(b'<testsuite name="Kubernetes e2e suite"', b'<testsuite time="0.003" name="x"')
    )
    error = refused(document)
    assert error.status == 422 and "dry run" in error.message


# --- 1: identity by content ------------------------------------------------------------------


def test_a_run_has_one_identity_whatever_its_container():
    document = with_sctp_status(real_v130(), "passed")
    plain = ingest(document, received_at=UPLOAD)
    gzipped = ingest(gzip.compress(document), received_at=UPLOAD)
    tarred = ingest(tar_gz({"junit_01.xml": document}), received_at=UPLOAD)
    spaced = ingest(
        document.replace(b"<testcase ", b"<!-- x -->\n<testcase ", 3), received_at=UPLOAD
    )
    no_props = ingest(
        document.replace(b'<property name="DryRun" value="false"></property>', b""),
        received_at=UPLOAD,
    )
    assert len({r.content_id for r in (plain, gzipped, tarred, spaced, no_props)}) == 1
    edited = ingest(with_sctp_status(real_v130(), "failed"), received_at=UPLOAD)
    assert edited.content_id != plain.content_id and edited.near_id == plain.near_id


def test_reordering_the_testcases_or_the_documents_keeps_the_identity():
    """The identity is a multiset of the testcases: re-ordering them (a writer that sorts,
    a tool that rewrites the file) or splitting the run over documents in another order is the
    same run; dropping or repeating a testcase is not."""
    document = with_sctp_status(real_v130(), "passed")
    head, _, rest = document.partition(b"<testcase ")
    cases = [b"<testcase " + c for c in rest.split(b"<testcase ")]
    tail_at = (
        cases[-1].rindex(b"</testcase>") + len(b"</testcase>")
        if b"</testcase>" in cases[-1]
        else cases[-1].index(b"/>") + 2
    )
    cases[-1], tail = cases[-1][:tail_at], cases[-1][tail_at:]
    plain = ingest(document, received_at=UPLOAD)
    reversed_ = ingest(head + b"".join(reversed(cases)) + tail, received_at=UPLOAD)
    assert reversed_.content_id == plain.content_id and reversed_.near_id == plain.near_id
    halves = {
        "junit_01.xml": head + b"".join(cases[: len(cases) // 2]) + tail,
        "junit_02.xml": head + b"".join(cases[len(cases) // 2 :]) + tail,
    }
    one_way = ingest(tar_gz(halves), received_at=UPLOAD)
    other_way = ingest(tar_gz(dict(reversed(list(halves.items())))), received_at=UPLOAD)
    assert one_way.content_id == other_way.content_id
    repeated = ingest(head + b"".join(cases) + cases[0] + tail, received_at=UPLOAD)
    assert repeated.content_id != plain.content_id


def test_the_identity_is_the_xml_content_not_its_spelling():
    """Identity v4 is read from what the XML says (the reader's records): quoting, attribute
    order, character references, comments and CDATA around it do not change the run; an
    outcome or a time does."""
    document = with_sctp_status(real_v130(), "passed")
    plain = ingest(document, received_at=UPLOAD)
    name = b'name="[It] [sig-network] Networking Granular Checks: Services should function for node-Service: udp"'
    assert document.count(name) == 1
    respelled = document.replace(name, name.replace(b"Granular", b"&#71;ranular")).replace(
        b"<testsuite ", b"<!-- a comment --><testsuite ", 1
    )
    respelled = respelled.replace(
        b'classname="Kubernetes e2e suite" status="skipped" time="0"',
        b"time='0' status='skipped' classname='Kubernetes e2e suite'",
        1,
    )
    again = ingest(respelled, received_at=UPLOAD)
    assert again.content_id == plain.content_id and again.near_id == plain.near_id
    slower = document.replace(b'time="0"', b'time="0.5"', 1)
    assert ingest(slower, received_at=UPLOAD).content_id != plain.content_id
    scan = archives.read(archives.open_source(document, Limits()), Limits(), Deadline(60)).scan
    assert scan.count == 7201 and scan.timestamps == ["2024-05-01T14:20:30"]
    assert scan.properties["DryRun"] == "false"


# --- 8: refusals that help ----------------------------------------------------------------------


def test_a_refusal_lists_the_sctp_testcases_the_focus_and_the_commands():
    error = refused(rf.real(rf.V121), declared_kubernetes_version="1.21.1")
    assert error.status == 422
    found = error.details["sctp_testcases"]
    assert len(found) == 17 and {f["state"] for f in found} == {"not selected"}
    assert r"\[Conformance\]" in (error.details["focus"] or "")
    commands = error.details["commands"]
    assert commands["sonobuoy"].startswith("sonobuoy run") and "--e2e-focus" in commands["sonobuoy"]
    assert commands["hydrophone"].startswith("hydrophone --focus")
    assert "[Disruptive]" in error.message  # v1.21's connectivity tests are [Disruptive]
    assert "17 SCTP testcase(s) found" in error.message


def test_a_file_without_any_sctp_test_gets_another_refusal():
    error = refused(junit_v2([("[sig-node] Pods should be submitted and removed", "passed")]))
    assert error.status == 422 and "no SCTP testcase at all" in error.message
    assert error.details["sctp_testcases"] == []
    assert len(error.details["absent"]) == 8


def test_the_conformance_focus_of_the_real_v130_file_is_named():
    error = refused(real_v130())
    assert error.details["focus"] == r"\[Conformance\]"
    assert "13 SCTP testcase(s) found" in error.message


def test_a_big_clusters_pods_file_is_scanned_not_held_whole():
    files = rf.members(rf.real(rf.V121))
    path = "resources/ns/kube-system/core_v1_pods.json"
    files[path] = json.dumps(json.loads(files[path]) * 200, sort_keys=True).encode()
    del files["resources/ns/kube-system/apps_v1_daemonsets.json"]
    assert len(files[path]) > 4 * 1024 * 1024
    report = ingest(rf.repack(files), check_evidence=False)
    assert report.cni_detected == "kindnet"
    assert report.provenance["plugin"]["source"] == "from pods of DaemonSet kube-system/kindnet"
