"""/api/v1/submissions/: posting a result file, the list and its filters, and the review calls, through HTTP with tokens."""

from __future__ import annotations

import hashlib
import tarfile

import pytest

from dashboard.domain.models import AuditEvent, Submission
from tests import factories
from tests.conftest import auth
from tests.domain.ingest import builders as b
from tests.domain.ingest.test_hostile_input import BILLION_LAUGHS, EXTERNAL_ENTITY, _zeros_gzip
from tests.uploads import SCTP, connectivity_junit, post

pytestmark = pytest.mark.django_db


def test_a_vendor_submits_the_real_v1_30_junit_and_gets_the_contract_answer(client, vendor_token):
    # The real file with its 13 SCTP testcases rewritten as ginkgo v2 writes passed specs.
    data = b.with_sctp_status(b.real_v130(), "passed")
    resp = post(client, vendor_token, data)
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["status"] == "pending_review"
    assert body["sha256"] == hashlib.sha256(data).hexdigest()
    # v1.30 has no upstream test for service-iptables-rules, and none exists for the load balancer
    assert body["counts"] == {"passed": 6, "failed": 0, "skipped": 0, "not_run": 2}
    assert body["results"]["service-iptables-rules"]["outcome"] == "not_run"
    assert body["results"]["pod-to-service"]["outcome"] == "passed"
    assert len(body["results"]["pod-to-service"]["upstream_names"]) == 4
    lb = body["results"]["pod-to-loadbalancer"]
    assert (lb["outcome"], lb["upstream_names"]) == ("not_run", [])
    assert "no upstream e2e test" in lb["reasons"][0]
    assert body["warnings"] == [] and "warnings" not in body["report"]
    assert (body["run_at"], body["run_at_source"], body["emulated"]) == (
        "2024-05-01T14:20:30+00:00",
        "file",
        False,
    )
    sub = Submission.objects.get(pk=body["id"])
    assert sub.run_at.isoformat() == "2024-05-01T14:20:30+00:00" and sub.run_at_source == "file"
    assert bytes(sub.content) == data and sub.size == len(data) and sub.kind == "junit"
    assert "Calico vendor" in sub.uploaded_by
    assert AuditEvent.objects.filter(action="submission.create").count() == 1
    assert client.get(f"/api/v1/submissions/{sub.id}/").json()["sha256"] == body["sha256"]


def test_the_list_filters_by_plugin_and_status_newest_first(
    client, vendor_token, other_vendor_token
):
    a = post(client, vendor_token, connectivity_junit(salt="a")).json()["id"]
    c = post(client, vendor_token, connectivity_junit(salt="c")).json()["id"]
    post(client, other_vendor_token, connectivity_junit(salt="b"), plugin="cilium")
    page = client.get("/api/v1/submissions/?plugin=calico").json()
    assert [s["id"] for s in page["results"]] == [c, a]
    assert (page["count"], page["next"], page["previous"]) == (2, None, None)
    assert client.get("/api/v1/submissions/?status=verified").json()["results"] == []
    assert client.get("/api/v1/submissions/?status=bogus").status_code == 400


def test_the_same_file_twice_for_a_plugin_is_a_409_naming_the_first(client, vendor_token):
    data = connectivity_junit()
    first = post(client, vendor_token, data).json()["id"]
    resp = post(client, vendor_token, data, plugin_version="3.29.0")
    assert resp.status_code == 409
    assert str(first) in resp.json()["error"] and resp.json()["existing_id"] == first
    assert Submission.objects.count() == 1


def sonobuoy(junit: bytes) -> bytes:
    return b.tar_gz(
        {
            "plugins/e2e/results/global/junit_01.xml": junit,
            "plugins/e2e/results/global/e2e.log": b.e2e_log(server="v1.30.2", passed=5),
            "serverversion.json": b'{"major": "1", "minor": "30", "gitVersion": "v1.30.2"}',
        }
    )


@pytest.mark.parametrize(
    "name, data, kind",
    [
        ("202611291200_sonobuoy_0b1c.tar.gz", lambda: sonobuoy(connectivity_junit()), "sonobuoy"),
        (
            "results.zip",
            lambda: b.zip_bytes(
                {"out/junit_01.xml": connectivity_junit(), "out/e2e.log": b.e2e_log()}
            ),
            "hydrophone-zip",
        ),
        (
            "whatever.bin",
            lambda: b.tar_gz({"junit_01.xml": connectivity_junit(), "e2e.log": b.e2e_log()}),
            "hydrophone-tar",
        ),
    ],
)
def test_every_container_is_accepted_and_detected_from_content(
    client, vendor_token, name, data, kind
):
    # The archives' e2e.log says v1.30.2: the release is the file's, so it is declared so.
    resp = post(client, vendor_token, data(), name=name, kubernetes_version="1.30.2")
    assert resp.status_code == 201, resp.content
    assert resp.json()["kind"] == kind
    assert resp.json()["results"]["pod-to-service"]["outcome"] == "passed"


def tar_with_member(name: str, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.type = kind
    if kind == tarfile.SYMTYPE:
        info.linkname = "/etc/passwd"
    return b.tar_gz_with(info)


HOSTILE = {
    "malformed xml": (b"<testsuites><testsuite><testcase name='x'>", 400),
    "entity expansion": (BILLION_LAUGHS, 400),
    "external entity": (EXTERNAL_ENTITY, 400),
    "absolute path": (tar_with_member("/etc/cron.d/x"), 400),
    "dot dot": (tar_with_member("../../x"), 400),
    "symlink": (tar_with_member("junit_01.xml", tarfile.SYMTYPE), 400),
    "device": (tar_with_member("dev", tarfile.CHRTYPE), 400),
    "no testcases": (
        b'<?xml version="1.0"?><testsuites><testsuite name="x"></testsuite></testsuites>',
        400,
    ),
    "not a result file": (b"\x89PNG\r\n\x1a\n not a result", 400),
    "empty file": (b"", 400),
}


@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_hostile_and_broken_files_get_a_clear_json_error_and_store_nothing(
    client, vendor_token, what
):
    data, status = HOSTILE[what]
    resp = post(client, vendor_token, data)
    assert resp.status_code == status, resp.content
    assert resp["Content-Type"] == "application/json" and resp.json()["error"]
    assert Submission.objects.count() == 0 and not AuditEvent.objects.exists()


def test_a_decompression_bomb_is_refused_and_nothing_is_stored(client, vendor_token):
    resp = post(client, vendor_token, _zeros_gzip(3))
    assert resp.status_code == 400, resp.content
    assert Submission.objects.count() == 0


def test_too_many_members_are_refused(client, vendor_token):
    members = {f"f{i}.txt": b"" for i in range(10_050)}
    resp = post(client, vendor_token, b.tar_gz(members))
    assert resp.status_code == 400 and "members" in resp.json()["error"]
    assert Submission.objects.count() == 0


def test_a_zip_bomb_is_refused(client, vendor_token):
    resp = post(
        client, vendor_token, b.zip_bytes({"junit_01.xml": b"<" + b" " * (200 * 1024 * 1024)})
    )
    assert resp.status_code == 400
    assert Submission.objects.count() == 0


def test_a_file_over_the_limit_is_413(client, vendor_token, settings):
    settings.SUBMISSION_MAX_BYTES = 1000
    resp = post(client, vendor_token, connectivity_junit() + b" " * 2000)
    assert resp.status_code == 413 and "limit" in resp.json()["error"]
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    "fields, status, words",
    [
        ({"plugin": "nope"}, 400, "unknown plugin"),
        ({"plugin": "cilium"}, 403, "may not submit"),
        ({"proxier": "userspace"}, 400, "unknown proxier"),
        ({"kubernetes_version": "latest"}, 400, "not a version"),
        ({"plugin_version": ""}, 400, "missing field: plugin_version"),
    ],
)
def test_bad_fields_are_refused_and_store_nothing(
    client, vendor_token, other_vendor_token, fields, status, words
):
    resp = post(client, vendor_token, connectivity_junit(), **fields)
    assert resp.status_code == status and words in resp.json()["error"]
    assert Submission.objects.count() == 0


def test_a_missing_file_is_a_400(client, vendor_token):
    resp = post(client, vendor_token, None)
    assert resp.status_code == 400 and "file" in resp.json()["error"]


def test_a_maintainer_token_cannot_submit(client, maintainer_token):
    assert post(client, maintainer_token, connectivity_junit()).status_code == 403


def test_maintainers_verify_and_reject_with_a_reason(client, vendor_token, maintainer_token):
    a = post(client, vendor_token, connectivity_junit(salt="1")).json()["id"]
    c = post(client, vendor_token, connectivity_junit(salt="2")).json()["id"]
    resp = client.post(
        f"/api/v1/submissions/{a}/verify",
        {"reason": "looks right"},
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert resp.status_code == 200 and resp.json()["status"] == "verified"
    resp = client.post(
        f"/api/v1/submissions/{c}/reject",
        {},
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert resp.status_code == 400 and "reason" in resp.json()["error"]
    resp = client.post(
        f"/api/v1/submissions/{c}/reject",
        {"reason": "wrong cluster"},
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert (
        resp.json()["status"] == "rejected" and resp.json()["review"]["reason"] == "wrong cluster"
    )
    assert (
        client.post(
            f"/api/v1/submissions/{a}/reject",
            {"reason": "x"},
            content_type="application/json",
            **auth(vendor_token),
        ).status_code
        == 403
    )
    assert Submission.objects.get(pk=a).status == "verified"
    assert set(AuditEvent.objects.values_list("action", flat=True)) >= {
        "submission.verify",
        "submission.reject",
    }


def verdicts(client) -> dict[str, str]:
    data = client.get("/api/v1/readiness/").json()
    return {c["key"]: c["status"] for t in data["transitions"] for c in t["criteria"]}


def test_submissions_move_the_verdicts_only_once_verified(client, maintainer_token):
    tokens = {slug: factories.issued_token(slug) for slug in ("calico", "cilium", "antrea")}
    ids = {
        slug: post(
            client,
            tokens[slug],
            connectivity_junit(salt=slug),
            plugin=slug,
            proxier="ipvs" if slug == "cilium" else "iptables",
        ).json()["id"]
        for slug in tokens
    }
    assert verdicts(client)["two-out-of-tree-plugins"] == "unmet"  # all pending

    def verify(slug: str) -> None:
        client.post(
            f"/api/v1/submissions/{ids[slug]}/verify",
            {},
            content_type="application/json",
            **auth(maintainer_token),
        )

    verify("calico")
    assert verdicts(client)["two-out-of-tree-plugins"] == "unmet"
    client.post(
        f"/api/v1/submissions/{ids['antrea']}/reject",
        {"reason": "no"},
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert verdicts(client)["two-out-of-tree-plugins"] == "unmet"
    verify("cilium")
    v = verdicts(client)
    assert v["two-out-of-tree-plugins"] == "met"
    assert v["iptables-and-ipvs"] == "met"
    # a newer verified cilium file whose pod-to-service failed puts the criterion at risk
    failing = b.junit_v2(
        [
            (SCTP["pod-to-service"], "failed"),
            (SCTP["pod-to-pod"], "passed"),
            (SCTP["netpol-allow-deny"], "passed"),
        ]
    )
    ids["cilium"] = post(client, tokens["cilium"], failing, plugin="cilium").json()["id"]
    assert verdicts(client)["two-out-of-tree-plugins"] == "met"  # pending: not counted yet
    verify("cilium")
    assert verdicts(client)["two-out-of-tree-plugins"] == "at_risk"


# --- issue 10 item 8: files that are no evidence, through the API --------------------------

KUBE_PROXY_LOG = b'I1130 09:12:01.123999       1 server_linux.go:69] "Using ipvs Proxier"\n'
CILIUM_DS = b'{"items": [{"kind": "DaemonSet", "metadata": {"name": "cilium", "namespace": "kube-system"}}]}'


def no_evidence(resp, words: str) -> None:
    assert resp.status_code == 422, resp.content
    assert words in resp.json()["error"]
    assert Submission.objects.count() == 0 and not AuditEvent.objects.exists()


def test_the_real_conformance_junit_with_no_sctp_test_selected_is_422(client, vendor_token):
    no_evidence(post(client, vendor_token, b.real_v130()), "no SCTP test ran")


def test_a_junit_whose_sctp_tests_were_all_skipped_is_422(client, vendor_token):
    no_evidence(
        post(client, vendor_token, b.with_sctp_status(b.real_v130(), "skipped")), "no SCTP test ran"
    )


def test_a_sonobuoy_tarball_whose_kube_proxy_ran_another_proxier_is_422(client, vendor_token):
    tarball = b.tar_gz(
        {
            "plugins/e2e/results/global/junit_01.xml": connectivity_junit(),
            "podlogs/kube-system/kube-proxy-4hx8s/logs/kube-proxy.txt": KUBE_PROXY_LOG,
        }
    )
    no_evidence(
        post(client, vendor_token, tarball, name="sonobuoy.tar.gz", proxier="iptables"),
        "ipvs proxier, but the submission declares iptables",
    )
    resp = post(client, vendor_token, tarball, name="sonobuoy.tar.gz", proxier="ipvs")
    assert resp.status_code == 201, resp.content
    assert resp.json()["report"]["proxier_detected"] == "ipvs"


def test_a_sonobuoy_tarball_showing_another_cni_is_422(client, vendor_token):
    tarball = b.tar_gz(
        {
            "plugins/e2e/results/global/junit_01.xml": connectivity_junit(),
            "resources/ns/kube-system/daemonsets.json": CILIUM_DS,
        }
    )
    no_evidence(
        post(client, vendor_token, tarball, name="sonobuoy.tar.gz"), "running cilium as its CNI"
    )


def test_unselected_tests_are_not_run_and_environment_skips_are_skipped(client, vendor_token):
    data = b.junit_v2(
        [
            (SCTP["pod-to-service"], "passed"),
            (SCTP["pod-to-pod"], "not_selected"),
            (SCTP["declare-sctp-ports"], "skipped"),
        ]
    )
    body = post(client, vendor_token, data).json()
    assert body["results"]["pod-to-pod"]["outcome"] == "not_run"
    assert body["results"]["declare-sctp-ports"]["outcome"] == "skipped"
    assert body["counts"] == {"passed": 1, "failed": 0, "skipped": 1, "not_run": 6}


def test_openshift_style_names_are_matched(client, vendor_token):
    name = (
        SCTP["pod-to-service"]
        + " [Skipped:Network/OpenShiftSDN] [Suite:openshift/conformance/parallel] "
        "[Suite:k8s]"
    )
    body = post(client, vendor_token, b.junit_v2([(name, "passed")])).json()
    assert body["results"]["pod-to-service"]["outcome"] == "passed" and body["warnings"] == []


@pytest.mark.parametrize(
    "members, expected",
    [
        (
            {
                "junit_01.xml": b.junit_v2([(SCTP["pod-to-service"], "passed")], timestamp=None),
                "e2e.log": b.e2e_log(passed=1)
                + b"STEP: Creating a kubernetes client @ 10/03/26 04:05:06.789\n",
            },
            "2026-10-03T04:05:06+00:00",
        ),
        (
            {
                "plugins/e2e/results/global/junit_01.xml": b.junit_v2(
                    [(SCTP["pod-to-service"], "passed")], timestamp=None
                ),
                "meta/run.log": b'time="2026-09-02T01:02:03Z" level=info msg="Starting server"\n',
            },
            "2026-09-02T01:02:03+00:00",
        ),
    ],
    ids=["e2e.log", "sonobuoy-meta"],
)
def test_the_run_time_is_read_from_the_archive(client, vendor_token, members, expected):
    body = post(
        client, vendor_token, b.tar_gz(members), name="results.tar.gz", kubernetes_version="1.30.2"
    ).json()
    assert (body["run_at"], body["run_at_source"]) == (expected, "file")
    assert Submission.objects.get(pk=body["id"]).run_at.isoformat() == expected


def test_a_file_without_a_run_time_is_not_fresh_until_a_maintainer_dates_it(client, vendor_token):
    body = post(
        client, vendor_token, b.junit_v2([(SCTP["pod-to-service"], "passed")], timestamp=None)
    ).json()
    sub = Submission.objects.get(pk=body["id"])
    assert sub.run_at is None and sub.run_at_source == "" and body["run_at"] is None
    assert any("until a maintainer enters the run date" in w for w in body["warnings"])


def test_the_submission_list_pages_keep_the_filters_and_accept_the_older_limit(client) -> None:
    subs = [factories.submission("calico", days_ago=i) for i in range(7)]  # subs[0] newest
    factories.submission("cilium")
    page = client.get("/api/v1/submissions/?plugin=calico&limit=3").json()
    assert set(page) == {"count", "next", "previous", "results"} and page["count"] == 7
    assert [s["id"] for s in page["results"]] == [s.id for s in subs[:3]]
    assert (
        "plugin=calico" in page["next"]
        and "page_size=3" in page["next"]
        and "limit" not in page["next"]
    )
    last = client.get("/api/v1/submissions/?plugin=calico&page_size=3&page=3").json()
    assert [s["id"] for s in last["results"]] == [subs[6].id] and last["next"] is None
    assert client.get("/api/v1/submissions/?page=9").json()["results"] == []  # past the end: empty
    # Far past the end (schemathesis found a 500: an OFFSET beyond what the database can hold).
    far = client.get("/api/v1/submissions/?page_size=100&page=2626745789035047485964288")
    assert far.status_code == 200 and far.json()["results"] == []


def test_the_list_filters_combine_and_refuse_an_unknown_status(client) -> None:
    factories.submission("calico")
    pending = factories.submission("calico", status="pending_review")
    factories.submission("cilium", status="pending_review")
    page = client.get("/api/v1/submissions/?plugin=calico&status=pending_review").json()
    assert [s["id"] for s in page["results"]] == [pending.id]
    refused = client.get("/api/v1/submissions/?status=bogus")
    assert refused.status_code == 400 and "status" in refused.json()["error"]
