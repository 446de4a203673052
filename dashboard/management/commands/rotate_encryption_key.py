"""Re-encrypts every stored kubeconfig with the first key of FIELD_ENCRYPTION_KEY."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import connection, transaction

from dashboard.crypto import rotate


class Command(BaseCommand):
    help = "After putting a new key first in FIELD_ENCRYPTION_KEY, re-encrypt the stored secrets with it."

    @transaction.atomic
    def handle(self, *args, **opts):
        count = 0
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, kubeconfig FROM dashboard_cluster WHERE kubeconfig <> ''")
            rows = cursor.fetchall()
            for pk, token in rows:
                cursor.execute("UPDATE dashboard_cluster SET kubeconfig = %s WHERE id = %s", [rotate(token), pk])
                count += 1
        self.stdout.write(f"re-encrypted {count} kubeconfig(s) with the first key")
