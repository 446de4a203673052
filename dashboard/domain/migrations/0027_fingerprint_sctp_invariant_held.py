"""Issue 40: a basic test's outcome follows upstream's module check (at most 2 nodes); our
stricter invariant (every battery node, every basic test) is a fact of the run, and the
evidence policy's conclusive rule reads whether it held, as a column like the other keys."""

from django.db import migrations, models

import dashboard.domain.lookups


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0026_run_upstream"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="fp_sctp_invariant_held",
            field=models.GeneratedField(
                db_persist=True,
                expression=dashboard.domain.lookups.JSONKey("fingerprint", "sctp_invariant_held"),
                output_field=models.JSONField(null=True),
            ),
        ),
    ]
