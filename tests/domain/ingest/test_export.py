"""A run exported as e2e-style JUnit reads back through ingest to the same outcomes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from dashboard.domain.catalog import ALL_KEYS
from dashboard.domain.ingest import IngestError, ingest
from dashboard.domain.ingest.export import run_to_junit
from dashboard.domain.models import Run, Submission
from tests import factories as f
from tests.conftest import auth

pytestmark = pytest.mark.django_db

FINISHED = datetime(2026, 11, 28, 17, 45, 12, tzinfo=UTC)
# What a submission reads back for each run outcome (contract: an errored test is failed).
READ_BACK = {
    "passed": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "not_run": "not_run",
    "error": "failed",
}
MIXES = {
    "all passed": dict.fromkeys(ALL_KEYS, "passed"),
    "mixed": {
        "declare-sctp-ports": "passed",
        "hostport-kubenet": "skipped",
        "service-iptables-rules": "failed",
        "netpol-sctp-blocks-tcp-udp": "error",
        "pod-to-pod": "passed",
        "pod-to-service": "failed",
        "pod-to-loadbalancer": "skipped",
        "netpol-allow-deny": "not_run",
    },
    "connectivity only": {
        "pod-to-pod": "passed",
        "pod-to-service": "passed",
        "pod-to-loadbalancer": "passed",
        "netpol-allow-deny": "failed",
    },
}


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_an_exported_run_reads_back_to_the_same_outcomes(mix):
    outcomes = MIXES[mix]
    run = f.run(f.cluster(), outcomes, finished=FINISHED)
    report = ingest(run_to_junit(run), check_evidence=False)
    assert report.kind == "junit" and report.warnings == []
    for key in ALL_KEYS:
        assert report.results[key].outcome == READ_BACK[outcomes.get(key, "not_run")], key
    for key, outcome in outcomes.items():
        if outcome in ("failed", "error", "skipped"):
            assert (
                report.results[key].reasons and f"{key} {outcome}" in report.results[key].reasons[0]
            ), key
    assert (report.run_at, report.run_at_source) == (FINISHED, "file")
    assert report.emulated is False


def test_an_emulated_run_is_exported_with_the_emulated_property():
    cluster = f.cluster(emulated=True)
    run = f.run(cluster, finished=FINISHED)
    Run.objects.filter(pk=run.pk).update(emulated=True)
    run.refresh_from_db()
    document = run_to_junit(run)
    assert b'<property name="emulated" value="true"></property>' in document
    assert ingest(document, check_evidence=False).emulated is True


def test_reasons_with_markup_and_control_characters_are_written_safely():
    run = f.run(f.cluster(), {"pod-to-pod": "failed"}, finished=FINISHED)
    run.results.filter(test_key="pod-to-pod").update(reason='dial "sctp" <10.0.0.7> & \x07 refused')
    report = ingest(run_to_junit(run), check_evidence=False)
    assert report.results["pod-to-pod"].reasons == ['failed: dial "sctp" <10.0.0.7> & refused']


def test_anyone_downloads_a_finished_run_as_junit(client):
    run = f.run(f.cluster(), finished=FINISHED)
    resp = client.get(f"/runs/{run.pk}/junit.xml")
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("application/xml")
    assert f"run-{run.pk}-junit_01.xml" in resp["Content-Disposition"]
    assert resp.content == run_to_junit(run)
    assert f'href="/runs/{run.pk}/junit.xml"' in client.get(f"/runs/{run.pk}/").content.decode()


def test_an_unfinished_run_has_no_junit_yet(client):
    run = f.run(f.cluster(), state=Run.State.RUNNING)
    assert client.get(f"/runs/{run.pk}/junit.xml").status_code == 409
    assert client.get("/runs/999999/junit.xml").status_code == 404


def test_an_exported_emulated_run_submitted_through_the_api_is_refused_as_that_run(
    client, vendor_token
):
    # Issue 21: the dashboard's own export is that run; it is never evidence a second time
    # (tests/domain/ingest/test_provenance.py: also with its properties stripped or edited).
    cluster = f.cluster(plugin_slug="calico", emulated=True, lab=True)
    run = f.run(cluster, finished=FINISHED)
    Run.objects.filter(pk=run.pk).update(
        emulated=True,
        fingerprint={"emulated": True, "cni_detected": "calico", "proxier_detected": "iptables"},
    )
    document = client.get(f"/runs/{run.pk}/junit.xml").content
    resp = client.post(
        "/api/v1/submissions/",
        {
            "plugin": "calico",
            "plugin_version": "3.28.0",
            "kubernetes_version": "1.34.2",
            "proxier": "iptables",
            "file": SimpleUploadedFile(f"run-{run.pk}.xml", document),
        },
        **auth(vendor_token),
    )
    assert resp.status_code == 409, resp.content
    assert resp.json()["run"] == run.pk
    assert Submission.objects.count() == 0


def test_an_export_whose_run_detected_another_proxier_is_refused_when_declared_otherwise():
    run = f.run(f.cluster(proxier="iptables"), finished=FINISHED)
    Run.objects.filter(pk=run.pk).update(proxier_detected="ipvs")
    run.refresh_from_db()
    with pytest.raises(IngestError) as caught:
        ingest(run_to_junit(run), declared_proxier="iptables")
    assert caught.value.status == 422
