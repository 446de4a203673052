"""Evidence heads (models.EvidenceHead, dashboard/domain/heads.py): the table. It is filled from
the history after every `migrate` (post_migrate, dashboard/domain/apps.py), with the models as
they are then, not from here."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0019_matrix_conn_index")]

    operations = [
        migrations.CreateModel(
            name="EvidenceHead",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "heads",
                    models.JSONField(default=dict, help_text="slot -> id, or a list of ids"),
                ),
                (
                    "cluster",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="evidence_head",
                        to="dashboard.cluster",
                    ),
                ),
                (
                    "plugin",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="evidence_head",
                        to="dashboard.plugin",
                    ),
                ),
                (
                    "schedule",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="evidence_head",
                        to="dashboard.schedule",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(
                                ("cluster__isnull", False),
                                ("plugin__isnull", True),
                                ("schedule__isnull", True),
                            ),
                            models.Q(
                                ("cluster__isnull", True),
                                ("plugin__isnull", False),
                                ("schedule__isnull", True),
                            ),
                            models.Q(
                                ("cluster__isnull", True),
                                ("plugin__isnull", True),
                                ("schedule__isnull", False),
                            ),
                            _connector="OR",
                        ),
                        name="evidence_head_one_scope",
                    )
                ],
            },
        ),
    ]
