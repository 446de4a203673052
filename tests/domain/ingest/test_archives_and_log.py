from __future__ import annotations

import json

import pytest

from dashboard.domain.ingest import IngestError, ingest
from dashboard.domain.ingest.e2elog import parse_e2e_log

from .builders import e2e_log, gzip_bytes, junit_v2, real_v130, tar_gz, with_sctp_status, zip_bytes

PASSED = with_sctp_status(real_v130(), "passed")
SERVERVERSION = json.dumps({"major": "1", "minor": "30", "gitVersion": "v1.30.2"}).encode()


def test_a_sonobuoy_tarball_with_global_results_is_read():
    data = tar_gz(
        {
            "meta/run.log": b"{}",
            "plugins/e2e/sonobuoy_results.yaml": b"name: e2e\n",
            "plugins/e2e/results/global/junit_01.xml": PASSED,
            "plugins/e2e/results/global/e2e.log": e2e_log(passed=402 + 13),
            "resources/cluster/Nodes.json": b"[]",
            "serverversion.json": SERVERVERSION,
        }
    )
    report = ingest(data, declared_kubernetes_version="1.30.2")
    assert report.kind == "sonobuoy"
    assert report.results["pod-to-pod"].outcome == "passed"
    assert report.detected_kubernetes_version == "v1.30.2"
    assert report.e2e_summary is not None and report.e2e_summary["passed"] == 415
    assert report.warnings == []
    assert report.release == "v1.30"


def test_a_legacy_sonobuoy_layout_and_serverversion_json_are_read():
    data = tar_gz(
        {
            "plugins/e2e/results/junit_01.xml": PASSED,
            "serverversion.json": SERVERVERSION,
        }
    )
    report = ingest(data)
    assert report.kind == "sonobuoy"
    assert report.detected_kubernetes_version == "v1.30.2"
    assert report.e2e_summary is None


def test_several_junit_files_of_parallel_nodes_are_merged():
    names = [
        "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: sctp [LinuxOnly][Feature:SCTPConnectivity]",
        "[sig-network] Networking Granular Checks: Services should function for pod-Service: sctp [Feature:SCTPConnectivity]",
    ]
    data = tar_gz(
        {
            "plugins/e2e/results/global/junit_01.xml": junit_v2(
                [(names[0], "passed"), (names[1], "skipped")]
            ),
            "plugins/e2e/results/global/junit_02.xml": junit_v2([(names[1], "passed")]),
            "plugins/e2e/results/global/junit_03.xml": junit_v2([(names[0], "failed")]),
        }
    )
    report = ingest(data)
    assert report.testcase_count == 4
    assert report.results["pod-to-service"].outcome == "passed"
    assert report.results["pod-to-pod"].outcome == "failed"


@pytest.mark.parametrize("top", ["", "hydrophone-results/"])
def test_a_hydrophone_tarball_is_read_at_the_top_or_in_one_directory(top):
    data = tar_gz({"junit_01.xml": PASSED, "e2e.log": e2e_log(passed=415)}, top=top)
    report = ingest(data, declared_kubernetes_version="v1.30")
    assert report.kind == "hydrophone-tar"
    assert report.results["netpol-allow-deny"].outcome == "passed"
    assert report.detected_kubernetes_version == "v1.30.2"


@pytest.mark.parametrize("top", ["", "out/"])
def test_a_hydrophone_zip_is_read(top):
    data = zip_bytes({f"{top}junit_01.xml": PASSED, f"{top}e2e.log": e2e_log(passed=415)})
    report = ingest(data)
    assert report.kind == "hydrophone-zip"
    assert report.results["pod-to-service"].outcome == "passed"
    assert report.e2e_summary == {
        "ran": 415,
        "total": 7197,
        "seconds": 6096.539,
        "success": True,
        "passed": 415,
        "failed": 0,
        "flaked": 0,
        "pending": 0,
        "skipped": 6782,
    }


def test_a_gzipped_junit_file_is_read():
    assert ingest(gzip_bytes(PASSED)).results["pod-to-pod"].outcome == "passed"


def test_detection_uses_content_not_names():
    # A JUnit named like a log and a log named like a JUnit inside a zip.
    data = zip_bytes({"junit_01.xml": b"this is not xml", "e2e.log": PASSED})
    with pytest.raises(IngestError) as caught:
        ingest(data)
    assert caught.value.status == 400


def test_an_archive_without_junit_is_refused():
    with pytest.raises(IngestError, match="no e2e JUnit"):
        ingest(tar_gz({"README.md": b"hello", "deep/down/there/junit_01.xml": PASSED}))


def test_junit_files_in_two_directories_are_refused():
    with pytest.raises(IngestError, match="several directories"):
        ingest(tar_gz({"a/junit_01.xml": PASSED, "b/junit_01.xml": PASSED}))


def test_a_declared_version_of_another_minor_than_the_files_is_refused():
    # Issue 21: the release the file states is the release; a contradiction refuses it.
    data = tar_gz({"junit_01.xml": PASSED, "e2e.log": e2e_log(server="v1.29.4", passed=415)})
    with pytest.raises(IngestError) as caught:
        ingest(data, declared_kubernetes_version="1.30.1")
    assert caught.value.status == 422
    assert "v1.29.4" in caught.value.message and "1.30.1" in caught.value.message
    report = ingest(data, declared_kubernetes_version="1.29.4")
    assert report.release == "v1.29" and report.provenance["release"] == {
        "value": "v1.29.4",
        "source": "from e2e.log (server version)",
    }


def test_a_summary_that_disagrees_with_the_junit_is_a_warning():
    data = tar_gz({"junit_01.xml": PASSED, "e2e.log": e2e_log(passed=400, failed=2)})
    report = ingest(data, declared_kubernetes_version="1.30")
    assert report.warnings == [
        "e2e.log reports 400 passed specs but the JUnit has 415",
        "e2e.log reports 2 failed specs but the JUnit has 0",
    ]


@pytest.mark.parametrize(
    ("line", "version"),
    [
        ("May  1 14:20:30.124: INFO: kube-apiserver version: v1.30.2", "v1.30.2"),
        (
            "I0501 14:20:30.124  20 util.go:1] Kube-apiserver version: v1.21.14+k3s1",
            "v1.21.14+k3s1",
        ),
        ("Kubernetes server version: v1.27.3-eks-a5565ad", "v1.27.3-eks-a5565ad"),
        (
            'Server Version: version.Info{Major:"1", Minor:"19", GitVersion:"v1.19.16", GitCommit:"e3"}',
            "v1.19.16",
        ),
        ("Server Version: v1.33.1", "v1.33.1"),
    ],
)
def test_server_version_forms_in_e2e_log(line, version):
    assert parse_e2e_log(f"noise\n{line}\nmore noise\n".encode()).server_version == version


def test_the_last_ginkgo_summary_wins_and_flakes_are_read():
    log = parse_e2e_log(
        b"Ran 1 of 2 Specs in 1.0 seconds\nSUCCESS! -- 1 Passed | 0 Failed | 0 Pending | 1 Skipped\n"
        b"Ran 20 of 7000 Specs in 99.5 seconds\n"
        b"FAIL! - Interrupted by Other Ginkgo Process -- 17 Passed | 2 Failed | 1 Flaked | 0 Pending | 6980 Skipped\n"
    )
    assert log.summary == {
        "ran": 20,
        "total": 7000,
        "seconds": 99.5,
        "success": False,
        "passed": 17,
        "failed": 2,
        "flaked": 1,
        "pending": 0,
        "skipped": 6980,
    }
    assert log.server_version is None


def test_a_log_without_summary_has_none():
    assert parse_e2e_log(b"nothing here").summary is None
