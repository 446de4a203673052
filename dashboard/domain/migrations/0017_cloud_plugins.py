"""Seed the cloud platforms' CNIs as plugins vendors and maintainers can register (issue 23):
Amazon VPC CNI, Azure CNI and GKE Dataplane V2, each with its NetworkPolicy support."""

from django.db import migrations

CLOUD_PLUGINS = [
    {
        "slug": "amazon-vpc-cni",
        "name": "Amazon VPC CNI",
        "in_tree": False,
        "implements_network_policy": True,
    },
    {"slug": "azure-cni", "name": "Azure CNI", "in_tree": False, "implements_network_policy": True},
    {
        "slug": "gke-dataplane-v2",
        "name": "GKE Dataplane V2",
        "in_tree": False,
        "implements_network_policy": True,
    },
]


def seed(apps, schema_editor):
    Plugin = apps.get_model("dashboard", "Plugin")
    for plugin in CLOUD_PLUGINS:
        Plugin.objects.get_or_create(slug=plugin["slug"], defaults=plugin)


def unseed(apps, schema_editor):
    Plugin = apps.get_model("dashboard", "Plugin")
    # Only the untouched seeds: a plugin with clusters, submissions or vendors stays.
    for plugin in CLOUD_PLUGINS:
        Plugin.objects.filter(
            slug=plugin["slug"],
            clusters__isnull=True,
            runs__isnull=True,
            submissions__isnull=True,
            vendors__isnull=True,
        ).delete()


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0016_audit_chain_keyed_and_withdrawals")]

    operations = [migrations.RunPython(seed, unseed)]
