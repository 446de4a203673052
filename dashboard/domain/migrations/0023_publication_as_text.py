"""The published evaluation is stored as the JSON text the API serves (issue 25: a jsonb column
parsed and rebuilt its ~280 KB on every publication and every read, for no query that looks
inside it). The stored publication is dropped rather than converted (jsonb's text has its keys
in another order): the next reader evaluates afresh, as after any change of evidence."""

from __future__ import annotations

from django.db import migrations, models


def forget(apps, schema_editor):
    apps.get_model("dashboard", "PublishedReadiness").objects.update(
        data="{}", computed=None, computed_version=-1
    )


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0022_near_identity_v5")]

    operations = [
        migrations.AlterField(
            model_name="publishedreadiness",
            name="data",
            field=models.TextField(default="{}"),
        ),
        migrations.RunPython(forget, forget, elidable=True),
    ]
