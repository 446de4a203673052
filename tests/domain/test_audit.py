"""The audit trail: a hash chain that verify_audit_chain checks, and the /audit/ page."""

from __future__ import annotations

import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from dashboard.domain.audit import entry_hash
from dashboard.domain.models import AuditEvent

pytestmark = pytest.mark.django_db


def _verify() -> str:
    out = StringIO()
    call_command("verify_audit_chain", stdout=out)
    return out.getvalue()


def test_each_entry_carries_the_hash_of_the_one_before() -> None:
    first = AuditEvent.record("maria", "signoff", "alpha → beta", comment="ok", criteria=("a", "b"))
    second = AuditEvent.record("victor", "submission.create", "submission 7", plugin="calico")
    assert first.prev_hash == "" and second.prev_hash == first.hash and len(second.hash) == 64
    stored = AuditEvent.objects.get(pk=second.pk)
    assert (first.seq, second.seq) == (1, 2)
    assert stored.hash == entry_hash(
        stored.prev_hash,
        stored.seq,
        stored.actor,
        stored.action,
        stored.target,
        stored.detail,
        stored.created,
    )
    assert "2 entries verified" in _verify()


def test_the_check_names_the_first_changed_entry_and_fails() -> None:
    events = [AuditEvent.record("maria", "submission.verify", f"submission {i}") for i in range(4)]
    AuditEvent.objects.filter(pk=events[1].pk).update(
        target="submission 99"
    )  # someone edits the database
    with pytest.raises(CommandError, match=f"broken at entry {events[1].pk} .*changed"):
        _verify()


def test_the_check_notices_a_deleted_entry() -> None:
    events = [AuditEvent.record("maria", "submission.verify", f"submission {i}") for i in range(4)]
    AuditEvent.objects.filter(pk=events[2].pk).delete()
    with pytest.raises(CommandError, match=f"broken at entry {events[3].pk} .*3…3 are missing"):
        _verify()


def test_the_exit_status_is_non_zero_from_the_command_line(tmp_path) -> None:
    from django.core.management import execute_from_command_line

    e = AuditEvent.record("maria", "signoff", "alpha → beta")
    AuditEvent.objects.filter(pk=e.pk).update(actor="mallory")
    with pytest.raises(SystemExit) as exit_info:
        execute_from_command_line(["manage.py", "verify_audit_chain"])
    assert exit_info.value.code == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_records_never_share_a_predecessor() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(
            "needs concurrent connections to one database: run with DATABASE_URL=postgres://…"
        )
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(10):
                AuditEvent.record(f"writer-{n}", "test.concurrent", f"{n}-{i}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    prevs = list(AuditEvent.objects.values_list("prev_hash", flat=True))
    assert len(prevs) == 40 and len(set(prevs)) == 40
    assert "40 entries verified" in _verify()


def test_the_audit_page_filters_and_pages_for_maintainers(
    client: Client, maintainer, vendor_user
) -> None:
    for i in range(60):
        AuditEvent.record("maria", "submission.verify", f"submission {i}")
    AuditEvent.record("victor", "cluster.register", "cluster calico-prod")
    client.force_login(vendor_user)
    assert client.get("/audit/").status_code == 403
    client.force_login(maintainer)
    body = client.get("/audit/").content.decode()
    assert "61 entries" in body and "page 1 of 2" in body and "cluster calico-prod" in body
    assert "submission 0<" not in body  # the oldest are on page 2
    assert "submission 0<" in client.get("/audit/?page=2").content.decode()
    body = client.get("/audit/?action=cluster.register").content.decode()
    assert "1 entry match" in body and "cluster calico-prod" in body and "submission 5<" not in body
    body = client.get("/audit/?actor=mar&q=submission+1").content.decode()
    assert "11 entries match" in body  # submission 1, 10-19
    assert (
        "action=submission.verify&amp;page=2"
        in client.get("/audit/?action=submission.verify").content.decode()
    )


def test_the_admin_shows_records_read_only(client: Client, admin_user) -> None:
    e = AuditEvent.record("maria", "signoff", "alpha → beta")
    client.force_login(admin_user)
    assert client.get(f"/admin/dashboard/auditevent/{e.pk}/change/").status_code == 200  # view only
    assert (
        client.post(f"/admin/dashboard/auditevent/{e.pk}/change/", {"actor": "mallory"}).status_code
        == 403
    )
    assert client.get("/admin/dashboard/auditevent/add/").status_code == 403
    assert client.get("/admin/dashboard/signoff/add/").status_code == 403
    assert client.get("/admin/dashboard/readinesssnapshot/add/").status_code == 403
    assert AuditEvent.objects.get(pk=e.pk).actor == "maria"
