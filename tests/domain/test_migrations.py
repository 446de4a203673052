"""Data migrations, run on rows as an older release left them."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from dashboard.domain.ingest import ingest
from dashboard.domain.models import Submission
from tests import factories
from tests.domain.ingest.builders import real_v130, with_sctp_status

pytestmark = pytest.mark.django_db

identity_v2 = importlib.import_module("dashboard.domain.migrations.0018_run_identity_v2")


def test_identity_v2_reads_every_stored_file_again_and_keeps_one_submission_per_run():
    document = with_sctp_status(real_v130(), "passed")
    expected = ingest(document)
    first, reordered_copy, unreadable = (
        factories.submission("calico"),
        factories.submission("cilium"),
        factories.submission("antrea"),
    )
    Submission.objects.filter(pk=first.pk).update(content=document, content_id="v1-a", near_id="")
    # The same run, which v1 let in a second time under another identity (re-ordered).
    Submission.objects.filter(pk=reordered_copy.pk).update(
        content=document, content_id="v1-b", near_id=""
    )
    Submission.objects.filter(pk=unreadable.pk).update(content=b"not a result file", content_id="")

    identity_v2.reidentify(apps, None)

    rows = dict(Submission.objects.values_list("pk", "content_id"))
    assert rows[first.pk] == expected.content_id
    assert rows[reordered_copy.pk] == ""  # the earlier submission is that run's evidence
    assert rows[unreadable.pk] == ""
    assert Submission.objects.get(pk=first.pk).near_id == expected.near_id


@pytest.mark.parametrize("migration", ["0021_run_identity_v4", "0022_near_identity_v5"])
def test_a_new_identity_is_given_to_every_stored_file(migration: str):
    identity_v4 = importlib.import_module(f"dashboard.domain.migrations.{migration}")
    document = with_sctp_status(real_v130(), "passed")
    expected = ingest(document)
    assert len(expected.content_id) == 64 and len(expected.near_id) == 64
    stored = factories.submission("calico")
    Submission.objects.filter(pk=stored.pk).update(
        content=document, content_id="a v3 identity", near_id="a v3 near identity"
    )
    identity_v4.reidentify(apps, None)
    row = Submission.objects.get(pk=stored.pk)
    assert (row.content_id, row.near_id) == (expected.content_id, expected.near_id)


def test_a_publication_stored_as_jsonb_is_dropped_and_evaluated_afresh(client):
    """0023 stores the publication as text; the one stored before is forgotten (jsonb's text
    orders keys otherwise), and the next reader evaluates and stores it anew."""
    import json

    from dashboard.domain import publication
    from dashboard.domain.models import PublishedReadiness

    as_text = importlib.import_module("dashboard.domain.migrations.0023_publication_as_text")
    factories.run(factories.cluster())
    client.get("/api/v1/readiness/")
    as_text.forget(apps, None)
    row = PublishedReadiness.objects.get()
    assert (row.data, row.computed, row.computed_version) == ("{}", None, -1)
    with publication._memo_lock:
        publication._memo.clear()
        publication._look.clear()
    body = client.get("/api/v1/readiness/").content
    assert json.loads(body)["feature"] == "sctp" and PublishedReadiness.objects.get().data
