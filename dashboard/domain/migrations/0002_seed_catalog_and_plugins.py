"""Seeds the KEP-614 catalog and the contract's plugins; re-running keeps them in step."""

from django.db import migrations


def seed(apps, schema_editor):
    from dashboard.domain.catalog import seed as seed_catalog

    seed_catalog(apps.get_model("dashboard", "CatalogTest"), apps.get_model("dashboard", "Plugin"))


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
