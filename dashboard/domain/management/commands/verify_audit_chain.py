"""`manage.py verify_audit_chain`: exits 1 naming what does not add up in the audit trail.

Checks the keyed hash chain entry by entry (numbers without gaps, no blank hashes, each hash
the HMAC of its entry under this deployment's AUDIT_CHAIN_KEY), then that every checkpoint it
knows of is still in the chain: those in AUDIT_CHECKPOINT_FILE and those given with
`--checkpoint SEQ:HASH` (from the log, a webhook, a sign-off or a KEP report). A failure is one
line saying what failed, never a traceback.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.domain.audit import Head, recorded_checkpoints, verify
from dashboard.domain.models import AuditEvent


class Command(BaseCommand):
    help = "Check the audit trail's keyed hash chain and its checkpoints; exit 1 on a failure."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--checkpoint",
            action="append",
            default=[],
            metavar="SEQ:HASH",
            help="a head quoted outside the database (repeatable)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            given = [Head.parse(text) for text in opts["checkpoint"]]
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        checkpoints = recorded_checkpoints() + given
        entries = _in_pages(
            AuditEvent.objects.order_by("id").only(
                "id", "seq", "actor", "action", "target", "detail", "created", "prev_hash", "hash"
            )
        )
        try:
            report = verify(entries, checkpoints)
        except Exception as exc:  # an unreadable table is a failure to report, not a crash
            raise CommandError(
                f"audit chain could not be read: {type(exc).__name__}: {exc}"
            ) from None
        if report.broken_id is not None:
            e = AuditEvent.objects.filter(pk=report.broken_id).first()
            what = f" ({e.created:%Y-%m-%d %H:%M:%S} {e.actor} {e.action} {e.target})" if e else ""
            raise CommandError(
                f"audit chain broken at entry {report.broken_id}{what}: {report.problem}; "
                f"{report.checked} entries before it verified"
            )
        if report.problem:
            raise CommandError(
                f"audit chain fails a checkpoint: {report.problem}; "
                f"{report.checked} entries verified"
            )
        head = f"; head {report.head}" if report.head else ""
        points = f", {report.checkpoints} checkpoints found in it" if report.checkpoints else ""
        self.stdout.write(f"audit chain intact: {report.checked} entries verified{points}{head}")


def _in_pages(queryset: Any, size: int = 2000) -> Any:
    """The entries in pages of `size` by id (keyset), with plain queries: a server-side cursor
    (`.iterator()` on PostgreSQL) left open when the check stops at the first break would be
    closed later, outside its transaction, and abort the caller's transaction."""
    last = 0
    while True:
        page = list(queryset.filter(id__gt=last)[:size])
        if not page:
            return
        yield from page
        last = page[-1].id
