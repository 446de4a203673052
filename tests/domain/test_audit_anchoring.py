"""Issue 22, finding 5: the audit chain caught only naive edits. With a copy of the database
every hash could be recomputed after an edit; deleting the newest entries or blanking every hash
passed too. Now the chain is keyed outside the database, numbered, and its head is anchored
outside it (sign-offs, KEP reports, periodic checkpoints to the log and the webhooks)."""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import UTC

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils.timezone import now

from dashboard.domain import audit
from dashboard.domain.models import AuditEvent, NotificationChannel, NotificationLog, SignOff

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def checkpoint_file(settings, tmp_path):
    settings.AUDIT_CHECKPOINT_FILE = str(tmp_path / "audit-checkpoints.jsonl")
    return tmp_path / "audit-checkpoints.jsonl"


def verify_fails(*args: str) -> str:
    with pytest.raises(CommandError) as failure:
        call_command("verify_audit_chain", *args)
    return str(failure.value)


def entries(n: int) -> list[AuditEvent]:
    return [AuditEvent.record("maria", "submission.verify", f"submission {i}") for i in range(n)]


def unkeyed(prev: str, e: AuditEvent) -> str:
    """What anyone with the database and this repository can compute: the old scheme."""
    text = json.dumps(
        {
            "actor": e.actor,
            "action": e.action,
            "target": e.target,
            "detail": e.detail,
            "created": e.created.astimezone(UTC).isoformat(timespec="microseconds"),
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256((prev + text).encode()).hexdigest()


@pytest.mark.parametrize("attempt", ["sha256", "guessed-key", "dev-secret-key"])
def test_recomputing_every_hash_from_the_database_alone_is_detected(attempt, settings) -> None:
    entries(5)
    AuditEvent.objects.filter(seq=2).update(actor="mallory")
    prev = ""
    for e in AuditEvent.objects.order_by("id"):
        if attempt == "sha256":
            digest = unkeyed(prev, e)
        else:
            key = b"guess" if attempt == "guessed-key" else settings.DEV_SECRET_KEY.encode()
            digest = audit.entry_hash(
                prev, e.seq, e.actor, e.action, e.target, e.detail, e.created, key=key
            )
        AuditEvent.objects.filter(pk=e.pk).update(prev_hash=prev, hash=digest)
        prev = digest
    assert "under this deployment's key" in verify_fails()


def test_the_key_comes_from_the_settings_never_the_database(settings) -> None:
    entries(2)
    call_command("verify_audit_chain")
    settings.AUDIT_CHAIN_KEY = "another-deployment-key"
    assert "under this deployment's key" in verify_fails()


def test_blanking_every_hash_is_detected() -> None:
    entries(4)
    AuditEvent.objects.update(hash="", prev_hash="")
    assert "blank" in verify_fails()


def test_a_gap_in_the_numbers_shows_a_deleted_entry() -> None:
    entries(5)
    AuditEvent.objects.filter(seq=1).delete()
    assert "entries 1…1 are missing" in verify_fails()


def test_deleting_the_newest_entries_is_detected_against_the_last_checkpoint() -> None:
    entries(5)
    point = audit.checkpoint(now())
    assert point is not None and point.seq == 5
    entries(2)
    call_command("verify_audit_chain")  # newer entries than the checkpoint are fine
    AuditEvent.objects.filter(seq__gte=4).delete()  # the newest three, the checkpoint's among them
    message = verify_fails()
    assert "checkpoint 5 is not in the chain" in message and "deleted" in message


def test_a_checkpoint_quoted_elsewhere_catches_a_rewrite(checkpoint_file) -> None:
    entries(3)
    quoted = audit.head()
    checkpoint_file.unlink(missing_ok=True)
    AuditEvent.objects.filter(seq=3).delete()
    AuditEvent.record("mallory", "submission.verify", "submission 2")  # a new entry 3
    call_command("verify_audit_chain")  # the chain itself adds up again
    assert "no longer has the hash its checkpoint recorded" in verify_fails(
        "--checkpoint", str(quoted)
    )


def test_the_periodic_checkpoint_goes_to_the_log_the_file_and_the_webhook(
    caplog, checkpoint_file
) -> None:
    from workers.tasks import audit_checkpoint

    channel = NotificationChannel.objects.create(
        kind="webhook", target="https://hooks.example.org/audit"
    )
    entries(3)
    with caplog.at_level(logging.INFO, logger="dashboard.domain.audit"):
        quoted = audit_checkpoint.apply().get()
    head = audit.head()
    assert head is not None and quoted == str(head)
    assert f"entry {head.seq} hash {head.hash}" in caplog.text
    line = json.loads(checkpoint_file.read_text().splitlines()[-1])
    assert (line["seq"], line["hash"]) == (head.seq, head.hash)
    sent = NotificationLog.objects.get(channel=channel, event="audit.checkpoint")
    assert sent.payload["hash"] == head.hash and sent.payload["seq"] == head.seq
    audit_checkpoint.apply()  # an unchanged head is not sent twice
    assert NotificationLog.objects.filter(event="audit.checkpoint").count() == 1


def test_a_failing_verify_prints_what_failed_without_a_traceback(capsys) -> None:
    from django.core.management import execute_from_command_line

    entries(3)
    AuditEvent.objects.filter(seq=2).update(target="submission 99")
    with pytest.raises(SystemExit) as exit_info:
        execute_from_command_line(["manage.py", "verify_audit_chain"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1
    assert "broken at entry" in err and "Traceback" not in err


def test_every_sign_off_and_kep_report_quotes_the_head(client: Client, maintainer) -> None:
    client.force_login(maintainer)
    client.post(
        "/review/signoff/",
        {
            "from_stage": "alpha",
            "to_stage": "beta",
            "kubernetes_release": "1.19",
            "comment": "periodic job green",
            "override": "confirmed",
            "override_reason": "the lab covers it",
        },
    )
    signoff = SignOff.objects.get()
    entry = AuditEvent.objects.get(action="signoff")
    assert (signoff.audit_seq, signoff.audit_head) == (entry.seq, entry.hash)
    page = client.get(f"/review/signoffs/{signoff.uuid}/").content.decode()
    assert f"{entry.seq}:{entry.hash}" in page
    report = client.get("/review/report.md").content.decode()
    head = audit.head()
    assert head is not None
    assert f"`{entry.seq}:{entry.hash}`" in report  # the sign-off's own anchor
    assert f"entry {head.seq}, hash `{head.hash}`" in report  # the head when the report was made
    call_command("verify_audit_chain", "--checkpoint", f"{entry.seq}:{entry.hash}")


def test_an_audit_entry_always_names_its_actor() -> None:
    for nobody in ("", "?", "  "):
        with pytest.raises(ValueError, match="names its actor"):
            AuditEvent.record(nobody, "submission.verify", "submission 1")
