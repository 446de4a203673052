"""Issue 21 through the API and the pages: one run counts once, whoever sends it; the
maintainer sees where every fact came from before verifying; one answer for `qualifying`.

Each test failed on the code before the fix.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.timezone import now

from dashboard.domain.catalog import Outcome
from dashboard.domain.ingest.export import run_to_junit
from dashboard.domain.models import ApiToken, AuditEvent, Run, Submission
from dashboard.domain.readiness import Context
from dashboard.domain.readiness.criteria import two_out_of_tree_plugins
from tests import factories as f
from tests.conftest import auth
from tests.domain.ingest import builders as b
from tests.domain.ingest import real_files as rf
from tests.uploads import SCTP

pytestmark = pytest.mark.django_db


def post(client, token, data: bytes, name: str = "junit_01.xml", **fields):
    form = {
        "plugin": "calico",
        "plugin_version": "3.28.0",
        "kubernetes_version": "1.30.2",
        "proxier": "iptables",
        **fields,
        "file": SimpleUploadedFile(name, data),
    }
    return client.post("/api/v1/submissions/", form, **auth(token))


def passing_v130() -> bytes:
    return b.with_sctp_status(b.real_v130(), "passed")


# --- 1: one run counted for two plugins ----------------------------------------------------


def test_the_same_run_sent_for_another_plugin_is_refused_naming_the_first(
    client, vendor_token, other_vendor_token
):
    first = post(client, vendor_token, passing_v130())
    assert first.status_code == 201, first.content
    again = post(client, other_vendor_token, passing_v130(), plugin="cilium")
    assert again.status_code == 409, again.content
    body = again.json()
    assert body["existing_id"] == first.json()["id"]
    assert body["existing"]["plugin"] == "calico" and body["existing"]["vendor"] == "Calico vendor"
    assert f"submission {first.json()['id']}" in body["error"]
    assert Submission.objects.count() == 1
    audit = AuditEvent.objects.get(action="submission.duplicate")
    assert audit.target == f"submission {first.json()['id']}"


@pytest.mark.parametrize(
    "wrap",
    [
        pytest.param(gzip.compress, id="gzipped"),
        pytest.param(lambda d: b.tar_gz({"junit_01.xml": d}), id="in-a-tarball"),
        pytest.param(lambda d: d.replace(b"\n", b"\r\n") + b"\n", id="bytes-changed"),
    ],
)
def test_the_same_run_in_another_container_is_the_same_run(
    client, vendor_token, other_vendor_token, wrap
):
    assert post(client, vendor_token, passing_v130()).status_code == 201
    resp = post(client, other_vendor_token, wrap(passing_v130()), name="r.tgz", plugin="cilium")
    assert resp.status_code == 409, resp.content


def test_a_near_duplicate_is_accepted_and_flagged_in_red_before_verifying(
    client, vendor_token, other_vendor_token, maintainer
):
    first = post(client, vendor_token, passing_v130()).json()
    edited = b.with_sctp_status(b.real_v130(), "failed")  # same timestamp and testcases
    resp = post(client, other_vendor_token, edited, plugin="cilium")
    assert resp.status_code == 201, resp.content
    assert resp.json()["report"]["near_duplicates"] == [first["id"]]
    client.force_login(maintainer)
    page = client.get(f"/submissions/{resp.json()['id']}/").content.decode()
    # In red: the warning card's class, whose colour the stylesheet sets (no inline styles).
    assert "Possibly the same run, edited" in page and "near-duplicates" in page
    css = (settings.BASE_DIR / "dashboard/web/static/css").glob("*.css")
    assert any(".card.near-duplicates { border-color:#b00020" in f.read_text() for f in css)
    assert page.index("Possibly the same run") < page.index("Verify")
    assert f'href="/submissions/{first["id"]}/"' in page


# --- the dashboard's own export ------------------------------------------------------------


FINISHED = datetime(2026, 11, 28, 17, 45, 12, 345000, tzinfo=UTC)


def _lab_run() -> Run:
    cluster = f.cluster(plugin_slug="calico", emulated=True, lab=True)
    run = f.run(cluster, finished=FINISHED)
    Run.objects.filter(pk=run.pk).update(emulated=True)
    run.refresh_from_db()
    return run


def _strip_source(document: bytes) -> bytes:
    for name in ("emulated", "source", "run_id", "run_url"):
        start = document.index(f'<property name="{name}"'.encode())
        end = document.index(b"</property>", start) + len(b"</property>")
        document = document[:start] + document[end:]
    return document


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda d: d, id="as-exported"),
        pytest.param(lambda d: _strip_source(d) + b" ", id="emulated-stripped-and-a-byte-added"),
        pytest.param(
            lambda d: _strip_source(d).replace(b'status="failed"', b'status="passed"'),
            id="outcomes-edited",
        ),
    ],
)
def test_the_dashboards_own_export_of_a_lab_run_is_refused_as_that_run(client, vendor_token, edit):
    run = _lab_run()
    run.results.filter(test_key="pod-to-service").update(outcome="failed", reason="refused")
    document = edit(client.get(f"/runs/{run.pk}/junit.xml").content)
    resp = post(
        client, vendor_token, document, name=f"run-{run.pk}.xml", kubernetes_version="1.34.2"
    )
    assert resp.status_code == 409, resp.content
    assert resp.json()["run"] == run.pk and f"run {run.pk}" in resp.json()["error"]
    assert Submission.objects.count() == 0


def test_an_export_of_another_second_is_not_taken_for_the_run(client, vendor_token):
    run = _lab_run()
    document = _strip_source(run_to_junit(run)).replace(b"17:45:12", b"17:45:19")
    resp = post(client, vendor_token, document, kubernetes_version="1.34.2")
    assert resp.status_code != 409, resp.content


# --- 6: one answer for qualifying ----------------------------------------------------------


def test_api_report_and_page_give_one_qualifying_answer_for_flannel(client):
    flannel = f.plugin("flannel", netpol=False)
    flannel.implements_network_policy = False
    flannel.save()
    _, token = ApiToken.issue(
        role=ApiToken.Role.VENDOR, vendor=f.vendor("Flannel vendor", ("flannel",))
    )
    resp = post(client, token, passing_v130(), plugin="flannel")
    assert resp.status_code == 201, resp.content
    body = resp.json()
    sub = Submission.objects.get(pk=body["id"])
    detail = client.get(f"/api/v1/submissions/{sub.pk}/").json()
    listed = client.get("/api/v1/submissions/").json()["results"][0]
    page = client.get(f"/submissions/{sub.pk}/").content.decode()
    assert body["qualifying"] is False and detail["qualifying"] is False
    assert listed["qualifying"] is False
    assert detail["report"]["qualifying"]["qualifying"] is False
    assert "decided at evaluation" not in detail["qualifying_reason"]
    assert "does not implement NetworkPolicy" in detail["qualifying_reason"]
    assert "does not implement NetworkPolicy" in page
    # A maintainer's exemption changes the one answer everywhere at once.
    flannel.netpol_exemption_reason = "flannel has no NetworkPolicy; KEP allows it"
    flannel.save()
    assert client.get(f"/api/v1/submissions/{sub.pk}/").json()["qualifying"] is True
    page = client.get(f"/submissions/{sub.pk}/").content.decode()
    assert "does not implement NetworkPolicy" not in page


# --- provenance on the verification page; the maintainer's run date -------------------------


def test_the_verification_page_names_the_source_of_every_fact(client, vendor_token, maintainer):
    body = post(client, vendor_token, passing_v130()).json()
    client.force_login(maintainer)
    page = client.get(f"/submissions/{body['id']}/").content.decode()
    assert "Where each fact comes from" in page
    assert "from the JUnit testsuite timestamp" in page
    assert "declared; not detected in the file" in page  # plugin and proxier
    assert "declared; the file&#x27;s test names fit v1.29-v1.37" in page
    assert "checked: DryRun property" in page and "no other submission of this run" in page


def test_a_file_without_a_run_time_counts_as_fresh_once_a_maintainer_dates_it(
    client, vendor_token, maintainer_token
):
    document = b.junit_v2(
        [(SCTP[k], "passed") for k in ("pod-to-pod", "pod-to-service", "netpol-allow-deny")],
        timestamp=None,
    )
    body = post(client, vendor_token, document, kubernetes_version="1.34.2").json()
    sub = Submission.objects.get(pk=body["id"])
    assert sub.run_at is None
    client.post(f"/api/v1/submissions/{sub.pk}/verify", {}, **auth(maintainer_token))
    sub.refresh_from_db()
    assert sub.status == "verified" and sub.run_at is None
    v = two_out_of_tree_plugins.evaluate(Context(now=now()))
    mine = next(e for e in v.evidence if e["kind"] == "submission" and e["id"] == sub.pk)
    assert mine["counts"] is False and "no run time" in mine["why"]

    day = (now() - timedelta(days=2)).date().isoformat()
    resp = client.post(
        f"/api/v1/submissions/{sub.pk}/verify",
        {"run_date": day},
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert resp.status_code == 200, resp.content
    sub.refresh_from_db()
    assert (sub.run_at.date().isoformat(), sub.run_at_source) == (day, "maintainer")
    audit = AuditEvent.objects.filter(action="submission.verify").order_by("-pk").first()
    assert audit is not None and audit.detail["run_date"].startswith(day)
    v = two_out_of_tree_plugins.evaluate(Context(now=now()))
    mine = next(e for e in v.evidence if e["kind"] == "submission" and e["id"] == sub.pk)
    assert mine["counts"] is True


def test_a_run_date_is_refused_when_the_file_says_when(client, vendor_token, maintainer_token):
    body = post(client, vendor_token, passing_v130()).json()
    resp = client.post(
        f"/api/v1/submissions/{body['id']}/verify",
        {"run_date": "2026-11-20"},
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert resp.status_code == 400 and "the file says when" in resp.json()["error"]


# --- 2/4 through the API: the real tarball ------------------------------------------------


def test_an_edited_real_tarball_declared_as_1_33_for_calico_is_refused(client, vendor_token):
    resp = post(
        client, vendor_token, rf.edited(rf.V121), name="r.tar.gz", kubernetes_version="1.33.0"
    )
    assert resp.status_code == 422
    assert resp.json()["release_in_file"] == "v1.21.1"
    resp = post(
        client, vendor_token, rf.edited(rf.V121), name="r.tar.gz", kubernetes_version="1.21.1"
    )
    assert resp.status_code == 422 and resp.json()["cni_in_file"] == ["kindnet"]
    assert Submission.objects.count() == 0


def test_a_refusal_answer_lists_the_testcases_and_the_commands(client, vendor_token):
    resp = post(
        client, vendor_token, rf.real(rf.V121), name="r.tar.gz", kubernetes_version="1.21.1"
    )
    assert resp.status_code == 422
    body = resp.json()
    # The CNI (kindnet) is checked only for files that are evidence; this one is not.
    assert len(body["sctp_testcases"]) == 17 and body["commands"]["hydrophone"]


# --- two-out-of-tree-plugins: a regression in a plugin's newest release -----------------


def test_a_failing_newest_plugin_version_puts_the_criterion_at_risk():
    f.run(f.cluster(plugin_slug="calico"))
    old = f.cluster(plugin_slug="cilium", plugin_version="1.16.3")
    new = f.cluster(plugin_slug="cilium", plugin_version="1.17.0")
    f.run(new, f.with_outcome("pod-to-service", Outcome.FAILED), days_ago=3)
    f.run(old, days_ago=1)  # the older version still qualifies, and ran later
    v = two_out_of_tree_plugins.evaluate(Context(now=now()))
    assert v.status == "at_risk", v.detail
    assert "cilium 1.17.0" in v.detail and "pod-to-service failed" in v.detail
