"""Re-encrypts every stored kubeconfig with the first key of FIELD_ENCRYPTION_KEY."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand
from django.db import connection, transaction

from dashboard.domain.crypto import is_decryptable, rotate
from dashboard.domain.runs import CREDENTIALS_UNREADABLE


class Command(BaseCommand):
    help = "After putting a new key first in FIELD_ENCRYPTION_KEY, re-encrypt the stored secrets with it."

    @transaction.atomic
    def handle(self, *args: Any, **opts: Any) -> None:

        count, unreadable = 0, []
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, name, kubeconfig FROM dashboard_cluster WHERE kubeconfig <> ''"
            )
            for pk, name, token in cursor.fetchall():
                if not is_decryptable(token):  # marked on its cluster; the others are still rotated
                    cursor.execute(
                        "UPDATE dashboard_cluster SET credentials_error = %s WHERE id = %s",
                        [CREDENTIALS_UNREADABLE[:200], pk],
                    )
                    unreadable.append(name)
                    continue
                cursor.execute(
                    "UPDATE dashboard_cluster SET kubeconfig = %s WHERE id = %s",
                    [rotate(token), pk],
                )
                count += 1
            cursor.execute(
                "SELECT id, secret FROM dashboard_notificationchannel WHERE secret <> ''"
            )
            for pk, token in cursor.fetchall():
                if not is_decryptable(token):
                    raise ImproperlyConfigured(
                        f"notification channel {pk}: its secret cannot be decrypted"
                    )
                cursor.execute(
                    "UPDATE dashboard_notificationchannel SET secret = %s WHERE id = %s",
                    [rotate(token), pk],
                )
        self.stdout.write(f"re-encrypted {count} kubeconfig(s) with the first key")
        if unreadable:
            self.stderr.write(
                f"not decryptable with any key, marked on the cluster: {', '.join(unreadable)}"
            )
