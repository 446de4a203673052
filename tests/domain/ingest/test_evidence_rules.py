"""Issue 10 item 8 at the ingest level: what a file must show to be evidence, and what it says.

Tolerant names, not_run vs skipped, the run time read from the file, the emulated mark,
and a Sonobuoy tarball whose kube-proxy logs or cluster resources contradict the declared
proxier or plugin. The HTTP side of the same rules is in tests/web/api/test_submissions.py and
tests/domain/test_submissions_policy.py.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import time
from datetime import UTC, datetime

import pytest

from dashboard.domain.ingest import IngestError, Limits, ingest
from dashboard.domain.ingest.upstream_names import catalog_key, normalise

from .builders import e2e_log, junit_v1, junit_v2, real_v130, tar_gz, with_sctp_status

POD_SERVICE = "[sig-network] Networking Granular Checks: Services should function for pod-Service: sctp [Feature:SCTPConnectivity]"
UPLOAD = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)

# Names as OpenShift's conformance suite reports the upstream SCTP tests: the upstream text
# with [Suite:openshift/conformance/parallel] [Suite:k8s] (or [Serial]) appended, and its
# own [Skipped:…] annotations between the tags.
OPENSHIFT = {
    "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: sctp [LinuxOnly] [Feature:SCTPConnectivity] [Suite:openshift/conformance/parallel] [Suite:k8s]": "pod-to-pod",
    "[sig-network] Networking Granular Checks: Services should function for pod-Service: sctp [Feature:SCTPConnectivity] [Skipped:Network/OpenShiftSDN] [Suite:openshift/conformance/parallel] [Suite:k8s]": "pod-to-service",
    "[sig-network] Services should allow creating a basic SCTP service with pod and endpoints [LinuxOnly] [Serial] [Suite:openshift/conformance/serial] [Suite:k8s]": "declare-sctp-ports",
    "[sig-network] Netpol [LinuxOnly] NetworkPolicy between server and client using SCTP should support a 'default-deny-ingress' policy [Feature:NetworkPolicy] [Feature:SCTPConnectivity] [Suite:openshift/conformance/parallel] [Suite:k8s]": "netpol-allow-deny",
}
VARIANTS = {
    # tags in another order, and spaced differently
    "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: sctp [Feature:SCTPConnectivity][LinuxOnly]": "pod-to-pod",
    "[It]   [sig-network]  Networking Granular Checks: Services should function for node-Service:   sctp   [Feature:SCTPConnectivity]": "pod-to-service",
    "[Feature:SCTPConnectivity] [sig-network] Networking Granular Checks: Services should function for endpoint-Service: sctp": "pod-to-service",
    # the describe text: NetworkPolicy where upstream says Netpol, and the other way round
    "[sig-network] NetworkPolicy [Feature:SCTPConnectivity] [LinuxOnly] NetworkPolicy between server and client using SCTP should enforce policy based on Ports [Feature:NetworkPolicy]": "netpol-allow-deny",
    "[sig-network] Netpol [LinuxOnly] NetworkPolicy between server and client should not allow access by TCP when a policy specifies only SCTP [Feature:NetworkPolicy]": "netpol-sctp-blocks-tcp-udp",
}


@pytest.mark.parametrize("name, key", sorted({**OPENSHIFT, **VARIANTS}.items()))
def test_near_upstream_names_match_tolerantly(name, key):
    assert catalog_key(normalise(name)) == key
    report = ingest(junit_v2([(name, "passed")]))
    assert report.results[key].outcome == "passed"
    assert report.warnings == []


def test_an_openshift_run_maps_every_sctp_test_it_ran():
    report = ingest(junit_v2([(name, "passed") for name in OPENSHIFT]))
    assert {k for k, r in report.results.items() if r.outcome == "passed"} == set(
        OPENSHIFT.values()
    )


def test_an_sctp_name_that_still_matches_nothing_is_a_warning_naming_it():
    odd = "[sig-network] SCTP should survive a multi-homed association failover [Suite:k8s]"
    report = ingest(junit_v2([(POD_SERVICE, "passed"), (odd, "passed")]))
    assert report.warnings == [f"SCTP test not in the catalog mapping, ignored: {odd}"]


# --- not_run vs skipped -------------------------------------------------------------------


def test_ginkgo_v2_unselected_specs_are_not_run_and_in_spec_skips_are_skipped():
    report = ingest(
        junit_v2(
            [
                (POD_SERVICE, "passed"),
                (
                    "[sig-network] Networking Granular Checks: Pods should function for intra-pod communication: sctp [LinuxOnly] [Feature:SCTPConnectivity]",
                    "not_selected",
                ),
                (
                    "[sig-network] Networking should allow creating a Pod with an SCTP HostPort [LinuxOnly] [Serial]",
                    "skipped",
                ),
            ]
        )
    )
    assert report.results["pod-to-pod"].outcome == "not_run"
    assert "not selected" in report.results["pod-to-pod"].reasons[0]
    assert report.results["hostport-kubenet"].outcome == "skipped"
    assert report.results["hostport-kubenet"].reasons == ["not kubenet"]
    assert report.counts == {"passed": 1, "failed": 0, "skipped": 1, "not_run": 6}


def test_a_skip_recorded_only_in_the_text_is_an_in_spec_skip():
    document = junit_v2([(POD_SERVICE, "passed")]).replace(
        b"</testsuite>",
        b'<testcase name="[It] [sig-network] Networking should allow creating a Pod with an SCTP HostPort [LinuxOnly] [Serial]"'
        b' classname="Kubernetes e2e suite" status="skipped" time="0.1"><skipped message="skipped">'
        b"[SKIPPED] Requires at least 2 nodes (not 1)\nIn [BeforeEach] at: test/e2e/network/hostport.go:60"
        b"</skipped></testcase></testsuite>",
    )
    result = ingest(document).results["hostport-kubenet"]
    assert result.outcome == "skipped"
    assert result.reasons[0].startswith("Requires at least 2 nodes (not 1)")


def test_a_pending_spec_is_not_run():
    document = junit_v2(
        [
            (POD_SERVICE, "passed"),
            (
                "[sig-network] Networking should allow creating a Pod with an SCTP HostPort [LinuxOnly] [Serial]",
                "passed",
            ),
        ]
    )
    document = document.replace(
        b'SCTP HostPort [LinuxOnly] [Serial]" classname="Kubernetes e2e suite" status="passed"',
        b'SCTP HostPort [LinuxOnly] [Serial]" classname="Kubernetes e2e suite" status="pending"',
    )
    assert ingest(document).results["hostport-kubenet"].outcome == "not_run"


def test_a_ginkgo_v1_file_whose_sctp_tests_were_all_unselected_is_refused_422():
    with pytest.raises(IngestError) as caught:
        ingest(junit_v1([(POD_SERVICE, "not_selected"), ("[sig-node] x", "passed")]))
    assert caught.value.status == 422


def test_a_file_whose_sctp_tests_were_all_skipped_by_the_environment_is_refused_422():
    with pytest.raises(IngestError) as caught:
        ingest(with_sctp_status(real_v130(), "skipped"))
    assert caught.value.status == 422 and "no SCTP test ran" in caught.value.message


def test_a_file_with_no_sctp_test_at_all_is_refused_422():
    with pytest.raises(IngestError) as caught:
        ingest(junit_v2([("[sig-node] Pods should be submitted and removed", "passed")]))
    assert caught.value.status == 422


# --- run time -------------------------------------------------------------------------


def test_the_run_time_is_the_junit_testsuite_timestamp():
    report = ingest(
        junit_v2([(POD_SERVICE, "passed")], timestamp="2026-10-02T03:04:05"), received_at=UPLOAD
    )
    assert (report.run_at, report.run_at_source, report.run_at_from) == (
        datetime(2026, 10, 2, 3, 4, 5, tzinfo=UTC),
        "file",
        "JUnit testsuite timestamp",
    )


def test_the_run_time_with_an_offset_is_converted():
    report = ingest(junit_v2([(POD_SERVICE, "passed")], timestamp="2026-10-02T05:04:05+02:00"))
    assert report.run_at == datetime(2026, 10, 2, 3, 4, 5, tzinfo=UTC)


def _log_with_ginkgo_times() -> bytes:
    return e2e_log() + (
        b"  STEP: Creating a kubernetes client @ 09/14/26 11:22:33.456\n"
        b"  STEP: Building a namespace api object @ 09/14/26 11:22:34.001\n"
    )


def test_the_run_time_comes_from_e2e_log_when_the_junit_has_none():
    junit = junit_v2([(POD_SERVICE, "passed")], timestamp=None)
    report = ingest(
        tar_gz({"junit_01.xml": junit, "e2e.log": _log_with_ginkgo_times()}), received_at=UPLOAD
    )
    assert (report.run_at, report.run_at_source, report.run_at_from) == (
        datetime(2026, 9, 14, 11, 22, 33, tzinfo=UTC),
        "file",
        "e2e.log",
    )


def test_the_run_time_comes_from_sonobuoy_metadata_when_nothing_else_says():
    junit = junit_v2([(POD_SERVICE, "passed")], timestamp=None)
    run_log = (
        b'time="2026-08-30T06:07:08Z" level=info msg="Scanning plugins in ./plugins.d (pwd: /)"\n'
        b'time="2026-08-30T06:07:09Z" level=info msg="Starting server"\n'
    )
    tarball = tar_gz({"plugins/e2e/results/global/junit_01.xml": junit, "meta/run.log": run_log})
    report = ingest(tarball, received_at=UPLOAD)
    assert (report.run_at, report.run_at_from) == (
        datetime(2026, 8, 30, 6, 7, 8, tzinfo=UTC),
        "Sonobuoy meta/run.log",
    )


def test_an_archive_members_date_is_never_the_run_time():
    # Issue 21: a re-packed old run carries today's member dates; they prove nothing.
    junit = junit_v2([(POD_SERVICE, "passed")], timestamp=None)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("plugins/e2e/results/global/junit_01.xml")
        info.size, info.mtime = len(junit), datetime(2026, 7, 1, 12, tzinfo=UTC).timestamp()
        archive.addfile(info, io.BytesIO(junit))
    report = ingest(buffer.getvalue(), received_at=UPLOAD)
    assert (report.run_at, report.run_at_source) == (None, "")
    assert report.provenance["run_at"]["source"].startswith("not in the file")


def test_without_a_run_time_the_file_is_not_fresh_until_a_maintainer_dates_it():
    report = ingest(junit_v2([(POD_SERVICE, "passed")], timestamp=None), received_at=UPLOAD)
    assert (report.run_at, report.run_at_source) == (None, "")
    assert any("does not say when the e2e run happened" in w for w in report.warnings)


@pytest.mark.parametrize(
    "stamp, refused",
    [("2031-01-01T00:00:00", True), ("2026-12-01T08:11:00", True), ("2026-12-01T08:09:00", False)],
)
def test_a_run_time_more_than_ten_minutes_in_the_future_is_refused(stamp, refused):
    document = junit_v2([(POD_SERVICE, "passed")], timestamp=stamp)
    if not refused:
        assert ingest(document, received_at=UPLOAD).run_at_source == "file"
        return
    with pytest.raises(IngestError) as caught:
        ingest(document, received_at=UPLOAD)
    assert caught.value.status == 422 and "in the future" in caught.value.message


# --- the emulated mark ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, emulated", [("true", True), ("True", True), ("false", False), ("yes", False)]
)
def test_the_emulated_property_marks_the_submission(value, emulated):
    report = ingest(junit_v2([(POD_SERVICE, "passed")], properties={"emulated": value}))
    assert report.emulated is emulated


def test_a_file_without_the_property_is_not_emulated():
    assert ingest(junit_v2([(POD_SERVICE, "passed")])).emulated is False


# --- Sonobuoy: proxier and CNI ------------------------------------------------------------

KUBE_PROXY = "podlogs/kube-system/kube-proxy-7xk2p/logs/kube-proxy.txt"
PROXY_LOG = (
    'I1130 09:12:01.123456       1 server_linux.go:66] "Using {mode} proxy"\n'
    'I1130 09:12:01.123999       1 server_linux.go:69] "Using {mode} Proxier"\n'
)


def sonobuoy(extra: dict[str, bytes]) -> bytes:
    return tar_gz(
        {
            "plugins/e2e/results/global/junit_01.xml": junit_v2([(POD_SERVICE, "passed")]),
            "plugins/e2e/results/global/e2e.log": e2e_log(passed=1),
            **extra,
        }
    )


@pytest.mark.parametrize("mode", ["ipvs", "nftables"])
def test_kube_proxy_logs_showing_another_proxier_refuse_the_tarball(mode):
    tarball = sonobuoy({KUBE_PROXY: PROXY_LOG.format(mode=mode).encode()})
    with pytest.raises(IngestError) as caught:
        ingest(tarball, declared_proxier="iptables", declared_plugin="calico")
    assert caught.value.status == 422
    assert (
        f"the {mode} proxier" in caught.value.message
        and "declares iptables" in caught.value.message
    )


def test_kube_proxy_logs_showing_the_declared_proxier_are_recorded():
    tarball = sonobuoy({KUBE_PROXY: PROXY_LOG.format(mode="ipvs").encode()})
    report = ingest(tarball, declared_proxier="ipvs", declared_plugin="calico")
    assert report.proxier_detected == "ipvs" and report.to_dict()["proxier_detected"] == "ipvs"


DAEMONSETS = b'{"apiVersion": "v1", "items": [{"kind": "DaemonSet", "metadata": {"name": "%s", "namespace": "kube-system"}}]}'


@pytest.mark.parametrize(
    "members",
    [
        {"resources/ns/kube-system/daemonsets.json": DAEMONSETS % b"cilium"},
        {
            "podlogs/kube-system/cilium-9fj2x/logs/cilium-agent.txt": b'level=info msg="Cilium 1.16.1"\n'
        },
    ],
    ids=["cluster-resources", "pod-logs"],
)
def test_a_tarball_showing_another_cni_than_the_declared_plugin_is_refused(members):
    with pytest.raises(IngestError) as caught:
        ingest(sonobuoy(members), declared_proxier="iptables", declared_plugin="calico")
    assert caught.value.status == 422
    assert "cilium" in caught.value.message and "calico" in caught.value.message


def test_a_tarball_showing_the_declared_cni_is_recorded():
    members = {
        "resources/ns/calico-system/daemonsets.json": DAEMONSETS % b"calico-node",
        "podlogs/calico-system/calico-node-x7k2q/logs/calico-node.txt": b"Calico node started\n",
    }
    report = ingest(sonobuoy(members), declared_proxier="iptables", declared_plugin="calico")
    assert report.cni_detected == "calico"


# --- warnings and names: bounded ----------------------------------------------------------


def test_warnings_are_deduplicated_capped_and_cut():
    odd = [(f"[sig-network] SCTP unknown test {i} " + "x" * 900, "passed") for i in range(500)]
    document = junit_v2([(POD_SERVICE, "passed"), *odd, *odd])
    report = ingest(document)
    limits = Limits()
    assert len(report.warnings) == limits.max_warnings + 1
    assert all(len(w) <= limits.max_warning_chars for w in report.warnings)
    assert report.warnings[-1] == f"… and {500 - limits.max_warnings} more warnings"


def test_an_overlong_name_is_cut_with_one_warning():
    long_names = [(POD_SERVICE + " " + "[Tag]" * 3000 + str(i), "passed") for i in range(50)]
    report = ingest(junit_v2([(POD_SERVICE, "passed"), *long_names]))
    cut = [w for w in report.warnings if "were cut" in w]
    assert cut == [
        "50 testcase name(s) longer than 1000 characters were cut to that length before matching"
    ]


@pytest.mark.parametrize("size", [64 * 1024, 512 * 1024])
def test_the_label_list_attack_name_is_linear(size):
    # Issue 12 finding 1: "sctp [" and many ", " with no closing bracket was quadratic.
    name = "sctp [" + ", " * (size // 2)
    started = time.process_time()
    assert normalise(name).startswith("sctp [")
    assert time.process_time() - started < 0.5


def test_a_gzipped_junit_is_read_as_a_stream():
    report = ingest(gzip.compress(junit_v2([(POD_SERVICE, "passed")])))
    assert report.results["pod-to-service"].outcome == "passed"


@pytest.mark.parametrize(
    "recorded, refused",
    [
        ("calico", False),
        ("calico-node", False),
        ("cilium", True),
        ("kube-flannel-ds", True),
        ("kube-flannel", True),
        ("something-else", False),
        ("", False),
    ],
)
def test_the_cni_recorded_by_the_export_is_compared_by_plugin(recorded, refused):
    document = junit_v2([(POD_SERVICE, "passed")], properties={"cni_detected": recorded})
    if refused:
        with pytest.raises(IngestError) as caught:
            ingest(document, declared_plugin="calico")
        assert caught.value.status == 422
    else:
        ingest(document, declared_plugin="calico")


def test_a_container_name_is_not_a_cni():
    # canal runs calico's node agent as a container of its own DaemonSet, "canal".
    canal = (
        b'{"items": [{"kind": "DaemonSet", "metadata": {"name": "canal", "namespace": "kube-system"}, '
        b'"spec": {"template": {"spec": {"containers": [{"name": "calico-node"}, {"name": "kube-flannel"}]}}}}]}'
    )
    pods = b'{"items": [{"kind": "Pod", "metadata": {"name": "cilium-x2k9q", "namespace": "kube-system"}}]}'
    report = ingest(
        sonobuoy({"resources/ns/kube-system/daemonsets.json": canal}), declared_plugin="flannel"
    )
    # The shared CNI table (kernel.cni) reads the canal DaemonSet as flannel for the network
    # and Calico for policy: from the DaemonSet, not from its calico-node container.
    assert report.cni_detected == "calico,flannel"
    with pytest.raises(IngestError):
        ingest(sonobuoy({"resources/ns/kube-system/pods.json": pods}), declared_plugin="calico")
