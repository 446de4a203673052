"""PostgreSQL only: the index of the matrix's "newest connectivity run per plugin" lookup.

Its ORDER BY is `finished DESC NULLS LAST` (dashboard/domain/matrix.py) so that no other index
gives that order: PostgreSQL otherwise walked the (state, -finished) index and, for a plugin
with no such run, the whole history (82 ms at a year of history, issue 25). SQLite cannot
index NULLS LAST (nor needs to: its planner takes the plugin's own index), so the index is
made here rather than in the model's Meta."""

from django.db import migrations

NAME = "run_plugin_conn_newest"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX {NAME} ON dashboard_run "
            "(plugin_id, state, has_connectivity, finished DESC NULLS LAST)"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {NAME}")


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0018_run_identity_v2")]

    operations = [migrations.RunPython(create, drop)]
