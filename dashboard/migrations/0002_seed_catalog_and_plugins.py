"""Seeds the KEP-614 catalog and the contract's plugins; re-running keeps them in step."""

from django.db import migrations


def seed(apps, schema_editor):
    from dashboard.catalog import CATALOG, SEED_PLUGINS

    CatalogTest = apps.get_model("dashboard", "CatalogTest")
    Plugin = apps.get_model("dashboard", "Plugin")
    for position, entry in enumerate(CATALOG):
        CatalogTest.objects.update_or_create(
            key=entry["key"],
            defaults={
                "title": entry["title"],
                "battery": entry["battery"],
                "tags": entry["tags"],
                "kep_text": entry["kep_text"],
                "upstream_names": entry["upstream_names"],
                "position": position,
            },
        )
    for plugin in SEED_PLUGINS:
        Plugin.objects.get_or_create(slug=plugin["slug"], defaults=plugin)


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
