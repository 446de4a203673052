"""Accepting, verifying and rejecting vendor submissions: one code path for the API and the pages."""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import IO, Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Sum
from django.utils.timezone import now

from .catalog import Proxier, kubernetes_minor
from .evidence import summarize
from .models import AuditEvent, Plugin, Submission, Vendor
from .policy import plugin_facts

VERSION_RE = re.compile(r"^v?\d+\.\d+(\.\d+)?([-+.][0-9A-Za-z.-]+)?$")


@dataclass
class SubmissionError(Exception):
    status: int
    message: str
    extra: dict[str, Any] = field(default_factory=dict)


def _field(value: str | None, name: str, *, required: bool = True, max_len: int = 40) -> str:
    value = (value or "").strip()
    if required and not value:
        raise SubmissionError(400, f"missing field: {name}")
    if len(value) > max_len:
        raise SubmissionError(400, f"field {name} is too long (at most {max_len} characters)")
    return value


def check_quota(vendor: Vendor, size: int) -> None:
    """Refuse an upload past the vendor's quotas (nothing is stored): 429 while too many of its
    submissions wait for review (SUBMISSION_MAX_PENDING), 413 when the upload would take the
    bytes it sent in the last 24 hours past SUBMISSION_MAX_BYTES_PER_DAY. 0 turns a quota off."""
    max_pending = int(getattr(settings, "SUBMISSION_MAX_PENDING", 20))
    if max_pending:
        pending = Submission.objects.filter(vendor=vendor, status=Submission.Status.PENDING).count()
        if pending >= max_pending:
            raise SubmissionError(
                429,
                f"quota reached: {vendor.name} has {pending} submissions pending review, the "
                f"most a vendor may have (SUBMISSION_MAX_PENDING = {max_pending}); send more "
                "once a maintainer has verified or rejected some",
                {"quota": "pending", "limit": max_pending, "pending": pending},
            )
    per_day = int(getattr(settings, "SUBMISSION_MAX_BYTES_PER_DAY", 250 * 1024 * 1024))
    if per_day:
        sent = (
            Submission.objects.filter(vendor=vendor, created__gte=now() - timedelta(days=1))
            .aggregate(total=Sum("size"))
            .get("total")
            or 0
        )
        if sent + size > per_day:
            raise SubmissionError(
                413,
                f"quota reached: {vendor.name} sent {sent} bytes in the last 24 hours and this "
                f"file of {size} bytes would exceed the daily quota of {per_day} bytes "
                "(SUBMISSION_MAX_BYTES_PER_DAY); try again later",
                {"quota": "bytes_per_day", "limit": per_day, "sent": sent},
            )


def _seekable(fileobj: IO[bytes]) -> IO[bytes]:
    """The upload as a seekable stream (Django's uploads are: in memory or a temp file)."""
    seekable = getattr(fileobj, "seekable", None)
    if seekable is not None and seekable():
        fileobj.seek(0)
        return fileobj
    import tempfile

    spool = tempfile.SpooledTemporaryFile(max_size=1024 * 1024)
    while chunk := fileobj.read(1024 * 1024):
        spool.write(chunk)
    spool.seek(0)
    return spool


def hash_bounded(fileobj: IO[bytes], limit: int) -> tuple[str, int]:
    """(sha256, size) of the upload read 1 MB at a time; 413 past ``limit``, nothing kept."""
    digest, total = hashlib.sha256(), 0
    while chunk := fileobj.read(1024 * 1024):
        total += len(chunk)
        if total > limit:
            raise SubmissionError(413, f"file is larger than the limit of {limit} bytes")
        digest.update(chunk)
    fileobj.seek(0)
    return digest.hexdigest(), total


def create_submission(
    *,
    vendor: Vendor,
    allowed_plugin_ids: set[int],
    plugin: str | None,
    plugin_version: str | None,
    kubernetes_version: str | None,
    proxier: str | None,
    cluster: str | None,
    fileobj: IO[bytes] | None,
    filename: str,
    uploaded_by: str,
) -> Submission:
    from .ingest import IngestError, Limits, ingest

    slug = _field(plugin, "plugin", max_len=60)
    plugin_obj = Plugin.objects.filter(slug=slug).first()
    if plugin_obj is None:
        raise SubmissionError(400, f"unknown plugin: {slug!r}")
    if plugin_obj.id not in allowed_plugin_ids:
        raise SubmissionError(403, f"your token may not submit results for plugin {slug!r}")
    plugin_version = _field(plugin_version, "plugin_version")
    kubernetes_version = _field(kubernetes_version, "kubernetes_version")
    if not VERSION_RE.match(kubernetes_version):
        raise SubmissionError(
            400, f"kubernetes_version {kubernetes_version!r} is not a version like 1.31.2"
        )
    proxier = _field(proxier, "proxier")
    if proxier not in Proxier.values:
        raise SubmissionError(
            400, f"unknown proxier {proxier!r}: expected one of {', '.join(Proxier.values)}"
        )
    cluster = _field(cluster, "cluster", required=False, max_len=100)
    if fileobj is None:
        raise SubmissionError(
            400, "missing file: send the result file as the multipart field 'file'"
        )

    # The file is hashed and ingested as a stream (ingest holds no member whole); its bytes
    # are read into memory once, to be stored, only after ingest accepted it.
    limit = settings.SUBMISSION_MAX_BYTES
    stream = _seekable(fileobj)
    sha256, size = hash_bounded(stream, limit)
    if not size:
        raise SubmissionError(400, "the file is empty")
    check_quota(vendor, size)
    existing = (
        Submission.objects.filter(plugin=plugin_obj, sha256=sha256)
        .values_list("id", flat=True)
        .first()
    )
    if existing:
        raise SubmissionError(
            409,
            f"this file was already submitted for {slug} as submission {existing}",
            {"existing_id": existing, "id": existing},
        )
    from .metrics import observe_ingest

    received = now()
    started = time.monotonic()
    try:
        report = ingest(
            stream,
            declared_kubernetes_version=kubernetes_version,
            declared_proxier=proxier,
            declared_plugin=plugin_obj.slug,
            received_at=received,
            limits=Limits(
                max_bytes=limit,
                time_budget_seconds=float(getattr(settings, "SUBMISSION_INGEST_SECONDS", 20)),
            ),
        )
    except IngestError as exc:
        observe_ingest(time.monotonic() - started, size, accepted=False)
        raise SubmissionError(exc.status, exc.message) from exc
    observe_ingest(time.monotonic() - started, size, accepted=True)

    outcomes = {key: r.outcome for key, r in report.results.items()}
    flags = summarize(outcomes, plugin_obj.implements_network_policy)
    qualifying, why = report.qualifying(plugin_facts(plugin_obj))
    report_dict = report.to_dict()  # without the warnings: they are stored once, below
    report_dict["qualifying"] = {"qualifying": qualifying, "reason": why}
    # SQLite takes the bytes as one blob (about their size in memory, once); PostgreSQL gets
    # them in pieces from the stream (see _store_content_pieces).
    pieces = connection.vendor == "postgresql"
    data = b""
    if not pieces:
        stream.seek(0)
        data = stream.read(size)  # exactly: read(n) would first allocate n bytes
    sub = Submission(
        plugin=plugin_obj,
        vendor=vendor,
        uploaded_by=uploaded_by[:150],
        plugin_version=plugin_version,
        kubernetes_version=kubernetes_version,
        proxier=proxier,
        cluster_name=cluster,
        kind=report.kind,
        filename=(filename or "")[:255],
        sha256=sha256,
        size=size,
        content=data,
        results=report_dict.get("results", {}),
        counts=report.counts,
        warnings=list(report.warnings),
        report=report_dict,
        detected_kubernetes_version=(report.detected_kubernetes_version or "")[:40],
        run_at=report.run_at,
        run_at_source=report.run_at_source,
        emulated=report.emulated,
        created=received,
        # What the file says the server was, else what the vendor declared.
        kubernetes_minor=kubernetes_minor(report.detected_kubernetes_version or kubernetes_version),
    )
    sub.apply_flags(flags)
    try:
        with transaction.atomic():
            # Under the vendor's row lock, so that concurrent uploads cannot all pass the check.
            Vendor.objects.select_for_update().filter(pk=vendor.pk).first()
            check_quota(vendor, size)
            sub.save()
            if pieces:
                _store_content_pieces(sub.pk, stream)
            AuditEvent.record(
                uploaded_by,
                "submission.create",
                f"submission {sub.id}",
                plugin=slug,
                sha256=sha256,
                vendor=vendor.name,
            )
    except IntegrityError as exc:  # a concurrent upload of the same file won the race
        existing = (
            Submission.objects.filter(plugin=plugin_obj, sha256=sha256)
            .values_list("id", flat=True)
            .first()
        )
        raise SubmissionError(
            409,
            f"this file was already submitted for {slug} as submission {existing}",
            {"existing_id": existing, "id": existing},
        ) from exc
    return sub


_CONTENT_PIECE = 1024 * 1024


def _store_content_pieces(pk: int, stream: IO[bytes]) -> None:
    """Store the upload's bytes on PostgreSQL from its stream, 1 MB at a time.

    As one parameter, a 49 MB upload peaked at 350 MB of Python memory (Django binds
    client-side: a hex literal in the SQL text), and at 290 MB as one psycopg binary
    parameter. Here the pieces go as binary parameters into a temporary table and one
    ``string_agg`` joins them on the server: the file is never in memory here, and the
    server's work stays linear (appending in place rewrote the value each time: 30 s).
    Inside the submission's transaction, so a failure stores nothing.
    """
    connection.ensure_connection()
    table = Submission._meta.db_table
    stream.seek(0)
    with connection.connection.cursor() as cursor:  # psycopg's own cursor: binary parameters
        cursor.execute(
            "CREATE TEMPORARY TABLE IF NOT EXISTS upload_pieces "
            "(seq integer PRIMARY KEY, piece bytea NOT NULL) ON COMMIT DROP"
        )
        cursor.execute("DELETE FROM upload_pieces")
        seq = 0
        while piece := stream.read(_CONTENT_PIECE):
            cursor.execute("INSERT INTO upload_pieces (seq, piece) VALUES (%s, %b)", [seq, piece])
            seq += 1
        cursor.execute(
            f'UPDATE "{table}" SET "content" = (SELECT string_agg(piece, \'\' ORDER BY seq) '
            f'FROM upload_pieces) WHERE "id" = %s',
            [pk],
        )
        cursor.execute("DELETE FROM upload_pieces")


def review(sub: Submission, *, user: Any, verify: bool, reason: str, actor: str = "") -> Submission:
    """`actor` names who acted when `user` is None (a token's id); an audit entry always has one."""
    actor = user.get_username() if user is not None else actor
    if not actor:
        raise ValueError("a review names its actor")
    reason = (reason or "").strip()
    if not verify and not reason:
        raise SubmissionError(400, "a rejection needs a reason")
    sub.status = Submission.Status.VERIFIED if verify else Submission.Status.REJECTED
    sub.reviewed_by = user
    sub.reviewed_at = now()
    sub.review_reason = reason[:2000]
    with transaction.atomic():
        sub.save(update_fields=["status", "reviewed_by", "reviewed_at", "review_reason"])
        AuditEvent.record(
            actor,
            "submission.verify" if verify else "submission.reject",
            f"submission {sub.id}",
            reason=reason,
            plugin=sub.plugin.slug,
        )
    return sub
