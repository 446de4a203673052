"""The three keys of a run's fingerprint that a readiness evaluation reads, as columns the
database computes from the fingerprint on every write (issue 25: the evaluation read the whole
fingerprint, about 5 KB, of each of its ~600 runs, and extracting the keys in the query still
decompressed each document three times)."""

from django.db import migrations, models

import dashboard.domain.lookups


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0023_publication_as_text"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="fp_emulated",
            field=models.GeneratedField(
                db_persist=True,
                expression=dashboard.domain.lookups.JSONKey("fingerprint", "emulated"),
                output_field=models.JSONField(null=True),
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="fp_proxier_detected",
            field=models.GeneratedField(
                db_persist=True,
                expression=dashboard.domain.lookups.JSONKey("fingerprint", "proxier_detected"),
                output_field=models.JSONField(null=True),
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="fp_sctp_module_before",
            field=models.GeneratedField(
                db_persist=True,
                expression=dashboard.domain.lookups.JSONKey("fingerprint", "sctp_module_before"),
                output_field=models.JSONField(null=True),
            ),
        ),
    ]
