"""Webhook secrets encrypted at rest like kubeconfigs (existing rows converted); the cluster's
credentials_error mark (a stored kubeconfig that cannot be decrypted); token hints that show
only a token's public id."""

from django.db import migrations, models

import dashboard.domain.crypto


def encrypt_secrets(apps, schema_editor):
    from dashboard.domain.crypto import encrypt

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT id, secret FROM dashboard_notificationchannel WHERE secret <> ''")
        for pk, secret in cursor.fetchall():
            cursor.execute(
                "UPDATE dashboard_notificationchannel SET secret = %s WHERE id = %s",
                [encrypt(secret), pk],
            )


def public_token_hints(apps, schema_editor):
    """Old tokens' hints were their first 10 characters: 5 of them secret. Such hints (and the
    submissions' `uploaded_by` quoting them) become `legacy-<id>`; new tokens carry a public id."""
    ApiToken = apps.get_model("dashboard", "ApiToken")
    Submission = apps.get_model("dashboard", "Submission")
    for token in ApiToken.objects.all().only("id", "hint"):
        if len(token.hint) == 11 and token.hint.startswith("sctp_"):
            continue  # already a public id (sctp_ + 6 hex digits)
        legacy = f"legacy-{token.id}"
        for sub in Submission.objects.filter(uploaded_by__contains=f"(token {token.hint}").only(
            "id", "uploaded_by"
        ):
            Submission.objects.filter(pk=sub.pk).update(
                uploaded_by=sub.uploaded_by.replace(
                    f"(token {token.hint}…)", f"(token {legacy})"
                ).replace(f"(token {token.hint}", f"(token {legacy}")
            )
        ApiToken.objects.filter(pk=token.pk).update(hint=legacy)


def decrypt_secrets(apps, schema_editor):
    from dashboard.domain.crypto import decrypt

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT id, secret FROM dashboard_notificationchannel WHERE secret <> ''")
        for pk, token in cursor.fetchall():
            cursor.execute(
                "UPDATE dashboard_notificationchannel SET secret = %s WHERE id = %s",
                [decrypt(token), pk],
            )


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0009_evidence_policy"),
    ]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="credentials_error",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AlterField(
            model_name="notificationchannel",
            name="secret",
            field=dashboard.domain.crypto.EncryptedTextField(
                blank=True, help_text="Webhooks: signs the body (X-Signature); stored encrypted"
            ),
        ),
        migrations.AlterField(
            model_name="apitoken",
            name="hint",
            field=models.CharField(
                editable=False,
                help_text="The token's public id, to tell tokens apart",
                max_length=12,
            ),
        ),
        migrations.RunPython(encrypt_secrets, decrypt_secrets),
        migrations.RunPython(public_token_hints, migrations.RunPython.noop),
    ]
