from __future__ import annotations

import io

import pytest

from dashboard.domain.ingest import IngestError, ingest
from dashboard.domain.ingest.upstream_names import RELEASE_NAMES

from .builders import junit_v1, junit_v2, real_v130, with_sctp_status

CONNECTIVITY_AND_BASIC = [
    "declare-sctp-ports",
    "hostport-kubenet",
    "netpol-sctp-blocks-tcp-udp",
    "pod-to-pod",
    "pod-to-service",
    "netpol-allow-deny",
]


def test_the_real_v1_30_file_has_every_sctp_test_not_selected_so_not_run():
    # ginkgo v2 writes a spec its focus did not select as <skipped message="skipped">:
    # the run never tried it, which is not_run, not skipped (the environment could not).
    report = ingest(real_v130(), check_evidence=False)
    assert report.kind == "junit"
    assert report.testcase_count == 7201
    assert report.junit_totals == {"passed": 406, "failed": 0, "skipped": 6795}
    for key in CONNECTIVITY_AND_BASIC:
        assert report.results[key].outcome == "not_run", key
        assert report.results[key].reasons == [
            "not selected by the run's focus/skip (ginkgo recorded no reason)"
        ]
    assert report.results["pod-to-loadbalancer"].outcome == "not_run"
    assert report.results["service-iptables-rules"].outcome == "not_run"
    assert report.counts == {"passed": 0, "failed": 0, "skipped": 0, "not_run": 8}
    assert report.run_at.isoformat() == "2024-05-01T14:20:30+00:00"
    assert report.run_at_source == "file"
    assert sum(len(r.upstream_names) for r in report.results.values()) == 13
    assert len(report.results["pod-to-service"].upstream_names) == 4
    assert report.warnings == []
    assert report.release == "v1.29-v1.37"


def test_the_real_v1_30_file_is_no_evidence_and_refused_with_422():
    with pytest.raises(IngestError) as caught:
        ingest(real_v130())
    assert caught.value.status == 422
    assert "no SCTP test ran" in caught.value.message


def test_the_real_file_read_from_a_stream_gives_the_same_report():
    assert (
        ingest(io.BytesIO(real_v130()), check_evidence=False).to_dict()
        == ingest(real_v130(), check_evidence=False).to_dict()
    )


def test_names_are_reported_decoded_and_without_it():
    names = (
        ingest(real_v130(), check_evidence=False)
        .results["netpol-sctp-blocks-tcp-udp"]
        .upstream_names
    )
    assert any("'protocol: SCTP' as 'protocol: TCP'" in name for name in names)
    assert not any(name.startswith("[It]") or "&#39;" in name for name in names)


def test_sctp_tests_passed_make_the_keys_passed():
    report = ingest(with_sctp_status(real_v130(), "passed"))
    for key in CONNECTIVITY_AND_BASIC:
        assert report.results[key].outcome == "passed", key
    assert report.results["pod-to-loadbalancer"].outcome == "not_run"
    assert report.junit_totals["passed"] == 406 + 13
    assert report.qualifying(True)[0] is True


@pytest.mark.parametrize("status", ["failed", "timedout", "aborted", "panicked", "interrupted"])
def test_a_failing_status_of_any_kind_makes_the_keys_failed_with_the_reason(status):
    report = ingest(with_sctp_status(real_v130(), status))
    for key in CONNECTIVITY_AND_BASIC:
        assert report.results[key].outcome == "failed", key
        assert report.results[key].reasons[0].startswith(status)
        assert "connection refused" in report.results[key].reasons[0]
    assert report.qualifying(True)[0] is False


def test_one_failed_upstream_test_fails_the_catalog_test_even_if_others_passed():
    document = with_sctp_status(real_v130(), "passed")
    document = document.replace(
        b'endpoint-Service: sctp [Feature:SCTPConnectivity]" classname="Kubernetes e2e suite" status="passed" time="12.5"></testcase>',
        b'endpoint-Service: sctp [Feature:SCTPConnectivity]" classname="Kubernetes e2e suite" status="timedout" time="900"><failure type="timedout">timed out</failure></testcase>',
    )
    report = ingest(document)
    assert report.results["pod-to-service"].outcome == "failed"
    assert report.results["pod-to-service"].reasons == ["timedout: timed out"]
    assert report.results["pod-to-pod"].outcome == "passed"


def test_one_passed_and_others_skipped_is_passed():
    document = with_sctp_status(real_v130(), "passed", only="intra-pod")
    report = ingest(document)
    assert report.results["pod-to-pod"].outcome == "passed"
    assert report.results["pod-to-service"].outcome == "not_run"  # not selected


def test_a_skip_reason_given_to_ginkgo_is_kept():
    # ginkgo v2's in-spec Skip(reason): <skipped message="skipped - reason">: skipped, with it.
    report = ingest(with_sctp_status(real_v130(), "skipped"), check_evidence=False)
    assert report.results["pod-to-pod"].outcome == "skipped"
    assert report.results["pod-to-pod"].reasons == ["Only supported for node OS distro [linux]"]


@pytest.mark.parametrize("release", sorted(RELEASE_NAMES))
def test_a_run_with_another_releases_names_maps_every_test(release):
    names = RELEASE_NAMES[release]
    report = ingest(junit_v2([(name, "passed") for name in names]))
    for key in set(names.values()):
        assert report.results[key].outcome == "passed"
        assert set(report.results[key].upstream_names) == {n for n, k in names.items() if k == key}
    assert report.warnings == []
    assert report.release is not None and (
        report.release == release
        or report.release.split("-")[0] <= release <= report.release.split("-")[-1]
    )


def test_a_ginkgo_v1_file_is_read_from_child_elements():
    names = list(RELEASE_NAMES["v1.19"])
    document = junit_v1(
        [
            (names[0], "passed"),
            (names[1], "skipped"),
            (names[2], "failed"),
            ("[sig-storage] something unrelated", "passed"),
            (names[3], "not_selected"),
        ]
    )
    report = ingest(document)
    assert report.results["declare-sctp-ports"].outcome == "passed"
    assert report.results["hostport-kubenet"].outcome == "skipped"
    assert "Not kubenet" in report.results["hostport-kubenet"].reasons[0]
    assert report.results[RELEASE_NAMES["v1.19"][names[3]]].outcome == "not_run"
    assert report.results["service-iptables-rules"].outcome == "failed"
    assert "Failed to connect" in report.results["service-iptables-rules"].reasons[0]
    assert report.testcase_count == 5
    assert report.junit_totals == {"passed": 2, "failed": 1, "skipped": 2}


def test_ginkgo_v2_names_without_it_and_with_labels_still_map():
    name = "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: sctp [LinuxOnly] [Feature:SCTPConnectivity]"
    report = ingest(
        junit_v2([(name + " [Feature:SCTPConnectivity, LinuxOnly]", "passed")], with_it=False)
    )
    assert report.results["pod-to-pod"].outcome == "passed"
    assert report.results["pod-to-pod"].upstream_names == [name]


def test_an_sctp_test_that_maps_to_nothing_is_a_warning():
    report = ingest(
        junit_v2([("[sig-network] SCTP should do something new with multihoming", "passed")]),
        check_evidence=False,
    )
    assert report.warnings == [
        "SCTP test not in the catalog mapping, ignored: [sig-network] SCTP should do something new with multihoming"
    ]
    assert all(r.outcome == "not_run" for r in report.results.values())


def test_the_report_is_json_serialisable():
    import json

    data = json.loads(json.dumps(ingest(real_v130(), check_evidence=False).to_dict()))
    assert set(data["results"]) == {
        "declare-sctp-ports",
        "hostport-kubenet",
        "service-iptables-rules",
        "netpol-sctp-blocks-tcp-udp",
        "pod-to-pod",
        "pod-to-service",
        "pod-to-loadbalancer",
        "netpol-allow-deny",
    }
    assert data["results"]["pod-to-pod"]["outcome"] == "not_run"
