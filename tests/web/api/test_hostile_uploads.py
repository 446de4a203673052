"""Issue 12 findings 1, 3 and 4, each reproduced through POST /api/v1/submissions/.

Every test sends the attack through Django's real request handler with the body streamed
from disk (tests/streaming.py), measures the Python memory the upload adds on
the server side with tracemalloc, and asserts the refusal (or the bounded acceptance), the
memory bound, and that nothing was stored. How long each shape takes (linear, not
quadratic) is measured by the benchmark (bench/bench_hostile.py), not asserted here: a timed
assertion fails on a loaded machine and proves nothing on a quiet one.
"""

from __future__ import annotations

import pytest

from dashboard.domain.models import AuditEvent, Submission
from tests import factories as f
from tests.domain.ingest import hostile_shapes as shapes
from tests.streaming import BUDGET_BYTES, upload

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def generous_ingest_budget(settings):
    """The refusals under test are the structural ones (elements, sizes, names): the wall-clock
    budget of one submission (tested on its own below) must not answer first on a busy machine."""
    settings.SUBMISSION_INGEST_SECONDS = 600


def nothing_stored() -> bool:
    return (
        not Submission.objects.exists()
        and not AuditEvent.objects.filter(action="submission.create").exists()
    )


def assert_refused(measured, status: int, words: str) -> None:
    assert measured.response.status_code == status, measured.response.content[:500]
    assert words in measured.json()["error"]
    assert nothing_stored()


# --- finding 1: the slow label-list regex ----------------------------------------------


def test_label_list_names_are_refused_in_linear_time(vendor_token):
    # 3 x 96 KB names froze every worker for 43 s; now: 422 (no SCTP test ran) at once.
    measured = upload(vendor_token, shapes.label_list_names(3 * 96 * 1024))
    assert_refused(measured, 422, "no SCTP test ran")
    assert measured.peak_bytes < BUDGET_BYTES, measured.peak_mb


def test_label_list_names_beside_a_real_test_are_cut_with_one_warning(vendor_token):
    measured = upload(vendor_token, shapes.label_list_names(3 * 96 * 1024, with_real_test=True))
    assert measured.response.status_code == 201, measured.response.content[:500]
    assert measured.peak_bytes < BUDGET_BYTES
    warnings = measured.json()["warnings"]
    assert [w for w in warnings if "were cut" in w] == [
        "3 testcase name(s) longer than 1000 characters were cut to that length before matching"
    ]
    assert all(len(w) <= 300 for w in warnings)


# --- finding 3: memory amplification ---------------------------------------------------


def test_a_gzip_bomb_junit_is_refused_within_the_memory_bound(vendor_token):
    bomb = shapes.gzip_bomb_junit(700)  # ~2.5 MB that inflates to 700 MB of testcases
    measured = upload(vendor_token, bomb, filename="junit_01.xml.gz")
    assert_refused(measured, 400, "XML elements")
    assert measured.peak_bytes < BUDGET_BYTES, measured.peak_mb
    timed = upload(vendor_token, bomb, filename="junit_01.xml.gz", trace=False)
    assert_refused(timed, 400, "XML elements")


def test_a_tar_with_huge_junit_members_is_refused_from_their_real_size(vendor_token):
    measured = upload(
        vendor_token, shapes.tar_huge_members(250, wanted=True), filename="sonobuoy.tar.gz"
    )
    assert_refused(measured, 400, "is larger than 128 MB")
    assert measured.peak_bytes < BUDGET_BYTES


def test_an_accepted_file_near_the_size_limit_stays_within_the_bound(vendor_token, tmp_path):
    # 49 MB of ginkgo system-err text beside one passing SCTP test: read, hashed, stored.
    path = tmp_path / "junit_01.xml"
    shapes.long_text(str(path), 49)
    measured = upload(vendor_token, str(path))
    assert measured.response.status_code == 201, measured.response.content[:500]
    assert measured.peak_bytes < BUDGET_BYTES, measured.peak_mb
    sub = Submission.objects.get()
    import hashlib

    assert (
        hashlib.sha256(bytes(sub.content)).hexdigest()
        == sub.sha256
        == hashlib.sha256(path.read_bytes()).hexdigest()
    )


def test_huge_members_that_are_skipped_are_streamed_past_within_the_bound(vendor_token):
    measured = upload(
        vendor_token, shapes.tar_huge_members(250, wanted=False, count=1), filename="s.tar.gz"
    )
    assert measured.response.status_code == 201, measured.response.content[:500]
    assert measured.peak_bytes < BUDGET_BYTES, measured.peak_mb
    assert measured.json()["results"]["pod-to-service"]["outcome"] == "passed"


def test_a_file_of_many_properties_children_is_refused_within_the_bound(vendor_token, tmp_path):
    path = shapes.properties_flood(str(tmp_path / "junit_01.xml"), size_mb=47)
    measured = upload(vendor_token, path)
    assert_refused(measured, 400, "XML elements")
    assert measured.peak_bytes < BUDGET_BYTES, measured.peak_mb
    timed = upload(vendor_token, path, trace=False)
    assert_refused(timed, 400, "XML elements")


def test_a_huge_attribute_is_refused_before_the_parser_holds_it(vendor_token, tmp_path):
    measured = upload(vendor_token, shapes.long_attribute(str(tmp_path / "junit_01.xml"), 40))
    assert_refused(
        measured, 400, "one tag, comment or processing instruction in it is longer than 4 MB"
    )
    assert measured.peak_bytes < BUDGET_BYTES, measured.peak_mb


def test_a_zip_with_too_many_entries_is_refused_from_its_end_record(vendor_token):
    measured = upload(vendor_token, shapes.zip_many_entries(20_000), filename="results.zip")
    assert_refused(measured, 400, "more than 10000 members")
    assert measured.peak_bytes < 8 * 1024 * 1024, measured.peak_mb  # the directory was never parsed


def test_a_zip_announcing_a_huge_central_directory_is_refused_before_reading_it(vendor_token):
    measured = upload(
        vendor_token, shapes.zip_claiming_a_huge_directory(400), filename="results.zip"
    )
    assert_refused(measured, 400, "central directory is larger than")


# --- finding 4: warning amplification ---------------------------------------------------


def test_many_unknown_sctp_names_give_few_short_warnings_stored_once(client, vendor_token):
    measured = upload(vendor_token, shapes.unknown_sctp_names(3_000, 1_000))  # ~3 MB
    assert measured.response.status_code == 201, measured.response.content[:500]
    body = measured.json()
    assert (
        len(body["warnings"]) == 21 and body["warnings"][-1] == "… and 2981 more warnings"
    )  # 3,000 names + the cut-names one
    assert all(len(w) <= 300 for w in body["warnings"])
    sub = Submission.objects.get(pk=body["id"])
    assert "warnings" not in sub.report and len(sub.warnings) == 21
    assert len(client.get(f"/api/v1/submissions/{sub.pk}/").content) < 30_000
    listed = client.get("/api/v1/submissions/")
    assert len(listed.content) < 2_000 and b"warnings" not in listed.content
    assert measured.peak_bytes < BUDGET_BYTES


# --- the time budget --------------------------------------------------------------------


def test_ingest_past_its_time_budget_is_refused_with_a_clear_error(vendor_token, settings):
    from tests.domain.ingest import builders as b

    settings.SUBMISSION_INGEST_SECONDS = 0.001
    measured = upload(vendor_token, b.with_sctp_status(b.real_v130(), "passed"))
    assert_refused(measured, 400, "longer than the 0.001 s budget")


# --- the list: paginated, no per-test details --------------------------------------------


def test_the_submissions_list_is_paginated_at_most_100_a_page(client):
    for _ in range(105):
        f.submission("calico", status=Submission.Status.PENDING)
    first = client.get("/api/v1/submissions/?page_size=500").json()
    assert first["count"] == 105 and len(first["results"]) == 100 and first["previous"] is None
    assert "page=2" in first["next"]
    item = first["results"][0]
    assert not {"results", "warnings", "report"} & set(item)
    assert set(item["counts"]) <= {"passed", "failed", "skipped", "not_run"}
    second = client.get(first["next"]).json()
    assert len(second["results"]) == 5 and second["next"] is None and "page=1" in second["previous"]
    ids = [s["id"] for s in first["results"] + second["results"]]
    assert len(set(ids)) == 105 and ids == sorted(ids, reverse=True)
    assert client.get("/api/v1/submissions/?page=x").status_code == 400
