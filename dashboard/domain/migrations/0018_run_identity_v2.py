"""The run identity no longer depends on the order of a file's testcases (identity v2): every
stored submission's identity is read again from its own bytes.

This data migration calls the ingest of this commit (a re-read is the only way to an identity
of the file's content). A file the ingest cannot read again keeps its old identity; one whose
new identity another, earlier submission already has (the same run, listed in another order)
keeps none, and its warnings say so: the earlier one is that run's evidence.
"""

from __future__ import annotations

from django.db import migrations


def reidentify(apps, schema_editor):
    from dashboard.domain.ingest import IngestError, ingest
    from dashboard.domain.ingest.limits import Limits

    submission = apps.get_model("dashboard", "Submission")
    taken: set[str] = set()
    for pk in submission.objects.order_by("pk").values_list("pk", flat=True).iterator():
        row = submission.objects.only("pk", "content", "kubernetes_version", "proxier").get(pk=pk)
        try:
            report = ingest(
                bytes(row.content),
                check_evidence=False,
                limits=Limits(time_budget_seconds=600),
            )
        except IngestError:
            continue
        content_id, near_id = report.content_id or "", report.near_id or ""
        if content_id and content_id in taken:
            content_id = ""
        elif content_id:
            taken.add(content_id)
        submission.objects.filter(pk=pk).update(content_id=content_id, near_id=near_id)


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0017_cloud_plugins")]

    operations = [migrations.RunPython(reidentify, migrations.RunPython.noop, elidable=True)]
