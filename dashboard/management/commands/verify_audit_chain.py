"""`manage.py verify_audit_chain`: exits 1 naming the first audit entry that breaks the chain."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from dashboard.audit import verify
from dashboard.models import AuditEvent


class Command(BaseCommand):
    help = "Check the audit trail's hash chain; exit non-zero at the first broken entry."

    def handle(self, *args, **opts):
        entries = (
            AuditEvent.objects.order_by("id")
            .only("id", "actor", "action", "target", "detail", "created", "prev_hash", "hash")
            .iterator(chunk_size=2000)
        )
        report = verify(entries)
        if report.broken_id is not None:
            e = AuditEvent.objects.filter(pk=report.broken_id).first()
            what = f" ({e.created:%Y-%m-%d %H:%M:%S} {e.actor} {e.action} {e.target})" if e else ""
            raise CommandError(
                f"audit chain broken at entry {report.broken_id}{what}: {report.problem}; "
                f"{report.checked} entries before it verified"
            )
        legacy = f", {report.legacy} older entries from before the chain" if report.legacy else ""
        self.stdout.write(f"audit chain intact: {report.checked} entries verified{legacy}")
