"""Joins the two 0010 migrations (hardening's secrets, the lead's published readiness); they touch
different tables, so either order is right. The lead may linearize them instead."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0010_hardening_secrets"),
        ("dashboard", "0010_published_readiness"),
    ]

    operations = []
